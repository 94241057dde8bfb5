package rebuild_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// buyN reserves and confirms n orders of one ticket each on event.
func buyN(t *testing.T, s *servertest.Server, event string, body map[string]any, n int) {
	t.Helper()
	for i := range n {
		o := s.MustReserve(t, "a", event, body)
		if c := s.Confirm(t, "a", o.OrderID, o.Amount, fmt.Sprint("psp-", event, i, time.Now().UnixNano())); c.Status != 200 {
			t.Fatalf("confirm on %s: %s", event, c)
		}
	}
}

// reserveCode is the code of a reserve on event ("" when it succeeded).
func reserveCode(t *testing.T, s *servertest.Server, event string, body map[string]any) string {
	t.Helper()
	r := s.Reserve(t, "a", event, body)
	if r.Status == 200 {
		return ""
	}
	return r.Code
}

// waitReserve waits until a reserve on event answers code ("" for a
// success), as every node reads the held events on each state check.
func waitReserve(t *testing.T, s *servertest.Server, event string, body map[string]any, code string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		got := reserveCode(t, s, event, body)
		if got == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reserve on %s answers %q, want %q", event, got, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func soldOf(t *testing.T, s *servertest.Server, ev string) map[string]string {
	t.Helper()
	return counters(t, s, ev)[ev+" sold"]
}

// A rebuild that finds an event's sold mark above the units ever paid it
// can count holds exactly that event, with the difference as its lost
// count: the lost units stay counted as sold, its sales answer 503
// SALES_HELD, /readyz and /metrics name it, and another rebuild keeps it
// so. An event without a gap sells again. Reconcile keeps the lost units
// sold (the event then sells exactly its capacity); release resumes with
// the counts as rebuilt; both are recorded and reach the node within a
// check.
func TestRebuildHoldsEventsBelowTheirMark(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	tkB := map[string]any{"selectedTicketId": "tk_b", "quantity": 1}
	show2 := map[string]any{"selectedTicketId": "tk", "quantity": 1, "showingId": "sh_2"}
	floor := map[string]any{"gaSelections": []map[string]any{{"areaId": "floor", "quantity": 1}}}
	buyN(t, s, "ev_ga", tkB, 3)
	buyN(t, s, "ev_show", show2, 1)
	buyN(t, s, "ev_seated", floor, 1)
	s.Drain(t)
	// Other nodes acknowledged 2 more of ev_ga and 1 more of ev_show that
	// neither Redis nor Postgres has (their marks say so); ev_seated's
	// mark is what Postgres has.
	marks := &rebuild.Marks{Pool: s.Pool, Prefix: s.Space.Prefix}
	if err := marks.Raise(ctx, map[string]int64{"ev_ga": 5, "ev_show": 2, "ev_seated": 1}); err != nil {
		t.Fatal(err)
	}

	rep, err := s.Rebuilder.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []rebuild.HeldEvent{{EventID: "ev_ga", Lost: 2, Found: 2}, {EventID: "ev_show", Lost: 1, Found: 1}}
	if !reflect.DeepEqual(rep.Held, want) {
		t.Fatalf("report's held events %+v, want %+v", rep.Held, want)
	}
	if sold := soldOf(t, s, "ev_ga"); sold["ev"] != "5" || sold["paid"] != "5" || sold["held"] != "2" || sold["t:tk_b"] != "3" {
		t.Fatalf("ev_ga's sold counts while held: %v", sold)
	}
	waitStatus(t, s, redisstate.Current)
	waitReserve(t, s, "ev_ga", tkB, "SALES_HELD")
	r := s.Reserve(t, "a", "ev_show", show2)
	if r.Status != 503 || r.Code != "SALES_HELD" || !strings.Contains(r.Message, "ticketctl release ev_show") || r.Raw["lost"] != float64(1) {
		t.Fatalf("reserve of a held event: %s", r)
	}
	if c := reserveCode(t, s, "ev_seated", floor); c != "" {
		t.Fatalf("reserve of an event without a gap: %s", c)
	}
	rz := s.Do(t, "GET", "/readyz", nil, nil)
	var rd struct {
		Status     string              `json:"status"`
		HeldEvents []rebuild.HeldEvent `json:"heldEvents"`
	}
	rz.Decode(t, &rd)
	if rz.Status != 200 || rd.Status != "degraded" || len(rd.HeldEvents) != 2 || rd.HeldEvents[0].Lost != 2 {
		t.Fatalf("readyz with held events: %s", rz)
	}
	var mt strings.Builder
	mfs, err := s.Metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "ticketd_sales_held_lost" {
			for _, m := range mf.GetMetric() {
				fmt.Fprintf(&mt, "%s=%v ", m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
			}
		}
	}
	if mt.String() != "ev_ga=2 ev_show=1 " {
		t.Fatalf("ticketd_sales_held_lost: %q", mt.String())
	}

	// Held state survives another rebuild, found nothing new.
	s.Drain(t)
	if rep, err = s.Rebuilder.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want = []rebuild.HeldEvent{{EventID: "ev_ga", Lost: 2}, {EventID: "ev_show", Lost: 1}}
	if !reflect.DeepEqual(rep.Held, want) {
		t.Fatalf("second rebuild's held events %+v, want %+v", rep.Held, want)
	}
	waitStatus(t, s, redisstate.Current)
	waitReserve(t, s, "ev_ga", tkB, "SALES_HELD")

	// Reconcile: the 2 lost stay sold; ev_ga (capacity 10) sells 5 more.
	h, err := rebuild.Resolve(ctx, s.Redis, s.Space, s.Pool, 0, "ev_ga", rebuild.Reconcile)
	if err != nil || h.Lost != 2 || h.Resolution != rebuild.Reconcile || h.ReleasedAt == nil {
		t.Fatalf("reconcile: %+v %v", h, err)
	}
	waitReserve(t, s, "ev_ga", tkB, "")
	buyN(t, s, "ev_ga", tkB, 5)
	if c := reserveCode(t, s, "ev_ga", tkB); c != "EVENT_SOLD_OUT" {
		t.Fatalf("ev_ga after reconcile and 5 more: %q, want EVENT_SOLD_OUT", c)
	}
	// Release: ev_show resumes as rebuilt (1 sold), its units ever paid
	// keep the lost one.
	if _, err := rebuild.Resolve(ctx, s.Redis, s.Space, s.Pool, 0, "ev_show", rebuild.Release); err != nil {
		t.Fatal(err)
	}
	if sold := soldOf(t, s, "ev_show"); sold["ev"] != "1" || sold["paid"] != "2" || sold["held"] != "" {
		t.Fatalf("ev_show's sold counts after release: %v", sold)
	}
	waitReserve(t, s, "ev_show", show2, "")
	if _, err := rebuild.Resolve(ctx, s.Redis, s.Space, s.Pool, 0, "ev_show", rebuild.Release); !errors.Is(err, rebuild.ErrNotHeld) {
		t.Fatalf("release of an event not held: %v", err)
	}

	// A later rebuild holds nothing and keeps the reconciled units sold.
	s.Drain(t)
	if rep, err = s.Rebuilder.Run(ctx); err != nil || len(rep.Held) != 0 {
		t.Fatalf("rebuild after both were resolved: %+v %v", rep, err)
	}
	if sold := soldOf(t, s, "ev_ga"); sold["ev"] != "10" || sold["paid"] != "10" {
		t.Fatalf("ev_ga's sold counts after a later rebuild: %v (8 paid in Postgres, 2 reconciled)", sold)
	}
	hs, err := rebuild.Holds(ctx, s.Pool, s.Space.Prefix, true)
	if err != nil || len(hs) != 2 || hs[0].Resolution == "" || hs[1].Resolution == "" {
		t.Fatalf("recorded holds %+v %v", hs, err)
	}
}
