package metrics

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// The requests a handler failed (httpx.Failure: Redis or Postgres trouble
// answered 503, a defect 500) are counted in ticketd_http_failures_total
// and logged as "request failed". ticketd_http_requests_total counts them
// too, with every other answer of their code: a 503 there may also be the
// sales gate refusing on purpose, which is not a failure and not logged.
// This counter is the one the "request failed" lines add up to. Each
// route and code's counter and logger sit in its series (http.go), made
// once.
func newFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_http_failures_total",
		Help: "Requests a handler failed (Redis or Postgres trouble answered 503, a defect 500), by route template and status code; each is logged as \"request failed\", repeats collapsed into one line a second with their count.",
	}, []string{"route", "code"})
}

// failureLog is the logger of a route and status's failed requests: base
// With both, so handlers/logrepeat tells their "request failed" lines
// apart and collapses each one's repeats into a line a second with their
// count. The status is part of it so that a defect's 500, its panic text
// the only record of it, is never counted away among a Redis outage's
// 503s on its route.
func failureLog(base *slog.Logger, route string, code int) *slog.Logger {
	if base == nil {
		base = slog.Default()
	}
	return base.With("route", route, "status", code)
}

// SetLogger sets where failed requests are logged; without it, and on a
// nil Metrics, they go to slog.Default(). Call it before serving.
func (m *Metrics) SetLogger(l *slog.Logger) {
	if m != nil {
		m.logger = l
	}
}

// failed counts and logs one failed request of s's route and code.
func (s *series) failed(method string, err error) {
	s.failures().Inc()
	s.log.LogAttrs(context.Background(), slog.LevelError, "request failed",
		slog.String("method", method), slog.String("err", err.Error()))
}
