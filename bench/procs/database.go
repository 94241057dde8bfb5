package procs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// CreateDatabase creates a fresh database named <prefix><random hex> on
// the server of serverURL and returns its URL and the function that drops
// it (closing whatever connections are left).
func CreateDatabase(ctx context.Context, serverURL, prefix string) (string, func(context.Context) error, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, fmt.Errorf("procs: %q is not a postgres:// URL", serverURL)
	}
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("procs: Postgres at %s: %w", u.Redacted(), err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", nil, fmt.Errorf("procs: create database %s: %w", name, err)
	}
	drop := func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
		return err
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}
