package metrics

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// failureMetrics counts and logs the requests a handler failed
// (httpx.Failure: Redis or Postgres trouble answered 503, a defect 500).
// ticketd_http_requests_total counts them too, with every other answer of
// their code: a 503 there may also be the sales gate refusing on purpose,
// which is not a failure and not logged. This counter is the one the
// "request failed" lines add up to.
type failureMetrics struct {
	total *prometheus.CounterVec

	// known maps a route and code to its counter and logger, replaced
	// whole (under mu) when a new pair appears, as httpMetrics.known.
	known atomic.Pointer[map[failureKey]*failureSeries]
	mu    sync.Mutex
}

type failureKey struct {
	route string
	code  int
}

type failureSeries struct {
	count prometheus.Counter
	// log is the logger With the route and status: handlers/logrepeat
	// tells their "request failed" lines apart and collapses each one's
	// repeats into a line a second with their count. The status is part
	// of it so that a defect's 500, its panic text the only record of it,
	// is never counted away among a Redis outage's 503s on its route.
	log *slog.Logger
}

func newFailureMetrics() *failureMetrics {
	f := &failureMetrics{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_http_failures_total",
		Help: "Requests a handler failed (Redis or Postgres trouble answered 503, a defect 500), by route template and status code; each is logged as \"request failed\", repeats collapsed into one line a second with their count.",
	}, []string{"route", "code"})}
	empty := map[failureKey]*failureSeries{}
	f.known.Store(&empty)
	return f
}

// SetLogger sets where failed requests are logged; without it, and on a
// nil Metrics, they go to slog.Default(). Call it before serving.
func (m *Metrics) SetLogger(l *slog.Logger) {
	if m != nil {
		m.logger = l
	}
}

// failed counts and logs one failed request.
func (m *Metrics) failed(route, method string, code int, err error) {
	s := m.failures.series(route, code, m.logger)
	s.count.Inc()
	s.log.LogAttrs(context.Background(), slog.LevelError, "request failed",
		slog.String("method", method), slog.String("err", err.Error()))
}

func (f *failureMetrics) series(route string, code int, base *slog.Logger) *failureSeries {
	k := failureKey{route, code}
	if s := (*f.known.Load())[k]; s != nil {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	old := *f.known.Load()
	if s := old[k]; s != nil {
		return s
	}
	if base == nil {
		base = slog.Default()
	}
	s := &failureSeries{count: f.total.WithLabelValues(route, strconv.Itoa(code)), log: base.With("route", route, "status", code)}
	next := make(map[failureKey]*failureSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = s
	f.known.Store(&next)
	return s
}
