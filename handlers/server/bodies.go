package server

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// DefaultBodyMemory is the body budget when TICKETD_BODY_MEMORY_MB is
// unset: 512 bodies of the 64 KB client limit at once, a small part of the
// process's memory, far more than the few hundred bytes of JSON that
// storefront and partner calls send.
const DefaultBodyMemory = 32 << 20

// SmallBody is the largest body that takes nothing from the budget: every
// storefront and partner call sends far less. Each connection holds at
// most one request's body, so these are bounded by the connection caps;
// what a slow sender can make ticketd hold beyond them is the budget. An
// address that fills the budget with slow large bodies thus never stops
// the small requests of a sale.
const SmallBody = 8 << 10

// holdGrace is how long past its body deadline a hold may stay before a
// sweep takes it back: the handler's time with the body. A hold outlives
// its request only where fasthttp neither runs the handler nor calls the
// error handler (the client vanished while "100 Continue" was written):
// the ctx's next request ends it, or a sweep gives it back.
const holdGrace = 10 * time.Second

// Bodies bounds the memory held at once for request bodies of callers not
// yet authenticated. fasthttp allocates a body's whole Content-Length when
// it starts reading it (appendBodyFixedSize), so 5,000 connections
// trickling 64 KB bodies made ticketd hold 330 MB. The server's
// HeaderReceived takes each body's size from the budget before the body
// is read (a chunked body: the client limit); over budget, fasthttp
// refuses the body unread and the client gets 503 SERVICE_UNAVAILABLE
// with Retry-After and Connection: close. The size is given back when the
// handler returns, whatever the request's header says by then (fasthttp
// rewrites an empty chunked body's to Content-Length: 0), or fasthttp's
// error handler answers (the body read failed: timeout, reset,
// malformed), so a dying connection returns its hold too. The next
// request's headers on the same ctx end any hold still left. The
// operator's authenticated catalog is not counted.
type Bodies struct {
	limit int64
	log   *slog.Logger

	mu        sync.Mutex
	used      int64
	holds     map[*fasthttp.RequestHeader]hold
	nextSweep time.Time
	// held is len(holds), read without mu: while no body is held (a
	// sale's small calls), a request's checks take no lock.
	held atomic.Int64

	refused  prometheus.Counter
	reserved prometheus.GaugeFunc
	budget   prometheus.Gauge
}

// hold is one request's share of the budget, keyed by its header: fasthttp
// passes HeaderReceived &ctx.Request.Header, the same pointer the handler
// and the error handler see for that request, and one connection's
// requests follow each other on one ctx.
type hold struct {
	n       int64
	refused bool      // over budget: the body is not read, the answer is 503
	expires time.Time // when a sweep may take it back
}

// NewBodies returns a budget of limit bytes. log receives a line per
// refusal (nil: slog.Default()); ticketd's collapses their repeats
// (handlers/logrepeat).
func NewBodies(limit int64, log *slog.Logger) *Bodies {
	b := &Bodies{limit: limit, log: log, holds: map[*fasthttp.RequestHeader]hold{}}
	b.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_request_bodies_refused_total",
		Help: "Requests answered 503 unread because the bodies being received already took the body budget (TICKETD_BODY_MEMORY_MB).",
	})
	b.reserved = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ticketd_request_body_bytes_reserved",
		Help: "Bytes of the body budget held by request bodies being received or handled.",
	}, func() float64 { return float64(b.Reserved()) })
	b.budget = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ticketd_request_body_budget_bytes",
		Help: "The body budget (TICKETD_BODY_MEMORY_MB), in bytes.",
	})
	b.budget.Set(float64(limit))
	return b
}

// Collectors are the budget's metrics, to register with the /metrics
// registry.
func (b *Bodies) Collectors() []prometheus.Collector {
	return []prometheus.Collector{b.refused, b.reserved, b.budget}
}

// Reserved is the number of bytes held now.
func (b *Bodies) Reserved() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take reserves n bytes for the body of h's request until ttl has passed,
// and reports whether they fitted; h holds nothing yet (config gives its
// last hold back first). A refusal is recorded too, for the
// answer: give reports it.
func (b *Bodies) take(h *fasthttp.RequestHeader, n int64, ttl time.Duration) bool {
	now := time.Now()
	b.mu.Lock()
	if b.used+n > b.limit && now.After(b.nextSweep) {
		b.sweep(now)
	}
	ok := b.used+n <= b.limit
	if ok {
		b.used += n
		b.holds[h] = hold{n: n, expires: now.Add(ttl)}
	} else {
		b.holds[h] = hold{refused: true, expires: now.Add(ttl)}
	}
	b.held.Store(int64(len(b.holds)))
	used := b.used
	b.mu.Unlock()
	if !ok {
		b.refusedOne(n, used)
	}
	return ok
}

// give ends h's hold, if it has one, and reports whether its request was
// refused.
func (b *Bodies) give(h *fasthttp.RequestHeader) (refused bool) {
	if b.held.Load() == 0 {
		return false
	}
	b.mu.Lock()
	hd, ok := b.holds[h]
	if ok {
		b.used -= hd.n
		delete(b.holds, h)
		b.held.Store(int64(len(b.holds)))
	}
	b.mu.Unlock()
	return hd.refused
}

// state reports whether h's request has a hold, and whether it was
// refused (the hold stays).
func (b *Bodies) state(h *fasthttp.RequestHeader) (held, refused bool) {
	if b.held.Load() == 0 {
		return false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	hd, ok := b.holds[h]
	return ok, hd.refused
}

// sweep takes back expired holds; at most once a second, and only when
// the budget looks spent. Called with mu held.
func (b *Bodies) sweep(now time.Time) {
	b.nextSweep = now.Add(time.Second)
	for h, hd := range b.holds {
		if now.After(hd.expires) {
			b.used -= hd.n
			delete(b.holds, h)
		}
	}
	b.held.Store(int64(len(b.holds)))
}

func (b *Bodies) refusedOne(n, used int64) {
	b.refused.Inc()
	log := b.log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("request body refused unread: the bodies being received take the body budget (TICKETD_BODY_MEMORY_MB)",
		"budget", b.limit, "reserved", used, "body", n)
}
