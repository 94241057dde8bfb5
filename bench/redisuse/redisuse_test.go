package redisuse

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/ticketd/ticketd/bench/durable"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func near(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }

// TestPerUnitFromTwoReadings: round trips and commands per unit are each
// counter's increase between the readings, summed over the windows,
// divided by the units of work.
func TestPerUnitFromTwoReadings(t *testing.T) {
	reading := func(metrics string, info map[string]string) Reading {
		n, ok := RoundTrips([]byte(metrics))
		if !ok {
			t.Fatalf("no round trips in %q", metrics)
		}
		return Reading{RoundTrips: n, Commands: durable.FromInfo(info)}
	}
	before := reading("# TYPE ticketd_redis_round_trips_total counter\nticketd_redis_round_trips_total 1000\n",
		map[string]string{"total_commands_processed": "5000", "cmdstat_evalsha": "calls=100,usec=9", "cmdstat_hset": "calls=300"})
	after := reading("ticketd_redis_round_trips_total 1.4e+03\n",
		map[string]string{"total_commands_processed": "7000", "cmdstat_evalsha": "calls=500,usec=9", "cmdstat_hset": "calls=700"})
	var u Use
	u.add(after.Sub(before), readErrs{})
	// A second window: 100 more round trips, 1,000 more commands, 100 EVALSHA.
	u.add(Reading{RoundTrips: 100, Commands: durable.FromInfo(map[string]string{"total_commands_processed": "1000",
		"cmdstat_evalsha": "calls=100"})}, readErrs{})
	got := u.PerUnit(context.Background(), nil, 250)
	// (400 + 100) / 250, (2,000 + 1,000) / 250, (400 + 100) / 250
	if !near(got.RoundTripsPerUnit, 2) || !near(got.CommandsPerUnit, 12) || !near(got.ScriptsPerUnit, 2) || len(got.Why) != 0 {
		t.Fatalf("per unit %+v, want 2 round trips, 12 commands, 2 scripts", got)
	}
	if got.ByCommand != "evalsha 2.00, hset 1.60" {
		t.Fatalf("by command %q", got.ByCommand)
	}

	u.RoundTripsErr = fmt.Errorf("node down")
	if got := u.PerUnit(context.Background(), nil, 250); got.RoundTripsPerUnit != nil || !near(got.CommandsPerUnit, 12) || len(got.Why) != 1 {
		t.Fatalf("an unread counter is reported, not guessed: %+v", got)
	}
	if got := (Use{}).PerUnit(context.Background(), nil, 250); got != nil {
		t.Fatalf("no window, nothing measured: %+v", got)
	}
	if got := u.PerUnit(context.Background(), nil, 0); got.RoundTripsPerUnit != nil || got.CommandsPerUnit != nil {
		t.Fatalf("no unit: %+v", got)
	}
}

func TestRoundTripsReadsTheCounter(t *testing.T) {
	for text, want := range map[string]int64{
		"ticketd_redis_round_trips_totalx 5\nticketd_redis_round_trips_total 42\n": 42,
		"ticketd_redis_round_trips_total{node=\"a\"} 7 1700000000000\n":            7,
		"go_goroutines 12\nticketd_redis_round_trips_total 1.234567e+06\n":         1234567,
	} {
		if got, ok := RoundTrips([]byte(text)); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", text, got, ok, want)
		}
	}
	if _, ok := RoundTrips([]byte("go_goroutines 12\n")); ok {
		t.Error("found a counter that is not there")
	}
}

// TestMeterSumsNodesAndWindows: the meter reads every node's /metrics and
// the Redis's INFO at each window's ends and adds the windows up.
func TestMeterSumsNodesAndWindows(t *testing.T) {
	var a, b atomic.Int64
	node := func(n *atomic.Int64) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, "# TYPE %s counter\n%s %d\n", RoundTripsMetric, RoundTripsMetric, n.Load())
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	// A Redis of its own: its command counters are this test's alone.
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	m := New(rc, node(&a), node(&b))
	a.Store(100)
	for _, w := range []struct{ a, b, pings int64 }{{3, 4, 10}, {2, 1, 5}} {
		m.Begin()
		a.Add(w.a)
		b.Add(w.b)
		for range w.pings {
			if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		m.End()
	}
	u := m.Take()
	if u.Windows != 2 || u.RoundTripsErr != nil || u.CommandsErr != nil || u.Delta.RoundTrips != 10 {
		t.Fatalf("use %+v, want 2 windows and 10 round trips", u)
	}
	// 15 PINGs and the meter's own INFO at each end of each window but the first.
	if got := u.Delta.Commands.Commands(); got < 15 || got > 15+4 {
		t.Fatalf("commands %d, want 15 and the meter's INFOs", got)
	}
	if again := m.Take(); again.Windows != 0 {
		t.Fatalf("Take forgets: %+v", again)
	}

	down := New(nil, "http://127.0.0.1:1")
	down.Begin()
	down.End()
	if u := down.Take(); u.RoundTripsErr == nil || u.CommandsErr == nil {
		t.Fatalf("unreadable counters must be said: %+v", u)
	}
}
