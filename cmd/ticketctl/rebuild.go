package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/sync/rebuild"
	"github.com/ticketd/ticketd/sync/schema"
)

// Defaults of the stores, as ticketd's.
const (
	defaultRedisURL    = "redis://127.0.0.1:6379"
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/ticketd?sslmode=disable"
)

// rebuildCmd restores the Redis state ticketd sells from out of Postgres,
// talking to both directly: ticketd need not run, and may (its nodes stop
// selling while the rebuild runs and resume after).
func rebuildCmd(args []string, e env) int {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprint(e.stderr, usage) }
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "ticketctl rebuild: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	redisURL, dbURL := e.getenv("REDIS_URL"), e.getenv("DATABASE_URL")
	if redisURL == "" {
		redisURL = defaultRedisURL
	}
	if dbURL == "" {
		dbURL = defaultDatabaseURL
	}
	prefix := e.getenv("TICKETD_KEY_PREFIX")
	if err := keys.CheckPrefix(prefix); err != nil {
		fmt.Fprintf(e.stderr, "ticketctl rebuild: TICKETD_KEY_PREFIX=%q: %v\n", prefix, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := runRebuild(ctx, redisURL, dbURL, keys.Space{Prefix: prefix},
		slog.New(slog.NewTextHandler(e.stderr, nil)))
	if err != nil {
		fmt.Fprintln(e.stderr, "ticketctl rebuild:", err)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return 0
	}
	fmt.Fprintf(e.stdout, `rebuilt the Redis state from Postgres in %s (generation %s); sales resume
  events            %d
  sold counters     %d (admissions %d)
  booked seats      %d
  discount codes    %d with uses
  paid orders       %d (%d found only on the paid streams)
  orders restored   %d (Redis copies of orders paid in the last 24 h)
  idempotency keys  %d
  catalog version   %d
`, rep.Took.Round(time.Millisecond), rep.Generation, rep.Events, rep.SoldCounters, rep.Admissions, rep.BookedSeats,
		rep.DiscountCodes, rep.PaidOrders, rep.StreamOnly, rep.Orders, rep.IdempotencyKeys, rep.CatalogVersion)
	return 0
}

func runRebuild(ctx context.Context, redisURL, dbURL string, space keys.Space, log *slog.Logger) (rebuild.Report, error) {
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return rebuild.Report{}, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.DisableCache = true
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return rebuild.Report{}, fmt.Errorf("connect to Redis: %w", err)
	}
	defer rc.Close()
	pool, err := pgxpool.New(ctx, dbURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return rebuild.Report{}, fmt.Errorf("connect to Postgres: %w", err)
	}
	defer pool.Close()
	if err := schema.Migrate(ctx, pool); err != nil {
		return rebuild.Report{}, err
	}
	rb := &rebuild.Rebuilder{Redis: rc, Space: space, Pool: pool, Catalog: &catalogstore.Store{Redis: rc, Space: space}, Logger: log}
	return rb.Run(ctx)
}
