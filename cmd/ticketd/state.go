package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// TICKETD_RECOVERY values.
const (
	recoveryAuto   = "auto"   // rebuild Redis from Postgres by itself after a loss
	recoveryManual = "manual" // stop sales and wait for `ticketctl rebuild`
)

// startState checks the Redis state once before ticketd serves. A state
// that is lost or stale (a new deployment, a Redis that lost its data, or
// one older than Postgres' record) is rebuilt from Postgres at once when
// recovery is automatic, and on a deployment's first start whatever the
// recovery; without Postgres there is nothing to rebuild from, and a Redis
// without a generation starts a new one as it is. In every other case
// ticketd starts with sales stopped and the monitor takes over. A rebuild
// here is counted in m like the monitor's.
func startState(ctx context.Context, cfg config, mon *redisstate.Monitor, rebuilder *rebuild.Rebuilder, m *metrics.Metrics,
	log *slog.Logger) error {
	v := mon.Check(ctx)
	if v.Status != redisstate.Lost && v.Status != redisstate.Stale {
		if v.Status != redisstate.Current {
			log.Warn("ticketd starts with sales stopped", "status", string(v.Status), "reason", v.Reason)
		}
		return nil
	}
	switch {
	case rebuilder == nil:
		if v.Status == redisstate.Lost {
			// Without Postgres nothing records a generation: the monitor
			// took this for a new Redis (View.New) and said so.
			log.Info("redis state: no Postgres to initialise Redis from: starting a new generation on Redis as it is")
			if err := redisstate.Publish(ctx, mon.Redis, mon.Space, redisstate.NewGeneration()); err != nil {
				return err
			}
		}
	case cfg.Recovery == recoveryManual && recorded(ctx, mon):
		log.Error("redis state is not current and TICKETD_RECOVERY=manual: sales stay stopped until `ticketctl rebuild` restores it",
			"status", string(v.Status), "reason", v.Reason)
		return nil
	default:
		if err := rebuilder.Recoverer(m.RebuildDone)(ctx, v.Gen); err != nil {
			return fmt.Errorf("rebuild Redis from Postgres: %w", err)
		}
	}
	mon.Check(ctx)
	return nil
}

// recorded reports whether Postgres records a generation: without one this
// is the deployment's first start (or its first since generations were
// kept), nothing is known to be lost, and even manual recovery builds the
// first generation from Postgres. An unreadable record counts as recorded:
// the operator decides.
func recorded(ctx context.Context, mon *redisstate.Monitor) bool {
	_, ok, err := mon.Record.Load(ctx)
	return ok || err != nil
}

// The purposes derive is called with, one per key. Named once so the
// secrets test derives the very keys ticketd uses.
const (
	purposeSessions       = "ticketd buyer sessions v1"
	purposeOrderIDs       = "ticketd order ids v1"
	purposePicker         = "ticketd seat picker v1"
	purposeHolds          = "ticketd holds per client v1"
	purposeRoom           = "ticketd waiting room v1"
	purposeCardWebhooks   = "ticketd card webhooks v1"
	purposeWalletWebhooks = "ticketd wallet webhooks v1"
)

// derive returns a key for one purpose from TICKETD_SECRETS_KEY, so every
// node of a deployment has the same without storing it anywhere (a Redis
// that loses its data must not lose it).
func derive(secretsKey, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secretsKey))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// urlHost is the host of a service's URL (env: the variable that gave
// it, REDIS_URL or DATABASE_URL), without its credentials, for messages.
func urlHost(raw, env string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(" + env + "'s address)"
	}
	return u.Host
}
