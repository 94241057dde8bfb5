package load

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serve runs h on a loopback port until the test ends and returns its address.
func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// getActor sends GET / and records its latency from the intended start.
type getActor struct{}

func (getActor) Arrive(w *Worker, intended time.Time) {
	w.Prepare("GET", "/")
	st, tr := w.Send()
	w.Observe(0, intended)
	switch {
	case tr != "":
		w.Error(tr)
	case st == 200:
		w.Done(1)
	case st == 409:
		w.Reject(w.Code())
	default:
		w.Error(w.Code())
	}
}

func newGet(*Worker) Actor { return getActor{} }

// TestOpenLoopMeasuresFromIntendedStart: a server that stalls once for
// 200 ms must show in the latencies of the arrivals scheduled during the
// stall, not only in the few requests that were in flight. A generator that
// timed from the moment it sent would record the queued arrivals as fast.
func TestOpenLoopMeasuresFromIntendedStart(t *testing.T) {
	var mu sync.Mutex
	var calls atomic.Int64
	addr := serve(t, func(ctx *fasthttp.RequestCtx) {
		mu.Lock() // the stall holds up every request behind it
		defer mu.Unlock()
		if calls.Add(1) == 300 {
			time.Sleep(200 * time.Millisecond)
		}
		ctx.SetStatusCode(200)
	})
	res, err := Run(context.Background(), addr, Plan{
		Name: "stall", Unit: "req", Ops: []string{"get"}, Open: true, Rate: 1000,
		Duration: time.Second, Workers: 8, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Arrivals != 1000 || res.Units != 1000 {
		t.Fatalf("arrivals %d, units %d; want 1000 each", res.Arrivals, res.Units)
	}
	h := res.Hist("get")
	slow := int64(0)
	for _, b := range h.Distribution() {
		if b.From >= 50_000 { // µs
			slow += b.Count
		}
	}
	// About 200 arrivals fall inside the stall and wait up to 200 ms;
	// three quarters of them wait 50 ms or more.
	if slow < 100 {
		t.Fatalf("%d arrivals recorded >= 50ms, want >= 100 (p99 %.1fms): the stall is hidden", slow, res.Op("get").P99)
	}
	if p := res.Op("get").P99; p < 100 {
		t.Fatalf("p99 %.1fms, want >= 100ms after a 200ms stall at 1000/s", p)
	}
	if d := res.Op(StartDelay); d.Count != 1000 || d.Max < 50 {
		t.Fatalf("start delay %+v: want 1000 samples, max >= 50ms", d)
	}
}

// TestOpenLoopAbandonsPastDrainAndCountsThem: arrivals that never got a
// worker are not dropped silently; they are errors with their wait.
func TestOpenLoopAbandonsPastDrainAndCountsThem(t *testing.T) {
	release := make(chan struct{})
	addr := serve(t, func(ctx *fasthttp.RequestCtx) { <-release })
	t.Cleanup(func() { close(release) }) // before the server's shutdown: cleanups run last first
	res, err := Run(context.Background(), addr, Plan{
		Name: "stuck", Unit: "req", Ops: []string{"get"}, Open: true, Rate: 200, Duration: 250 * time.Millisecond,
		Workers: 2, Drain: 100 * time.Millisecond, Timeout: 500 * time.Millisecond, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Arrivals != 50 {
		t.Fatalf("arrivals %d, want 50", res.Arrivals)
	}
	if res.Abandoned < 40 || res.Errors["abandoned"] != res.Abandoned {
		t.Fatalf("abandoned %d, errors %v; want >= 40 abandoned, all counted", res.Abandoned, res.Errors)
	}
	if res.Errors["timeout"] != 2 {
		t.Fatalf("errors %v; want the 2 in-flight requests as timeouts", res.Errors)
	}
	if got := res.Op("get").Count; got != 50 {
		t.Fatalf("%d latencies recorded, want all 50 arrivals", got)
	}
}

// TestClosedLoopCountsEveryRequestAndCode runs a fixed number of arrivals
// and checks that every answer is counted by code.
func TestClosedLoopCountsEveryRequestAndCode(t *testing.T) {
	var n atomic.Int64
	addr := serve(t, func(ctx *fasthttp.RequestCtx) {
		switch n.Add(1) % 4 {
		case 0:
			ctx.SetStatusCode(409)
			ctx.SetBodyString(`{"success":false,"code":"TICKET_SOLD_OUT","message":"x"}`)
		case 1:
			ctx.SetStatusCode(503)
			ctx.SetBodyString(`{"success":false,"code":"SERVICE_UNAVAILABLE"}`)
		default:
			ctx.SetStatusCode(200)
		}
	})
	res, err := Run(context.Background(), addr, Plan{
		Name: "codes", Unit: "req", Ops: []string{"get"}, Arrivals: 400, Workers: 4, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 400 || res.Units != 200 {
		t.Fatalf("requests %d units %d, want 400 and 200", res.Requests, res.Units)
	}
	if res.Rejections["TICKET_SOLD_OUT"] != 100 || res.Errors["SERVICE_UNAVAILABLE"] != 100 {
		t.Fatalf("rejections %v errors %v, want 100 of each code", res.Rejections, res.Errors)
	}
	if res.Mode != "closed" || res.Op(StartDelay).Count != 0 {
		t.Fatalf("a closed loop has no start delay: %+v", res.Op(StartDelay))
	}
}

func TestTransportErrorsHaveTheirOwnCode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res, err := Run(context.Background(), addr, Plan{
		Name: "refused", Unit: "req", Ops: []string{"get"}, Arrivals: 5, Workers: 1, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors["conn_refused"] != 5 {
		t.Fatalf("errors %v, want 5 conn_refused", res.Errors)
	}
}

// TestOpenLoopReportsTheRateItKept: a server that keeps up gets its
// arrivals on schedule; one whose every worker is stuck makes the run
// report fewer arrivals begun than intended, and that the workers were
// all busy (the target, not the generator, fell behind).
func TestOpenLoopReportsTheRateItKept(t *testing.T) {
	addr := serve(t, func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(200) })
	res, err := Run(context.Background(), addr, Plan{
		Name: "kept", Unit: "req", Ops: []string{"get"}, Open: true, Rate: 500,
		// Workers to spare: on a machine busy with other tests (race
		// detector on) a request may stall for milliseconds, and 16
		// workers were seen all busy at once.
		Duration: time.Second, Workers: 256, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.AchievedRate < 0.9*500 || res.AchievedRate > 1.1*500 || res.Saturated {
		t.Fatalf("achieved %.0f/s of 500/s, saturated %v: want on schedule", res.AchievedRate, res.Saturated)
	}

	release := make(chan struct{})
	stuck := serve(t, func(ctx *fasthttp.RequestCtx) { <-release })
	t.Cleanup(func() { close(release) })
	res, err = Run(context.Background(), stuck, Plan{
		Name: "stuck", Unit: "req", Ops: []string{"get"}, Open: true, Rate: 200, Duration: 250 * time.Millisecond,
		Workers: 2, Drain: 100 * time.Millisecond, Timeout: 500 * time.Millisecond, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Saturated || res.AchievedRate >= 0.5*200 {
		t.Fatalf("achieved %.0f/s of 200/s, saturated %v: want far behind, every worker busy", res.AchievedRate, res.Saturated)
	}
}

// TestProgressLinesNameTheirRun: the ceiling and the baseline run the flash
// workload too; their progress lines must say which run they belong to.
func TestProgressLinesNameTheirRun(t *testing.T) {
	addr := serve(t, func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(200) })
	var buf bytes.Buffer
	_, err := Run(context.Background(), addr, Plan{
		Name: "ceiling-http", Unit: "pairs", Ops: []string{"get"}, Duration: 1200 * time.Millisecond, Workers: 2,
		Progress: &Progress{W: &buf, Every: 1}, NewActor: newGet,
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("no progress line")
	}
	for _, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "ceiling-http ") {
			t.Errorf("progress line does not name its run: %q", l)
		}
	}
}

// TestMergeJoinsSlicesAsOneRun: two slices of a run merged count every
// request, latency and code once, and their series run on in time.
func TestMergeJoinsSlicesAsOneRun(t *testing.T) {
	var n atomic.Int64
	addr := serve(t, func(ctx *fasthttp.RequestCtx) {
		if n.Add(1)%10 == 0 {
			ctx.SetStatusCode(409)
			ctx.SetBodyString(`{"success":false,"code":"TICKET_SOLD_OUT"}`)
			return
		}
		ctx.SetStatusCode(200)
	})
	run := func(arrivals int64) *Result {
		res, err := Run(context.Background(), addr, Plan{Name: "slice", Unit: "req", Ops: []string{"get"},
			Duration: 1100 * time.Millisecond, Arrivals: arrivals, Workers: 2, NewActor: newGet})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(100), run(50)
	m := Merge(a, b)
	if m.Requests != 150 || m.Units+m.Rejections["TICKET_SOLD_OUT"] != 150 || m.Op("get").Count != 150 {
		t.Fatalf("merged requests %d, units %d, rejections %v, latencies %d: want all 150", m.Requests, m.Units, m.Rejections, m.Op("get").Count)
	}
	if m.Elapsed != a.Elapsed+b.Elapsed || m.Rejections["TICKET_SOLD_OUT"] != a.Rejections["TICKET_SOLD_OUT"]+b.Rejections["TICKET_SOLD_OUT"] {
		t.Fatalf("elapsed %s (parts %s + %s), rejections %v", m.Elapsed, a.Elapsed, b.Elapsed, m.Rejections)
	}
	for i := 1; i < len(m.Series); i++ {
		if m.Series[i].T <= m.Series[i-1].T {
			t.Fatalf("series goes back in time: %+v", m.Series)
		}
	}
}

// intendedActor keeps each arrival's intended start.
type intendedActor struct {
	mu  *sync.Mutex
	got *[]time.Duration
	at  *time.Time
}

func (a intendedActor) Arrive(w *Worker, intended time.Time) {
	w.Prepare("GET", "/")
	if _, tr := w.Send(); tr != "" {
		w.Error(tr)
	}
	a.mu.Lock()
	*a.got = append(*a.got, intended.Sub(*a.at))
	a.mu.Unlock()
	time.Sleep(50 * time.Millisecond) // a worker that mostly waits
}

// TestOpenLoopKeepsItsOwnSchedule: with At, arrival i starts At(i) after
// the start, a gap included, and more workers than connections share
// them (Conns) without errors.
func TestOpenLoopKeepsItsOwnSchedule(t *testing.T) {
	addr := serve(t, func(ctx *fasthttp.RequestCtx) {})
	var mu sync.Mutex
	var got []time.Duration
	var start time.Time
	at := func(i int64) time.Duration {
		if i < 10 {
			return time.Duration(i) * time.Millisecond // 10 at once
		}
		return 300*time.Millisecond + time.Duration(i-10)*time.Millisecond // then, after a gap, 10 more
	}
	res, err := Run(context.Background(), addr, Plan{Name: "at", Ops: []string{"get"}, Open: true, Rate: 20 / 0.32, Arrivals: 20,
		At: at, Workers: 20, Conns: 2, NewActor: func(w *Worker) Actor {
			return intendedActor{mu: &mu, got: &got, at: &start}
		}, Window: windowFunc(func() { start = time.Now().Add(5 * time.Millisecond) })})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 || res.Arrivals != 20 || len(got) != 20 {
		t.Fatalf("arrivals %d, intended starts %d, errors %v", res.Arrivals, len(got), res.Errors)
	}
	late := 0
	for _, d := range got {
		if d >= 250*time.Millisecond {
			late++
		}
	}
	if late != 10 {
		t.Fatalf("%d arrivals intended after the gap, want 10: %v", late, got)
	}
	if _, err := Run(context.Background(), addr, Plan{Ops: []string{"get"}, Rate: 1, Duration: time.Second, At: at, Workers: 1, NewActor: newGet}); err == nil {
		t.Fatal("a schedule without an open loop and arrivals was accepted")
	}
}

// windowFunc is a Window that calls begin at its start.
type windowFunc func()

func (f windowFunc) Begin() { f() }
func (f windowFunc) End()   {}
