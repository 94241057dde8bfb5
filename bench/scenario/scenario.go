// Package scenario holds the bench scenarios. Each scenario is one small
// file: the catalog it provisions through the admin API, what one arrival
// does, and the integrity checks of its run. This file holds what they
// share: the environment they run in and what a run produces; run.go the
// runner that provisions, loads and checks.
package scenario

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

// Env is what a scenario runs against.
type Env struct {
	// API reaches the target's admin and partner surfaces (base URL, admin token).
	API *api.Client
	// Addr is the target's host:port for the load generator.
	Addr string
	// Run is an id fragment unique to this run: every run provisions its
	// own tenant, events and channels.
	Run string
	// Allow is the IP allowlist of the bench channels.
	Allow []string
	// Record reads the durable record; nil when it cannot be read, and
	// RecordWhy says why (the check is then "not checked").
	Record    Record
	RecordWhy string
	// Canned marks a target that answers canned responses (the HTTP
	// ceiling): nothing is sold, so nothing is checked.
	Canned bool
	// Redis is the target's Redis, for memory figures; nil when unknown.
	Redis rueidis.Client
	// KeyPrefix is the target's TICKETD_KEY_PREFIX; PrefixKnown is false
	// when the bench must find it from the keys.
	KeyPrefix   string
	PrefixKnown bool
	// DrainTimeout bounds the wait for the record to catch up.
	DrainTimeout time.Duration
	// CPU, when set, measures the processes under load over the timed run.
	CPU *cpuuse.Meter
	// Extra, when set, is told too when each timed part begins and ends,
	// outside the CPU meter's window (what it does there costs ticketd
	// CPU): the Redis counters, a CPU profile.
	Extra load.Window
	// CardWebhookSecret is the target's TICKETD_CARD_WEBHOOK_SECRET: the
	// storefront scenarios play the card processor and sign its webhook
	// with it. Empty when unknown; those scenarios then do not run.
	CardWebhookSecret string
}

// window is what a run's load tells of its timed part: the CPU meter,
// inside Extra.
func (e *Env) window() load.Window {
	if e.Extra == nil {
		return e.CPU // a nil meter measures nothing
	}
	return around{outer: e.Extra, inner: e.CPU}
}

// around begins outer before inner and ends it after.
type around struct{ outer, inner load.Window }

func (a around) Begin() { a.outer.Begin(); a.inner.Begin() }
func (a around) End()   { a.inner.End(); a.outer.End() }

// Record is the durable record of a target: ticketd's Postgres, or the
// baseline server's own statistics.
type Record interface {
	Record(ctx context.Context, eventID string) (integrity.Record, error)
	// SeatLabels returns one seat label per seat ticket of the event.
	SeatLabels(ctx context.Context, eventID string) ([]string, error)
}

// Options tune a run; zero fields take the scenario's defaults.
type Options struct {
	Duration time.Duration
	// Rate > 0 runs an open loop at that many arrivals per second.
	Rate float64
	// Workers is the closed loop's concurrency and the open loop's most
	// arrivals in flight.
	Workers  int
	Arrivals int64
	Capacity int64
	Progress *load.Progress
	// Label names the run in progress lines when it is not the
	// scenario's own (the comparisons run flash as ceiling-http and
	// baseline).
	Label string
}

// label is the run's name in the report: o.Label, else name.
func (o Options) label(name string) string {
	if o.Label != "" {
		return o.Label
	}
	return name
}

func (o Options) or(def Options) Options {
	if o.Duration <= 0 {
		o.Duration = def.Duration
	}
	if o.Rate <= 0 {
		o.Rate = def.Rate
	}
	if o.Workers <= 0 {
		o.Workers = def.Workers
	}
	if o.Arrivals <= 0 {
		o.Arrivals = def.Arrivals
	}
	if o.Capacity <= 0 {
		o.Capacity = def.Capacity
	}
	return o
}

// Figure is a named figure a scenario reports beside throughput and latency.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Outcome is what one scenario run produced.
type Outcome struct {
	Result *load.Result
	// LatencyOp is the op of the headline p50/p99/p99.9.
	LatencyOp string
	Checks    integrity.Checks
	Figures   []Figure
	// Memory figures (memory scenario): bytes of Redis per held seat and
	// per pending order; nil when not measured.
	BytesPerHold         *float64
	BytesPerPendingOrder *float64
	// CPU is what each process spent over the timed run; nil when not measured.
	CPU   []cpuuse.Share
	Notes []string
}

// Figure returns the named figure and whether it was reported.
func (o *Outcome) Figure(name string) (float64, bool) {
	for _, f := range o.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// Scenario is one bench scenario.
type Scenario interface {
	Name() string
	Run(ctx context.Context, env *Env, o Options) (*Outcome, error)
}

// All are the scenarios, in the order of the standard suite.
var All = []Scenario{Flash, FlashDurable, FlashReplicated, FlashOpen, Sellout, Catalog, SeatRush, StorefrontFlash, StorefrontSeats, Mixed, Memory, QueueSellout}
