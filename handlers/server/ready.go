package server

import (
	"context"
	"math"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// Health is what /readyz reports. Every field is a fixed word or a count:
// none may carry an address, a host, a user or a database name (raw
// driver errors do, so they never go here).
type Health struct {
	// Sales is true while sales work: Redis reachable and its state
	// current. /readyz is 200 exactly when it is true.
	Sales bool
	// Reason says why sales are stopped (when !Sales), for the operator:
	// "Redis is not reachable", "Redis lost ticketd's state: rebuilding".
	Reason string
	// Redis is the state of ticketd's Redis data: "current",
	// "unreachable", "loading", "lost", "rebuilding", ...
	Redis string
	// Durability is what a Redis crash would lose: "nothing", "second",
	// "everything" or "unknown".
	Durability string
	// Postgres is "ok", "unreachable", or "off" (ticketd runs without
	// Postgres, a configuration: it does not make /readyz degraded).
	Postgres string
	// Backlog is the sync backlog when known.
	Backlog *Backlog
	// Payments is PaymentsLive, or PaymentsSimulated in development and
	// with the built-in test processors on; "" says nothing.
	Payments string
	// Replicas is what the Redis masters report of their replicas, when
	// read.
	Replicas *Replicas
	// Held lists the events whose sales are held after a loss ticketd
	// could not repair (inventory/salesholds), with the units lost. The
	// others sell: /readyz stays 200, its status "degraded".
	Held []HeldEvent
}

// Replicas is the Redis replicas a sale is waited for on.
type Replicas struct {
	// InSync is the fewest replicas in sync of any master.
	InSync int
	// Required is TICKETD_REDIS_WAIT_REPLICAS (0: no sale waits).
	Required int64
	// Lag is the longest time since a replica acknowledged its master.
	Lag time.Duration
	// WaitTimeouts counts the payments refused because fewer replicas
	// than Required acknowledged them in time.
	WaitTimeouts int64
}

// HeldEvent is an event whose sales are held and the paid units it lost.
type HeldEvent struct {
	EventID string `json:"eventId"`
	Lost    int64  `json:"lost"`
}

// Payment modes of Health.Payments.
const (
	PaymentsLive      = "live"
	PaymentsSimulated = "simulated"
)

// Backlog is the paid orders on the Redis streams not yet in Postgres.
type Backlog struct {
	Entries int64
	// Oldest is the age of the oldest waiting entry (0 when none waits).
	Oldest time.Duration
}

// HealthFunc reports health within ctx's deadline (ReadyTimeout).
type HealthFunc func(ctx context.Context) Health

// ReadyTimeout bounds one /readyz answer: a probe that hangs on a stalled
// dependency would be as bad as no probe.
const ReadyTimeout = time.Second

// Postgres states of Health.Postgres.
const (
	PostgresOK          = "ok"
	PostgresUnreachable = "unreachable"
	PostgresOff         = "off"
)

// Ready statuses in /readyz's data.status.
const (
	StatusOK          = "ok"
	StatusDegraded    = "degraded" // sales work, Postgres does not (the sync backlog grows), or some events' sales are held
	StatusUnavailable = "unavailable"
)

type readyData struct {
	Status      string       `json:"status"`
	Redis       string       `json:"redis,omitempty"`
	Durability  string       `json:"durability,omitempty"`
	Postgres    string       `json:"postgres,omitempty"`
	SyncBacklog *backlogData `json:"syncBacklog,omitempty"`
	Payments    string       `json:"payments,omitempty"`
	Replicas    *replicaData `json:"replicas,omitempty"`
	HeldEvents  []HeldEvent  `json:"heldEvents,omitempty"`
}

type replicaData struct {
	InSync       int     `json:"inSync"`
	Required     int64   `json:"required"`
	LagSeconds   float64 `json:"lagSeconds"`
	WaitTimeouts int64   `json:"waitTimeouts"`
}

type backlogData struct {
	Entries       int64   `json:"entries"`
	OldestSeconds float64 `json:"oldestSeconds"`
}

// readyz answers 200 {status: ok|degraded, ...} while sales work and 503
// NOT_READY with the reason and the same data when they do not.
func readyz(health HealthFunc) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if health == nil {
			httpx.OK(ctx, readyData{Status: StatusOK})
			return
		}
		c, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
		h := health(c)
		cancel()
		d := readyData{Status: StatusOK, Redis: h.Redis, Durability: h.Durability, Postgres: h.Postgres, Payments: h.Payments,
			HeldEvents: h.Held}
		if h.Backlog != nil {
			// Milliseconds are precision enough for a lag.
			d.SyncBacklog = &backlogData{Entries: h.Backlog.Entries, OldestSeconds: math.Round(h.Backlog.Oldest.Seconds()*1000) / 1000}
		}
		if r := h.Replicas; r != nil {
			d.Replicas = &replicaData{InSync: r.InSync, Required: r.Required, LagSeconds: r.Lag.Seconds(), WaitTimeouts: r.WaitTimeouts}
		}
		if !h.Sales {
			d.Status = StatusUnavailable
			msg := h.Reason
			if msg == "" {
				msg = "sales are stopped"
			}
			httpx.Fail(ctx, apierr.Of("NOT_READY", "%s", msg).WithData(d))
			return
		}
		if (h.Postgres != PostgresOK && h.Postgres != PostgresOff) || len(h.Held) > 0 {
			d.Status = StatusDegraded
		}
		httpx.OK(ctx, d)
	}
}
