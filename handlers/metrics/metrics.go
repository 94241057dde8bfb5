// Package metrics holds ticketd's Prometheus metrics in a registry of its
// own and serves them at GET /metrics in the text exposition format: HTTP
// requests by route and code with their latency, and the figures an operator
// watches in a flash sale (Redis round trip, state and durability, sync
// backlog, paid orders, rebuilds), set by the code that knows them.
package metrics

import (
	"bytes"
	"log/slog"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// Rebuild results pre-declared on ticketd_rebuilds_total, so that a rate
// over them exists before the first rebuild.
const (
	RebuildOK     = "ok"
	RebuildFailed = "failed"
)

// The label values pre-declared on ticketd_redis_state and
// ticketd_redis_durability: every state and level the state monitor
// reports. Another value passed to SetRedisState or SetDurability is added
// when first set.
var (
	redisStates = []string{string(redisstate.Starting), string(redisstate.Current), string(redisstate.Unreachable),
		string(redisstate.Loading), string(redisstate.Lost), string(redisstate.Stale), string(redisstate.Rebuilding),
		string(redisstate.Unreplicated)}
	durabilityLevels = []string{redisstate.LosesNothing, redisstate.LosesSecond, redisstate.LosesEverything, redisstate.LosesUnknown}
)

// Metrics is ticketd's metric set. A nil *Metrics is valid: every method
// does nothing, so code that reports may run without it (tests, tools).
type Metrics struct {
	reg *prometheus.Registry

	http   *httpMetrics
	logger *slog.Logger // SetLogger; nil: slog.Default()

	redisRTT      prometheus.Histogram
	backlog       prometheus.Gauge
	backlogOldest prometheus.Gauge
	paidOrders    prometheus.Counter
	rebuilds      *prometheus.CounterVec
	salesHeld     *prometheus.GaugeVec
	durability    *oneOf
	redisState    *oneOf
	salesStopped  *prometheus.GaugeVec
}

// Reasons of ticketd_sales_stopped, pre-declared at 0.
const (
	StoppedRedisState = "redis_state" // the Redis state is not current (ticketd_redis_state says which)
	StoppedUnsynced   = "unsynced"    // too many paid orders wait for Postgres (TICKETD_MAX_UNSYNCED)
)

// New builds the metric set in a registry of its own (never the global one,
// so that nothing a library registers leaks in and tests can build many),
// with the Go runtime and process collectors beside ticketd's metrics.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg:  reg,
		http: newHTTPMetrics(),
		redisRTT: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ticketd_redis_rtt_seconds",
			Help: "Round-trip time of the Redis state monitor's probe.",
			// From a loopback round trip (~100us) to a stalled server.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketd_sync_backlog_entries",
			Help: "Paid orders on the Redis streams not yet written to Postgres.",
		}),
		backlogOldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketd_sync_backlog_oldest_seconds",
			Help: "Age of the oldest paid order not yet written to Postgres (sync lag); 0 when none waits.",
		}),
		paidOrders: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketd_paid_orders_total",
			Help: "Orders this process saw become paid (a replayed confirm is not counted again).",
		}),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_rebuilds_total",
			Help: "Rebuilds of Redis state from Postgres, by result.",
		}, []string{"result"}),
		salesHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketd_sales_held_lost",
			Help: "Paid units lost with Redis' state and known nowhere, per event whose sales are held until ticketctl release or reconcile; absent when none is held.",
		}, []string{"event"}),
		durability: newOneOf(prometheus.GaugeOpts{
			Name: "ticketd_redis_durability",
			Help: "What a Redis crash would lose: 1 for the current level (nothing, second, everything, unknown), 0 for the others.",
		}, "level", durabilityLevels...),
		redisState: newOneOf(prometheus.GaugeOpts{
			Name: "ticketd_redis_state",
			Help: "State of ticketd's Redis data: 1 for the current state, 0 for the others.",
		}, "state", redisStates...),
		salesStopped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketd_sales_stopped",
			Help: "1 while this node's sales gate is closed for the reason (redis_state, unsynced), else 0.",
		}, []string{"reason"}),
	}
	m.rebuilds.WithLabelValues(RebuildOK)
	m.rebuilds.WithLabelValues(RebuildFailed)
	m.durability.set(redisstate.LosesUnknown)
	m.salesStopped.WithLabelValues(StoppedRedisState)
	m.salesStopped.WithLabelValues(StoppedUnsynced)
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.http.requests, m.http.duration, m.http.failures,
		m.redisRTT, m.backlog, m.backlogOldest, m.paidOrders, m.rebuilds, m.salesHeld,
		m.durability.vec, m.redisState.vec, m.salesStopped,
	)
	return m
}

// Registry is the registry the metrics live in, for tests and for adding
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRedisRTT records one round trip to Redis (the state monitor's probe).
func (m *Metrics) ObserveRedisRTT(d time.Duration) {
	if m != nil {
		m.redisRTT.Observe(d.Seconds())
	}
}

// PaidOrder counts one order newly paid by this process.
func (m *Metrics) PaidOrder() {
	if m != nil {
		m.paidOrders.Inc()
	}
}

// Rebuild counts one rebuild with its result (RebuildOK, RebuildFailed;
// keep the set small, each value is a series).
func (m *Metrics) Rebuild(result string) {
	if m != nil {
		m.rebuilds.WithLabelValues(result).Inc()
	}
}

// SetDurability records what a Redis crash would lose now: one of
// redisstate's Loses* levels.
func (m *Metrics) SetDurability(level string) {
	if m != nil {
		m.durability.set(level)
	}
}

// SetRedisState records the state of ticketd's Redis data ("current",
// "unreachable", "loading", "lost", "rebuilding", ...).
func (m *Metrics) SetRedisState(state string) {
	if m != nil {
		m.redisState.set(state)
	}
}

// StateChanged is redisstate.Monitor's OnChange: the state, durability
// and sales-stopped gauges follow the monitor's view.
func (m *Metrics) StateChanged(v redisstate.View) {
	m.SetRedisState(string(v.Status))
	m.SetDurability(v.Durability.Loses)
	m.SetSalesStopped(StoppedRedisState, v.Status != redisstate.Current)
}

// SetSalesStopped records whether sales are stopped for reason
// (StoppedRedisState, StoppedUnsynced).
func (m *Metrics) SetSalesStopped(reason string, stopped bool) {
	if m == nil {
		return
	}
	v := 0.0
	if stopped {
		v = 1
	}
	m.salesStopped.WithLabelValues(reason).Set(v)
}

// UnsyncedChanged is unsynced.Gate's OnChange.
func (m *Metrics) UnsyncedChanged(stopped bool) { m.SetSalesStopped(StoppedUnsynced, stopped) }

// RebuildDone is what rebuild.Rebuilder.Recoverer tells: a recovery that
// rebuilt, or failed, is counted; one another node had done already is not.
func (m *Metrics) RebuildDone(rebuilt bool, err error) {
	switch {
	case err != nil:
		m.Rebuild(RebuildFailed)
	case rebuilt:
		m.Rebuild(RebuildOK)
	}
}

// SetSalesHeld records the events whose sales are held and the units each
// lost (salesholds.Set's OnChange); an event no longer held leaves.
func (m *Metrics) SetSalesHeld(held map[string]int64) {
	if m == nil {
		return
	}
	m.salesHeld.Reset()
	for ev, n := range held {
		m.salesHeld.WithLabelValues(ev).Set(float64(n))
	}
}

// SetSyncBacklog records the paid orders waiting for Postgres and the age
// of the oldest (0 when none waits).
func (m *Metrics) SetSyncBacklog(entries int64, oldest time.Duration) {
	if m != nil {
		m.backlog.Set(float64(entries))
		m.backlogOldest.Set(oldest.Seconds())
	}
}

// WatchReplication exports the monitor's view of the Redis replicas and
// the sales refused for want of them, read at each scrape:
// ticketd_redis_replicas (the fewest in sync of any master; -1 before it
// is read), ticketd_redis_replica_lag_seconds and
// ticketd_redis_wait_timeouts_total.
func (m *Metrics) WatchReplication(mon *redisstate.Monitor, r *redisstate.Replication) {
	if m == nil {
		return
	}
	replicas := func(read func(redisstate.Replicas) float64) func() float64 {
		return func() float64 {
			if v := mon.View(); v.Replicas != nil {
				return read(*v.Replicas)
			}
			return -1
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ticketd_redis_replicas",
			Help: "Replicas in sync with their master (the fewest of any master); -1 until read.",
		}, replicas(func(r redisstate.Replicas) float64 { return float64(r.Online) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ticketd_redis_replica_lag_seconds",
			Help: "The longest time since an online replica acknowledged its master, as Redis counts it (whole seconds); -1 until read.",
		}, replicas(func(r redisstate.Replicas) float64 { return r.Lag.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ticketd_redis_wait_timeouts_total",
			Help: "Payments answered 503 because fewer replicas than TICKETD_REDIS_WAIT_REPLICAS acknowledged them in time.",
		}, func() float64 { return float64(r.Timeouts()) }),
	)
}

// CountRedisRoundTrips exports total, the round trips of ticketd's Redis
// client (roundtrips.Wrap), as ticketd_redis_round_trips_total, read at
// each scrape: the bench divides its increase over a run by the units of
// work to report round trips per unit.
func (m *Metrics) CountRedisRoundTrips(total *roundtrips.Counter) {
	if m == nil || total == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "ticketd_redis_round_trips_total",
		Help: "Redis round trips this process made: a command, or a pipeline of commands, sent and answered.",
	}, func() float64 { return float64(total.Load()) }))
}

// Register mounts GET /metrics (server.Surface), outside any
// authentication: it shows counts and timings, no secret and no
// connection detail.
func (m *Metrics) Register(r *router.Router) {
	r.GET("/metrics", m.serve)
}

var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

func (m *Metrics) serve(ctx *fasthttp.RequestCtx) {
	mfs, err := m.reg.Gather()
	if err != nil {
		// A collector failed; what was gathered is still worth serving.
		slog.Error("metrics: gather", "err", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, textFormat)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			slog.Error("metrics: encode", "err", err)
			break
		}
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(string(textFormat))
	ctx.SetBody(buf.Bytes())
}

// oneOf is a gauge vector of which exactly one label value is 1.
type oneOf struct {
	vec *prometheus.GaugeVec
	mu  sync.Mutex
	on  string
}

func newOneOf(opts prometheus.GaugeOpts, label string, values ...string) *oneOf {
	o := &oneOf{vec: prometheus.NewGaugeVec(opts, []string{label})}
	for _, v := range values {
		o.vec.WithLabelValues(v).Set(0)
	}
	return o
}

func (o *oneOf) set(v string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.on != "" && o.on != v {
		o.vec.WithLabelValues(o.on).Set(0)
	}
	o.vec.WithLabelValues(v).Set(1)
	o.on = v
}
