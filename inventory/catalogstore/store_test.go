package catalogstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func ptr[T any](v T) *T { return &v }

func setup(t *testing.T) (*catalogstore.Store, *orders.Service) {
	t.Helper()
	rc, space := redistest.New(t)
	store := &catalogstore.Store{Redis: rc, Space: space, Sealer: catalog.NewSealer("test")}
	if err := store.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return store, &orders.Service{Redis: rc, Space: space, OrderTTL: time.Minute}
}

// apply validates and applies a document of one tenant with the given events.
func apply(t *testing.T, s *catalogstore.Store, events ...catalog.Event) error {
	t.Helper()
	doc := &catalog.Document{Tenants: []catalog.Tenant{{ID: "t1", Name: "Host", Events: events}}}
	if err := catalog.Validate(doc); err != nil {
		t.Fatalf("document is invalid: %v", err)
	}
	_, err := s.Apply(context.Background(), doc)
	return err
}

func event(id string) catalog.Event {
	return catalog.Event{ID: id, ShortID: id, Slug: id, Name: id, StartsAt: "2027-01-01T00:00:00Z",
		Status: catalog.StatusOnSale, Channels: []string{}}
}

var seq int

// reserve creates a pending order claiming nothing yet, as the partner
// reserve does; claims are what its confirm will claim.
func reserve(t *testing.T, o *orders.Service, ev string, claims map[string]int64) string {
	t.Helper()
	seq++
	r, err := o.Reserve(context.Background(), orders.ReserveRequest{EventID: ev, Caller: "ch:c", ChannelID: "c",
		IdempotencyKey: fmt.Sprint(t.Name(), seq), Fingerprint: fmt.Sprint(seq), Total: 1000, Claims: claims,
		Record: orders.Record{EventID: ev, Tickets: []orders.Ticket{{Label: "GA"}}}})
	if err != nil {
		t.Fatalf("reserve %v: %v", claims, err)
	}
	return r.OrderID
}

func confirm(o *orders.Service, id string) string {
	_, err := o.Confirm(context.Background(), orders.ConfirmRequest{ChannelID: "c", OrderID: id, Amount: 1000, Reference: "ref-" + id})
	var ae *apierr.Error
	switch {
	case err == nil:
		return "paid"
	case errors.As(err, &ae):
		return ae.Code + " " + ae.Reason
	}
	return err.Error()
}

func caps(t *testing.T, s *catalogstore.Store, ev string) map[string]int64 {
	t.Helper()
	m, err := s.Redis.Do(context.Background(), s.Redis.B().Hgetall().Key(s.Space.Caps(ev)).Build()).AsIntMap()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Removing a ticket type, extra or showing while orders of it are pending
// freezes its capacity at what is sold: those orders fail at confirm
// instead of selling past the capacity they were reserved under. An object
// that stays but loses its capacity becomes uncapped, as the operator asked.
func TestRemovedObjectsKeepTheirSoldCountAsCapacity(t *testing.T) {
	s, o := setup(t)
	ev := event("ev1")
	ev.Capacity = ptr[int64](100)
	ev.Showings = []catalog.Showing{{ID: "sh_a", StartsAt: "2027-01-01T00:00:00Z", Capacity: ptr[int64](50)},
		{ID: "sh_b", StartsAt: "2027-01-02T00:00:00Z", Capacity: ptr[int64](50)}}
	ev.Tickets = []catalog.Ticket{{ID: "tk", Name: "T", Price: 1000, Capacity: 2}, {ID: "tk_keep", Name: "K", Price: 1000, Capacity: 5}}
	ev.Extras = []catalog.Extra{{ID: "x_gone", Name: "G", Price: 100, Capacity: ptr[int64](3)},
		{ID: "x_free", Name: "F", Price: 100, Capacity: ptr[int64](1)}}
	if err := apply(t, s, ev); err != nil {
		t.Fatal(err)
	}

	// Three pending orders of tk (capacity 2): reserve claims nothing, so
	// all three are accepted; one is paid before tk is removed.
	tk := []string{
		reserve(t, o, "ev1", map[string]int64{"t:tk": 1, "ev": 1, "sh:sh_b": 1}),
		reserve(t, o, "ev1", map[string]int64{"t:tk": 1, "ev": 1, "sh:sh_b": 1}),
		reserve(t, o, "ev1", map[string]int64{"t:tk": 1, "ev": 1, "sh:sh_b": 1}),
	}
	if got := confirm(o, tk[0]); got != "paid" {
		t.Fatalf("first tk order: %s", got)
	}
	xGone := reserve(t, o, "ev1", map[string]int64{"t:tk_keep": 1, "x:x_gone": 1, "ev": 1, "sh:sh_b": 1})
	shGone := reserve(t, o, "ev1", map[string]int64{"t:tk_keep": 1, "ev": 1, "sh:sh_a": 1})
	xFree := reserve(t, o, "ev1", map[string]int64{"t:tk_keep": 1, "x:x_free": 1, "ev": 1, "sh:sh_b": 1})
	xFree2 := reserve(t, o, "ev1", map[string]int64{"t:tk_keep": 1, "x:x_free": 1, "ev": 1, "sh:sh_b": 1})

	// Re-apply without tk, x_gone and sh_a; the event cap and x_free's cap dropped.
	ev.Capacity = nil
	ev.Showings = ev.Showings[1:]
	ev.Tickets = ev.Tickets[1:]
	ev.Extras = []catalog.Extra{{ID: "x_free", Name: "F", Price: 100}}
	if err := apply(t, s, ev); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{tk[1], tk[2], xGone, shGone} {
		if got := confirm(o, id); got != "CONFIRM_FAILED sold_out" {
			t.Fatalf("pending order of a removed object: %s, want CONFIRM_FAILED sold_out", got)
		}
	}
	// x_free is uncapped now: both its orders are paid, past its old cap of 1.
	for _, id := range []string{xFree, xFree2} {
		if got := confirm(o, id); got != "paid" {
			t.Fatalf("order of an extra made uncapped: %s", got)
		}
	}
	sold, _ := s.Redis.Do(context.Background(), s.Redis.B().Hgetall().Key(s.Space.Sold("ev1")).Build()).AsIntMap()
	if sold["t:tk"] != 1 || sold["x:x_gone"] != 0 || sold["sh:sh_a"] != 0 || sold["x:x_free"] != 2 {
		t.Fatalf("sold: %v", sold)
	}
	want := map[string]int64{"t:tk": 1, "x:x_gone": 0, "sh:sh_a": 0, "t:tk_keep": 5, "sh:sh_b": 50}
	if got := caps(t, s, "ev1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("capacities after removal: %v, want %v", got, want)
	}

	// Applying the same document again changes nothing.
	if err := apply(t, s, ev); err != nil {
		t.Fatal(err)
	}
	if got := caps(t, s, "ev1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("capacities after re-apply: %v, want %v", got, want)
	}

	// Re-adding tk below what it sold is still refused; at or above it is taken.
	again := ev
	again.Tickets = append([]catalog.Ticket{{ID: "tk", Name: "T", Price: 1000, Capacity: 0}}, ev.Tickets...)
	err := apply(t, s, again)
	var ve *catalog.ValidationError
	if !errors.As(err, &ve) || ve.Path != "tenants[0].events[0].tickets[0].capacity" {
		t.Fatalf("re-adding tk below its sold count: %v", err)
	}
	again.Tickets[0].Capacity = 3
	if err := apply(t, s, again); err != nil {
		t.Fatal(err)
	}
	if got := caps(t, s, "ev1")["t:tk"]; got != 3 {
		t.Fatalf("re-added tk has capacity %d, want 3", got)
	}
}

// GA areas and tables removed from a seat map are frozen the same way.
func TestRemovedAreasAndTablesKeepTheirSoldCount(t *testing.T) {
	s, o := setup(t)
	ev := event("ev2")
	ev.SeatMap = &catalog.SeatMap{
		Categories: []catalog.Category{{ID: "c", Name: "C", Price: ptr[money.Cents](1000)}},
		Rows:       []catalog.Row{{Label: "A", Seats: 2, Category: "c"}},
		GAAreas:    []catalog.GAArea{{ID: "floor", Name: "Floor", Capacity: 1, Category: "c"}},
		Tables:     []catalog.Table{{ID: "T1", Seats: 4, Category: "c"}},
	}
	if err := apply(t, s, ev); err != nil {
		t.Fatal(err)
	}
	area := reserve(t, o, "ev2", map[string]int64{"a:floor": 1, "ev": 1})
	table := reserve(t, o, "ev2", map[string]int64{"tb:T1": 1, "ev": 4})
	ev.SeatMap.GAAreas, ev.SeatMap.Tables = nil, nil
	if err := apply(t, s, ev); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{area, table} {
		if got := confirm(o, id); got != "CONFIRM_FAILED sold_out" {
			t.Fatalf("pending order of a removed area or table: %s, want CONFIRM_FAILED sold_out", got)
		}
	}
	if got := caps(t, s, "ev2"); got["a:floor"] != 0 || got["tb:T1"] != 0 || len(got) != 2 {
		t.Fatalf("capacities after removal: %v", got)
	}
}
