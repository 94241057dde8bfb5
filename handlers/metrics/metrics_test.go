package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// testRouter is set up as server.Handler sets up its router.
func testRouter(m *Metrics) fasthttp.RequestHandler {
	r := router.New()
	r.SaveMatchedRoutePath = true
	r.POST("/v1/channel/events/{id}/checkout", func(ctx *fasthttp.RequestCtx) {
		if ctx.UserValue("id") == "ev_gone" {
			ctx.SetStatusCode(404)
		}
	})
	m.Register(r)
	return m.Instrument(r.Handler)
}

func do(h fasthttp.RequestHandler, method, uri string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	h(&ctx)
	return &ctx
}

// scrape GETs /metrics through h and parses it as Prometheus would.
func scrape(t *testing.T, h fasthttp.RequestHandler) map[string]*dto.MetricFamily {
	t.Helper()
	ctx := do(h, "GET", "/metrics")
	if ctx.Response.StatusCode() != 200 || !strings.HasPrefix(string(ctx.Response.Header.ContentType()), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(ctx.Response.Body()))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, ctx.Response.Body())
	}
	return mfs
}

// find returns the metric of family name whose labels include want.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// Requests are counted by the route's template, never by the path a client
// sent, so an operator sees one series per endpoint and code.
func TestRequestsAreCountedByRouteTemplateAndCode(t *testing.T) {
	m := New()
	h := testRouter(m)
	for _, ev := range []string{"ev_1", "ev_2", "ev_3"} {
		do(h, "POST", "/v1/channel/events/"+ev+"/checkout")
	}
	do(h, "POST", "/v1/channel/events/ev_gone/checkout")
	do(h, "GET", "/random/path/1")
	do(h, "GET", "/random/path/2")
	do(h, "BREW", "/v1/channel/events/ev_1/checkout")

	mfs := scrape(t, h)
	route := "/v1/channel/events/{id}/checkout"
	for _, tc := range []struct {
		labels map[string]string
		count  float64
	}{
		{map[string]string{"route": route, "method": "POST", "code": "200"}, 3},
		{map[string]string{"route": route, "method": "POST", "code": "404"}, 1},
		{map[string]string{"route": Unmatched, "method": "GET", "code": "404"}, 2},
		{map[string]string{"route": Unmatched, "method": "OTHER"}, 1},
	} {
		s := find(mfs, "ticketd_http_requests_total", tc.labels)
		if s == nil || s.GetCounter().GetValue() != tc.count {
			t.Errorf("ticketd_http_requests_total%v = %v, want %v", tc.labels, s, tc.count)
		}
	}
	for _, mt := range mfs["ticketd_http_requests_total"].GetMetric() {
		for _, lp := range mt.GetLabel() {
			if strings.Contains(lp.GetValue(), "ev_") || strings.Contains(lp.GetValue(), "random") || lp.GetValue() == "BREW" {
				t.Errorf("a label holds what the client sent: %v", mt.GetLabel())
			}
		}
	}
	lat := find(mfs, "ticketd_http_request_duration_seconds", map[string]string{"route": route, "method": "POST"})
	if lat == nil || lat.GetHistogram().GetSampleCount() != 4 {
		t.Errorf("latency histogram of %s: %v, want 4 samples", route, lat)
	}
}

// The figures the state monitor, the sync worker, confirm and rebuild
// report all reach the scrape.
func TestReportedFiguresAreServed(t *testing.T) {
	m := New()
	h := testRouter(m)
	m.ObserveRedisRTT(300 * time.Microsecond)
	m.ObserveRedisRTT(2 * time.Millisecond)
	m.PaidOrder()
	m.PaidOrder()
	m.PaidOrder()
	m.Rebuild(RebuildOK)
	m.SetSyncBacklog(1500, 2500*time.Millisecond)
	m.SetDurability(redisstate.LosesEverything)
	m.SetDurability(redisstate.LosesNothing)
	m.SetRedisState("lost")
	m.SetRedisState("current")
	mfs := scrape(t, h)

	gauge := func(name string, labels map[string]string) float64 {
		t.Helper()
		s := find(mfs, name, labels)
		if s == nil {
			t.Fatalf("%s%v missing", name, labels)
		}
		return s.GetGauge().GetValue()
	}
	if s := find(mfs, "ticketd_redis_rtt_seconds", nil); s == nil || s.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("Redis round trips: %v, want 2 samples", s)
	}
	if s := find(mfs, "ticketd_paid_orders_total", nil); s == nil || s.GetCounter().GetValue() != 3 {
		t.Errorf("paid orders: %v, want 3", s)
	}
	if s := find(mfs, "ticketd_rebuilds_total", map[string]string{"result": RebuildOK}); s == nil || s.GetCounter().GetValue() != 1 {
		t.Errorf("rebuilds ok: %v, want 1", s)
	}
	if s := find(mfs, "ticketd_rebuilds_total", map[string]string{"result": RebuildFailed}); s == nil || s.GetCounter().GetValue() != 0 {
		t.Errorf("rebuilds failed: %v, want a 0 series", s)
	}
	if v := gauge("ticketd_sync_backlog_entries", nil); v != 1500 {
		t.Errorf("backlog entries %v, want 1500", v)
	}
	if v := gauge("ticketd_sync_backlog_oldest_seconds", nil); v != 2.5 {
		t.Errorf("backlog age %v, want 2.5", v)
	}
	for level, want := range map[string]float64{redisstate.LosesNothing: 1, redisstate.LosesSecond: 0, redisstate.LosesEverything: 0, redisstate.LosesUnknown: 0} {
		if v := gauge("ticketd_redis_durability", map[string]string{"level": level}); v != want {
			t.Errorf("durability %s = %v, want %v", level, v, want)
		}
	}
	for state, want := range map[string]float64{"current": 1, "lost": 0, "unreachable": 0} {
		if v := gauge("ticketd_redis_state", map[string]string{"state": state}); v != want {
			t.Errorf("redis state %s = %v, want %v", state, v, want)
		}
	}
	if mfs["go_goroutines"] == nil || mfs["process_resident_memory_bytes"] == nil {
		t.Errorf("Go and process collectors missing")
	}
}

// Until the monitor has read the server's settings, the durability is
// unknown, not silently "nothing".
func TestDurabilityStartsUnknown(t *testing.T) {
	m := New()
	mfs := scrape(t, testRouter(m))
	if s := find(mfs, "ticketd_redis_durability", map[string]string{"level": redisstate.LosesUnknown}); s == nil || s.GetGauge().GetValue() != 1 {
		t.Fatalf("durability at start: %v, want unknown = 1", s)
	}
}

// Every state and durability the monitor reports has its series from the
// start, at 0, so that a dashboard or an alert on "stale" finds it before
// the first rollback.
func TestEveryRedisStateAndLevelIsDeclared(t *testing.T) {
	mfs := scrape(t, testRouter(New()))
	for _, st := range []redisstate.Status{redisstate.Starting, redisstate.Current, redisstate.Unreachable, redisstate.Loading,
		redisstate.Lost, redisstate.Stale, redisstate.Rebuilding} {
		if find(mfs, "ticketd_redis_state", map[string]string{"state": string(st)}) == nil {
			t.Errorf("ticketd_redis_state{state=%q} is not declared", st)
		}
	}
	for _, level := range []string{redisstate.LosesNothing, redisstate.LosesSecond, redisstate.LosesEverything, redisstate.LosesUnknown} {
		if find(mfs, "ticketd_redis_durability", map[string]string{"level": level}) == nil {
			t.Errorf("ticketd_redis_durability{level=%q} is not declared", level)
		}
	}
}

// Code that reports may run without metrics.
func TestNilMetricsDoNothing(t *testing.T) {
	var m *Metrics
	m.ObserveRedisRTT(time.Millisecond)
	m.PaidOrder()
	m.Rebuild(RebuildOK)
	m.SetDurability(redisstate.LosesNothing)
	m.SetRedisState("current")
	m.SetSyncBacklog(1, time.Second)
	h := func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(204) }
	if ctx := do(m.Instrument(h), "GET", "/"); ctx.Response.StatusCode() != 204 {
		t.Fatal("nil Instrument does not pass through")
	}
}

// BenchmarkInstrument is the cost Instrument adds to a request (compare
// with -bench 'Instrument/bare'):
//
//	go test -run '^$' -bench Instrument -benchmem ./handlers/metrics/
func BenchmarkInstrument(b *testing.B) {
	r := router.New()
	r.SaveMatchedRoutePath = true
	r.POST("/v1/channel/events/{id}/checkout", func(ctx *fasthttp.RequestCtx) {})
	for _, tc := range []struct {
		name string
		h    fasthttp.RequestHandler
	}{{"bare", r.Handler}, {"instrumented", New().Instrument(r.Handler)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var ctx fasthttp.RequestCtx
				ctx.Request.Header.SetMethod("POST")
				ctx.Request.SetRequestURI("/v1/channel/events/ev_1/checkout")
				for pb.Next() {
					tc.h(&ctx)
					ctx.Request.ResetUserValues()
				}
			})
		})
	}
}

// ticketd_sales_stopped has a series per reason from the start, at 0,
// and follows the state monitor's view and the TICKETD_MAX_UNSYNCED gate.
func TestSalesStoppedFollowsEachGate(t *testing.T) {
	m := New()
	h := testRouter(m)
	stopped := func(want map[string]float64) {
		t.Helper()
		mfs := scrape(t, h)
		for reason, v := range want {
			s := find(mfs, "ticketd_sales_stopped", map[string]string{"reason": reason})
			if s == nil || s.GetGauge().GetValue() != v {
				t.Errorf("ticketd_sales_stopped{reason=%q} = %v, want %v", reason, s, v)
			}
		}
	}
	stopped(map[string]float64{StoppedRedisState: 0, StoppedUnsynced: 0})
	m.StateChanged(redisstate.View{Status: redisstate.Lost})
	m.UnsyncedChanged(true)
	stopped(map[string]float64{StoppedRedisState: 1, StoppedUnsynced: 1})
	m.StateChanged(redisstate.View{Status: redisstate.Current})
	stopped(map[string]float64{StoppedRedisState: 0, StoppedUnsynced: 1})
	m.UnsyncedChanged(false)
	stopped(map[string]float64{StoppedRedisState: 0, StoppedUnsynced: 0})
}

// ticketd_redis_round_trips_total reads the client's total at each scrape.
func TestRedisRoundTripsAreServed(t *testing.T) {
	m := New()
	var total roundtrips.Counter
	m.CountRedisRoundTrips(&total)
	h := testRouter(m)
	total.Add(7)
	if s := find(scrape(t, h), "ticketd_redis_round_trips_total", nil); s == nil || s.GetCounter().GetValue() != 7 {
		t.Fatalf("round trips: %v, want 7", s)
	}
	total.Add(5)
	if s := find(scrape(t, h), "ticketd_redis_round_trips_total", nil); s == nil || s.GetCounter().GetValue() != 12 {
		t.Fatalf("round trips after 5 more: %v, want 12", s)
	}
	var none *Metrics
	none.CountRedisRoundTrips(&total) // a nil *Metrics does nothing
}
