// Package readiness builds what /readyz reports from the Redis state
// monitor, a Postgres ping and the sync backlog, which it reads on a timer
// (also for the metrics and the TICKETD_MAX_UNSYNCED gate).
package readiness

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/salesholds"
	"github.com/ticketd/ticketd/sync/unsynced"
	"github.com/ticketd/ticketd/sync/worker"
)

// Health is /readyz's source: sales run while the monitor says the
// Redis state is current and the backlog's Limit lets them; Postgres is
// pinged (degraded when away, with the sync backlog that waits for it).
// The monitor's reason comes first. Nothing in it names a host.
func Health(mon *redisstate.Monitor, pool *pgxpool.Pool, backlog *Backlog) server.HealthFunc {
	pg := &pinger{pool: pool}
	return func(ctx context.Context) server.Health {
		v := mon.View()
		h := server.Health{Sales: v.Status == redisstate.Current, Reason: v.Reason, Redis: string(v.Status),
			Durability: v.Durability.Loses}
		if e := backlog.Limit.Refusal(); h.Sales && e != nil {
			h.Sales, h.Reason = false, e.Message
		}
		h.Postgres = pg.state(ctx)
		if r := v.Replicas; r != nil {
			h.Replicas = &server.Replicas{InSync: r.Online, Lag: r.Lag}
			if repl := mon.Replication; repl != nil {
				h.Replicas.Required, h.Replicas.WaitTimeouts = repl.Replicas, repl.Timeouts()
			}
		}
		if b, ok := backlog.Last(); ok {
			h.Backlog = &server.Backlog{Entries: b.Entries, Oldest: b.Age(time.Now())}
		}
		return h
	}
}

// WithPayments reports payments (server.PaymentsLive or
// server.PaymentsSimulated) in every answer of h.
func WithPayments(h server.HealthFunc, payments string) server.HealthFunc {
	return func(ctx context.Context) server.Health {
		v := h(ctx)
		v.Payments = payments
		return v
	}
}

// WithHeld reports the events held lists (salesholds.Set.List) in every
// answer of h.
func WithHeld(h server.HealthFunc, held func() []salesholds.Event) server.HealthFunc {
	return func(ctx context.Context) server.Health {
		v := h(ctx)
		for _, e := range held() {
			v.Held = append(v.Held, server.HeldEvent{EventID: e.EventID, Lost: e.Lost})
		}
		return v
	}
}

// pingEvery is how long a Postgres ping's answer serves /readyz: the
// endpoint is unauthenticated, and a flood of it must not take the pool's
// connections from the sync worker.
const pingEvery = time.Second

// pinger pings Postgres at most once per pingEvery; concurrent callers
// share the answer.
type pinger struct {
	pool *pgxpool.Pool

	mu   sync.Mutex
	at   time.Time
	last string
}

func (p *pinger) state(ctx context.Context) string {
	if p.pool == nil {
		return server.PostgresOff
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == "" || time.Since(p.at) >= pingEvery {
		p.last = server.PostgresOK
		if p.pool.Ping(ctx) != nil {
			p.last = server.PostgresUnreachable
		}
		p.at = time.Now()
	}
	return p.last
}

// Backlog reads the sync backlog (paid orders on the streams, not yet
// in Postgres) on a timer for /readyz, the metrics and the sales gate, so
// none of them costs a Redis round trip per call.
type Backlog struct {
	Redis   rueidis.Client
	Space   keys.Space
	Metrics *metrics.Metrics
	// Limit, when set, is given every read: it stops sales while the
	// backlog is over TICKETD_MAX_UNSYNCED.
	Limit *unsynced.Gate

	last atomic.Pointer[worker.BacklogStats]
}

// Run reads the backlog every interval until ctx ends.
func (b *Backlog) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := worker.Backlog(rctx, b.Redis, b.Space)
		cancel()
		if err == nil {
			now := time.Now()
			b.last.Store(&st)
			b.Metrics.SetSyncBacklog(st.Entries, st.Age(now))
			// After the store: a /readyz that says sales stopped shows
			// the read that stopped them, or a later one.
			b.Limit.Observe(st, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Last returns the last backlog read; ok is false before the first.
func (b *Backlog) Last() (worker.BacklogStats, bool) {
	if p := b.last.Load(); p != nil {
		return *p, true
	}
	return worker.BacklogStats{}, false
}
