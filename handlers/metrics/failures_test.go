package metrics

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/logrepeat"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// A request a handler failed (a store error answered 503, a panic 500) is
// counted by route template and code and logged with its route and error,
// never with the path the client sent; an error the handler meant to
// send (the gate's 503, a 404) is neither.
func TestFailedRequestsAreCountedAndLoggedByRoute(t *testing.T) {
	m := New()
	var logs bytes.Buffer
	m.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	r := router.New()
	r.SaveMatchedRoutePath = true
	r.PanicHandler = httpx.PanicHandler
	r.POST("/v1/channel/events/{id}/checkout", func(ctx *fasthttp.RequestCtx) {
		switch ctx.UserValue("id") {
		case "ev_down":
			httpx.Error(ctx, errors.New("redis: connection refused"))
		case "ev_gate":
			httpx.Error(ctx, apierr.Unavailable("sales are stopped"))
		case "ev_bug":
			panic("nil map")
		default:
			httpx.OK(ctx, nil)
		}
	})
	m.Register(r)
	h := m.Instrument(r.Handler)
	for _, ev := range []string{"ev_down", "ev_down", "ev_down", "ev_gate", "ev_bug", "ev_ok"} {
		do(h, "POST", "/v1/channel/events/"+ev+"/checkout")
	}
	mfs := scrape(t, h)
	route := "/v1/channel/events/{id}/checkout"
	for code, want := range map[string]float64{"503": 3, "500": 1} {
		s := find(mfs, "ticketd_http_failures_total", map[string]string{"route": route, "code": code})
		if s == nil || s.GetCounter().GetValue() != want {
			t.Errorf("ticketd_http_failures_total{code=%s} = %v, want %v", code, s, want)
		}
	}
	if n := len(mfs["ticketd_http_failures_total"].GetMetric()); n != 2 {
		t.Errorf("%d failure series, want 2 (no series for answers that are not failures)", n)
	}
	// Every 503 is in the requests counter, the gate's too.
	if s := find(mfs, "ticketd_http_requests_total", map[string]string{"route": route, "code": "503"}); s == nil || s.GetCounter().GetValue() != 4 {
		t.Errorf("ticketd_http_requests_total{code=503} = %v, want 4", s)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want one per failure (4):\n%s", len(lines), logs.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, `msg="request failed"`) || !strings.Contains(l, "route="+route) || strings.Contains(l, "ev_") {
			t.Errorf("log line %q: want request failed with the route template, not the path", l)
		}
	}
	if !strings.Contains(lines[0], `err="redis: connection refused"`) || !strings.Contains(lines[0], "status=503") ||
		!strings.Contains(lines[3], "handler panic: nil map") || !strings.Contains(lines[3], "status=500") {
		t.Errorf("log lines lack the error or status:\n%s", logs.String())
	}
}

// A defect (500, its panic text the only record of it) is logged in full
// while the same route's 503s of a Redis outage collapse into counts:
// ticketd's logger tells failures apart by route and status.
func TestADefectIsNotCollapsedIntoTheRoutesOutage(t *testing.T) {
	m := New()
	var logs bytes.Buffer
	// An hour's window: every 503 after the first is a repeat, held back.
	m.SetLogger(slog.New(logrepeat.New(slog.NewTextHandler(&logs, nil), logrepeat.Options{Window: time.Hour})))
	r := router.New()
	r.SaveMatchedRoutePath = true
	r.PanicHandler = httpx.PanicHandler
	r.POST("/v1/channel/events/{id}/checkout", func(ctx *fasthttp.RequestCtx) {
		if ctx.UserValue("id") == "ev_bug" {
			panic("nil map")
		}
		httpx.Error(ctx, errors.New("redis: connection refused"))
	})
	h := m.Instrument(r.Handler)
	for range 20 {
		do(h, "POST", "/v1/channel/events/ev_down/checkout")
	}
	do(h, "POST", "/v1/channel/events/ev_bug/checkout")
	got := logs.String()
	if strings.Count(got, "redis: connection refused") != 1 {
		t.Errorf("the outage's 503s were not collapsed:\n%s", got)
	}
	if !strings.Contains(got, "handler panic: nil map") || strings.Count(got, "status=500") != 1 {
		t.Fatalf("the 500 among a route's 503s was not logged with its panic:\n%s", got)
	}
}
