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

	"github.com/ticketd/ticketd/cmd/internal/connurl"
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
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	at, code := parseStores(fs, args, 0, e)
	if code >= 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := runRebuild(ctx, at, slog.New(slog.NewTextHandler(e.stderr, nil)))
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
  held events       %d
`, rep.Took.Round(time.Millisecond), rep.Generation, rep.Events, rep.SoldCounters, rep.Admissions, rep.BookedSeats,
		rep.DiscountCodes, rep.PaidOrders, rep.StreamOnly, rep.Orders, rep.IdempotencyKeys, rep.CatalogVersion, len(rep.Held))
	for _, h := range rep.Held {
		fmt.Fprintf(e.stdout, "    %s  lost %d (%d found now): sales held until `ticketctl release %s` or `ticketctl reconcile %s`\n",
			h.EventID, h.Lost, h.Found, h.EventID, h.EventID)
	}
	return 0
}

// stores is where the commands that talk to Redis and Postgres directly
// connect: $REDIS_URL, $DATABASE_URL and $TICKETD_KEY_PREFIX.
type stores struct {
	redisURL, dbURL string
	space           keys.Space
}

// parseStores parses a store command's flags into fs, wants nargs
// arguments (usage: exit 2) and reads the stores from e. code is -1 when
// the command goes on, else the exit status.
func parseStores(fs *flag.FlagSet, args []string, nargs int, e env) (at stores, code int) {
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprint(e.stderr, usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return at, 0
		}
		return at, 2
	}
	switch {
	case nargs == 0 && fs.NArg() > 0:
		fmt.Fprintf(e.stderr, "ticketctl %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return at, 2
	case nargs > 0 && fs.NArg() != nargs:
		fmt.Fprintf(e.stderr, "ticketctl %s: name one event: ticketctl %s <event-id>\n", fs.Name(), fs.Name())
		return at, 2
	}
	at, ok := storesOf(e, fs.Name())
	if !ok {
		return at, 2
	}
	return at, -1
}

// storesOf reads the stores from e; false (usage, exit 2) for a bad prefix.
func storesOf(e env, cmd string) (stores, bool) {
	at := stores{redisURL: e.getenv("REDIS_URL"), dbURL: e.getenv("DATABASE_URL"), space: keys.Space{Prefix: e.getenv("TICKETD_KEY_PREFIX")}}
	if at.redisURL == "" {
		at.redisURL = defaultRedisURL
	}
	if at.dbURL == "" {
		at.dbURL = defaultDatabaseURL
	}
	if err := keys.CheckPrefix(at.space.Prefix); err != nil {
		fmt.Fprintf(e.stderr, "ticketctl %s: TICKETD_KEY_PREFIX=%q: %v\n", cmd, at.space.Prefix, err)
		return at, false
	}
	return at, true
}

// connect opens Redis and a migrated Postgres; close closes both.
func (at stores) connect(ctx context.Context) (rc rueidis.Client, pool *pgxpool.Pool, close func(), err error) {
	opt, err := rueidis.ParseURL(at.redisURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("REDIS_URL: %w", connurl.RedisError(err))
	}
	opt.DisableCache = true
	rc, err = rueidis.NewClient(opt)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connect to Redis: %w", err)
	}
	if pool, err = at.postgres(ctx); err != nil {
		rc.Close()
		return nil, nil, nil, err
	}
	if err := schema.Migrate(ctx, pool); err != nil {
		pool.Close()
		rc.Close()
		return nil, nil, nil, err
	}
	return rc, pool, func() { pool.Close(); rc.Close() }, nil
}

// postgres opens Postgres and checks that it answers.
func (at stores) postgres(ctx context.Context) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, at.dbURL)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", connurl.PostgresError(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	return pool, nil
}

func runRebuild(ctx context.Context, at stores, log *slog.Logger) (rebuild.Report, error) {
	rc, pool, closeAll, err := at.connect(ctx)
	if err != nil {
		return rebuild.Report{}, err
	}
	defer closeAll()
	rb := &rebuild.Rebuilder{Redis: rc, Space: at.space, Pool: pool, Catalog: &catalogstore.Store{Redis: rc, Space: at.space}, Logger: log}
	return rb.Run(ctx)
}
