// Command baseline is the bench's Postgres baseline: the partner
// reserve+confirm flow of ticketd implemented the way most ticket shops do
// it, on PostgreSQL with row locks. It speaks ticketd's partner API for the
// endpoints the bench drives, so one load generator measures both servers.
//
// It is meant to be a fair opponent, not a strawman: a pooled pgx
// connection pool with cached prepared statements, fasthttp and goccy/go-json
// as in ticketd, the static catalog in memory, one transaction per confirm
// that claims with conditional row-locking updates in a fixed lock order.
// Durability is left as the server has it (synchronous_commit untouched):
// turning it off would measure a setup no shop runs for its orders.
//
//	baseline -addr 127.0.0.1:18082 -database-url postgres://postgres@127.0.0.1:5432/baseline_bench -admin-token TOKEN
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	if err := run(); err != nil {
		slog.Error("baseline", "err", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() error {
	addr := flag.String("addr", env("BASELINE_ADDR", "127.0.0.1:8082"), "listen address (env BASELINE_ADDR)")
	dbURL := flag.String("database-url", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"), "PostgreSQL URL (env DATABASE_URL)")
	token := flag.String("admin-token", os.Getenv("BASELINE_ADMIN_TOKEN"), "bearer token of PUT /v1/admin/catalog; empty: admin off (env BASELINE_ADMIN_TOKEN)")
	poolSize := flag.Int("pool", 16, "Postgres connections; a handful per core keeps a small box busy while others wait on commit")
	orderTTL := flag.Duration("order-ttl", 30*time.Minute, "how long a pending order waits for confirm, as TICKETD_ORDER_TTL")
	flag.Parse()
	if *poolSize < 1 {
		return errors.New("-pool must be at least 1")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := openPool(ctx, *dbURL, *poolSize)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	a, err := newApp(ctx, pool, *token, *orderTTL, log)
	if err != nil {
		return err
	}
	if *token == "" {
		log.Warn("no admin token: PUT /v1/admin/catalog is off")
	}

	srv := newServer(a.handler())
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe(*addr) }()
	log.Info("baseline listening", "addr", *addr, "pool", *poolSize)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.ShutdownWithContext(sctx)
}

// openPool opens a pool of exactly size connections, opened up front so a
// bench run does not time connection setup. pgx's default exec mode caches a
// prepared statement per connection for every query.
func openPool(ctx context.Context, url string, size int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	cfg.MaxConns = int32(size)
	cfg.MinConns = int32(size)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}
