package metrics

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
)

// Unmatched is the route label of requests no route matched (404, 405), so
// that a scan of random paths adds no series.
const Unmatched = "unmatched"

// Instrument counts every request next serves by route, method and status
// code and times it by route and method. The route is the router's matched
// template ("/v1/channel/events/{id}/checkout"), which needs the router's
// SaveMatchedRoutePath (server.Handler sets it); label values are never
// built from what a client sends, so the series stay bounded.
//
// A request the handler failed (httpx.Failure) is also counted in
// ticketd_http_failures_total and logged (SetLogger), with its route.
//
// The hot path takes the series from a copy-on-write map: no lock, no
// label strings built, no allocation once a route and code have been seen.
func (m *Metrics) Instrument(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	if m == nil {
		return next
	}
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		next(ctx)
		route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
		if route == "" {
			route = Unmatched
		}
		method := methodLabel(ctx.Method())
		s := m.http.series(route, method, ctx.Response.StatusCode(), m.logger)
		s.requests.Inc()
		s.duration.Observe(time.Since(start).Seconds())
		if err := httpx.Failure(ctx); err != nil {
			s.failed(method, err)
		}
	}
}

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	failures *prometheus.CounterVec // failures.go

	// known maps a route, method and code to its series; it is replaced
	// whole (under mu) when a new combination appears, which stops
	// happening once every route has answered with its codes.
	known atomic.Pointer[map[seriesKey]*series]
	mu    sync.Mutex
}

type seriesKey struct {
	route, method string
	code          int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
	// failures counts the requests of the route and code a handler
	// failed, made at the first one (no series for a route and code that
	// never failed); log is where they are logged (failures.go).
	failures func() prometheus.Counter
	log      *slog.Logger
}

func newHTTPMetrics() *httpMetrics {
	h := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_http_requests_total",
			Help: "HTTP requests answered by a handler, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ticketd_http_request_duration_seconds",
			Help: "Time from the handler's start to its answer, by route template and method.",
			// A reserve or confirm takes about a millisecond on an idle
			// node and tens of milliseconds in a flash sale's queues.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		failures: newFailures(),
	}
	empty := map[seriesKey]*series{}
	h.known.Store(&empty)
	return h
}

// series is the series of route, method and code; log is where its
// failed requests are logged (nil: slog.Default()).
func (h *httpMetrics) series(route, method string, code int, log *slog.Logger) *series {
	k := seriesKey{route, method, code}
	if s := (*h.known.Load())[k]; s != nil {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.known.Load()
	if s := old[k]; s != nil {
		return s
	}
	s := &series{
		requests: h.requests.WithLabelValues(route, method, strconv.Itoa(code)),
		duration: h.duration.WithLabelValues(route, method),
		failures: sync.OnceValue(func() prometheus.Counter { return h.failures.WithLabelValues(route, strconv.Itoa(code)) }),
		log:      failureLog(log, route, code),
	}
	next := make(map[seriesKey]*series, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = s
	h.known.Store(&next)
	return s
}

// methods are the request methods with a label of their own.
var methods = [...]string{fasthttp.MethodGet, fasthttp.MethodHead, fasthttp.MethodPost, fasthttp.MethodPut,
	fasthttp.MethodPatch, fasthttp.MethodDelete, fasthttp.MethodOptions}

// methodLabel maps a request method to a constant label, so that an
// invented method is one series ("OTHER") and no string is allocated.
func methodLabel(m []byte) string {
	for _, known := range methods {
		if string(m) == known {
			return known
		}
	}
	return "OTHER"
}
