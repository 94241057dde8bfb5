package main

import (
	"context"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// With ticketd running on manual recovery and Redis emptied under it,
// `ticketctl rebuild` restores the sold counts from Postgres, prints what
// it restored, and the running ticketd sells again by itself.
func TestRebuildCommandRestoresARunningTicketd(t *testing.T) {
	s, vars := soldOnManualRecovery(t, 2)
	redistest.Flush(t, s.Redis, s.Space)

	r := ticketctl(vars, "", "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, "paid orders       1 (0 found only on the paid streams)") ||
		!strings.Contains(r.stdout, "admissions 2") {
		t.Fatalf("rebuild: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	sold, err := s.Redis.Do(context.Background(), s.Redis.B().Hgetall().Key(s.Space.Sold("ev_ga")).Build()).AsIntMap()
	if err != nil || sold["t:tk_a"] != 2 || sold["ev"] != 2 {
		t.Fatalf("sold after the rebuild: %v %v", sold, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Monitor.View().Status != redisstate.Current {
		if time.Now().After(deadline) {
			t.Fatalf("ticketd did not resume: %+v", s.Monitor.View())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := s.Do(t, "GET", "/v1/channel/events/ev_ga", servertest.Keyed("a"), nil); r.Status != 200 {
		t.Fatalf("catalog after the rebuild: %s", r)
	}

	// Again, as JSON: nothing changes.
	r = ticketctl(vars, "", "rebuild", "-json")
	var rep rebuild.Report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.PaidOrders != 1 || rep.Admissions != 2 {
		t.Fatalf("second rebuild: exit %d %+v\nstdout: %s\nstderr: %s", r.code, rep, r.stdout, r.stderr)
	}
}

// soldOnManualRecovery starts ticketd on manual recovery, sells one order
// of n tk_a on ev_ga, drains it to Postgres, and returns the environment
// the store commands need.
func soldOnManualRecovery(t *testing.T, n int) (*servertest.Server, map[string]string) {
	t.Helper()
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": n})
	if c := s.Confirm(t, "a", o.OrderID, o.Amount, "psp-1"); c.Status != 200 {
		t.Fatalf("confirm: %s", c)
	}
	s.Drain(t)
	return s, map[string]string{"REDIS_URL": redistest.URL(), "DATABASE_URL": s.DatabaseURL, "TICKETD_KEY_PREFIX": s.Space.Prefix}
}

func TestRebuildCommandFailures(t *testing.T) {
	if r := ticketctl(nil, "", "rebuild", "extra"); r.code != 2 {
		t.Fatalf("unexpected argument: %+v", r)
	}
	r := ticketctl(map[string]string{"REDIS_URL": "redis://127.0.0.1:1", "DATABASE_URL": "postgres://x@127.0.0.1:1/x"}, "", "rebuild", "-timeout", "5s")
	if r.code != 1 || !strings.Contains(r.stderr, "Redis") {
		t.Fatalf("unreachable Redis: %+v", r)
	}
}
