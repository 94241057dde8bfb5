// Package pgtest gives a test its own freshly migrated Postgres database on
// the real server (TEST_DATABASE_URL, else DATABASE_URL, else the local
// default) and drops it when the test ends. Tests never share a database, so
// they may run in parallel.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/sync/schema"
)

// DefaultURL is the server used when neither variable is set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL is the server the tests create their databases on.
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// New creates a database named ticketd_test_<random hex>, migrates it and
// returns a pool on it. The pool is closed and the database dropped (even
// with connections left open) when t ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, URL())
	if err != nil {
		t.Fatalf("pgtest: Postgres at %s is not reachable (run `make services`): %v", URL(), err)
	}
	defer admin.Close(ctx)

	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "ticketd_test_" + hex.EncodeToString(b)
	// The name is ours (hex), so quoting it with Sanitize is enough.
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() { drop(t, ident) })

	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", name, err)
	}
	t.Cleanup(pool.Close) // runs before drop: cleanups run last-in first-out
	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return pool
}

// NewURL is New for code that connects by itself (a whole ticketd in a
// test): it returns the URL of a fresh migrated database, dropped with t.
func NewURL(t testing.TB) string {
	t.Helper()
	return URLOf(t, New(t))
}

// URLOf returns the URL of the database a pool of New is connected to.
func URLOf(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	u, err := url.Parse(URL())
	if err != nil || u.Scheme == "" {
		t.Fatalf("pgtest: a URL-form server address is needed, got %q", URL())
	}
	u.Path = "/" + pool.Config().ConnConfig.Database
	return u.String()
}

func drop(t testing.TB, ident string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, URL())
	if err != nil {
		t.Errorf("pgtest: drop %s: %v", ident, err)
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop %s: %v", ident, err)
	}
}

// Count runs a query returning one integer (a count(*)) and fails the
// test if it errors: the tests that prove nothing was lost or doubled
// compare such counts against what the load confirmed.
func Count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
