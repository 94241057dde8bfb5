package catalogstore_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/catalogdb"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// setupRecorded is setup with a Postgres record.
func setupRecorded(t *testing.T) (*catalogstore.Store, *catalogdb.Store, *orders.Service) {
	t.Helper()
	rc, space := redistest.New(t)
	rec := &catalogdb.Store{Pool: pgtest.New(t)}
	s := &catalogstore.Store{Redis: rc, Space: space, Sealer: catalog.NewSealer("test"), Record: rec}
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, rec, &orders.Service{Redis: rc, Space: space, OrderTTL: time.Minute}
}

// TestApplyRefusedByARacingSaleChangesNothing: an apply lowers two events'
// capacities and passes the sold-count checks, then sales land on the
// second event past its new capacity before its capacity script runs. The
// apply is refused, and nothing of it stays: not the first event's new
// capacities in Redis, not the document in the Postgres record, not the
// served catalog.
func TestApplyRefusedByARacingSaleChangesNothing(t *testing.T) {
	s, rec, o := setupRecorded(t)
	ctx := context.Background()

	a, b := event("ev_a"), event("ev_b")
	a.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 100}}
	b.Tickets = []catalog.Ticket{{ID: "tk", Name: "B", Price: 1000, Capacity: 20}}
	if err := apply(t, s, a, b); err != nil {
		t.Fatal(err)
	}
	var pending []string
	for range 8 {
		pending = append(pending, reserve(t, o, "ev_b", map[string]int64{"t:tk": 1}))
	}
	for _, id := range pending[:3] {
		if got := confirm(o, id); got != "paid" {
			t.Fatalf("confirm before the apply: %s", got)
		}
	}

	// ev_a: 100 -> 60 and a new capped extra; ev_b: 20 -> 5, above the 3
	// sold when the apply checks, below the 8 sold when its script runs.
	a2, b2 := a, b
	a2.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 60}}
	a2.Extras = []catalog.Extra{{ID: "x_new", Name: "X", Price: 100, Capacity: ptr[int64](5)}}
	b2.Tickets = []catalog.Ticket{{ID: "tk", Name: "B", Price: 1000, Capacity: 5}}
	catalogstore.SetAfterCheck(s, func() {
		for _, id := range pending[3:] {
			if got := confirm(o, id); got != "paid" {
				t.Errorf("racing confirm: %s", got)
			}
		}
	})
	err := apply(t, s, a2, b2)
	var ve *catalog.ValidationError
	if !errors.As(err, &ve) || ve.Path != "tenants[0].events[1].tickets[0].capacity" {
		t.Fatalf("apply racing sales past a lowered capacity: %v, want a validation error at ev_b's ticket capacity", err)
	}

	for ev, want := range map[string]map[string]int64{"ev_a": {"t:tk": 100}, "ev_b": {"t:tk": 20}} {
		if got := caps(t, s, ev); !maps.Equal(got, want) {
			t.Errorf("%s capacities in Redis after the refused apply: %v, want %v", ev, got, want)
		}
	}
	tenants, _, err := rec.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tn := range tenants {
		for _, ev := range tn.Events {
			if ev.ID == "ev_a" {
				found = true
				if ev.Tickets[0].Capacity != 100 || len(ev.Extras) != 0 {
					t.Errorf("the record kept the refused document: ev_a tickets %+v extras %+v", ev.Tickets, ev.Extras)
				}
			}
		}
	}
	if !found {
		t.Error("ev_a is missing from the record: it held the first document before the refused apply")
	}
	if got := s.Current().Events["ev_a"].Caps(); !maps.Equal(got, map[string]int64{"t:tk": 100}) {
		t.Errorf("served catalog after the refused apply: ev_a caps %v", got)
	}

	// The apply goes through once it no longer undoes a sale.
	catalogstore.SetAfterCheck(s, nil)
	b2.Tickets[0].Capacity = 8
	if err := apply(t, s, a2, b2); err != nil {
		t.Fatalf("apply at the sold count: %v", err)
	}
	if got := caps(t, s, "ev_a"); !maps.Equal(got, map[string]int64{"t:tk": 60, "x:x_new": 5}) {
		t.Errorf("ev_a capacities after the apply: %v", got)
	}
}

// TestApplyThatCannotWriteTheRecordChangesNothing: when Postgres refuses
// the document after the capacities took, they are put back, so Redis
// never sells against a catalog the record does not hold.
func TestApplyThatCannotWriteTheRecordChangesNothing(t *testing.T) {
	s, rec, _ := setupRecorded(t)
	ev := event("ev_a")
	ev.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 100}}
	if err := apply(t, s, ev); err != nil {
		t.Fatal(err)
	}
	ev.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 40}, {ID: "tk2", Name: "B", Price: 1000, Capacity: 7}}
	rec.Pool.Close() // Postgres gone
	if err := apply(t, s, ev); err == nil {
		t.Fatal("apply without its record succeeded")
	}
	if got := caps(t, s, "ev_a"); !maps.Equal(got, map[string]int64{"t:tk": 100}) {
		t.Errorf("capacities after the failed apply: %v, want the previous {t:tk: 100}", got)
	}
	if got := s.Current().Events["ev_a"].Caps(); !maps.Equal(got, map[string]int64{"t:tk": 100}) {
		t.Errorf("served catalog after the failed apply: %v", got)
	}
}
