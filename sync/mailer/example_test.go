package mailer_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/mailer"
)

// How ticketd runs the mailer beside the sync worker: configured from the
// environment, nil (and Run a no-op) when TICKETD_MAIL=off.
func Example() {
	ctx := context.Background()
	log := slog.Default()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Error("postgres", "err", err)
		return
	}
	appURL := os.Getenv("TICKETD_APP_URL")
	keys := tickets.NewKeys(os.Getenv("TICKETD_SECRETS_KEY"))
	cfg, err := mailer.ConfigFromEnv(os.Getenv, appURL)
	if err != nil {
		log.Error("mail settings", "err", err)
		return
	}
	m, err := mailer.New(cfg, pool, keys, appURL, log)
	if err != nil {
		log.Error("mailer", "err", err)
		return
	}
	go func() { _ = m.Run(ctx) }()
}
