package orders

import (
	"slices"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/inventory/keys"
)

// The cached lists are the names keys.Space gives; only reserve fills the
// cache, and never beyond its bound.
func TestEventKeysCache(t *testing.T) {
	s := &Service{Space: keys.Space{Prefix: "x:"}}
	ev := "ev_keys"
	p := keys.Partition(ev)
	sp := s.Space
	want := []string{"", sp.Caps(ev), sp.Sold(ev), sp.Booked(ev), sp.Hold(ev, "-"), sp.DiscountHolds(ev),
		sp.DiscountUsed(ev), sp.Live(p), sp.Buyers(ev), sp.SeatHolds(ev), sp.OrderSeats(ev), sp.RegSeats(ev), sp.DiscountHeld(ev)}
	if got := s.keysOf(ev, false).sale; !slices.Equal(got, want) {
		t.Fatalf("sale keys %q, want %q", got, want)
	}
	if s.evKeys.n.Load() != 0 {
		t.Fatal("a confirm's event (the caller's order id) entered the cache")
	}
	k := s.keysOf(ev, true)
	if s.keysOf(ev, false) != k || s.evKeys.n.Load() != 1 {
		t.Fatal("a reserved event's keys are not cached")
	}
	ks := withOrder(k.confirm, "o", 0)
	ks[1] = "changed"
	if k.confirm[0] != "" || k.confirm[1] != sp.Caps(ev) || k.confirm[6] != sp.Paid(p) {
		t.Fatalf("a call's list changed the cached one: %q", k.confirm)
	}
	// A sale's own keys go into a copy: its hash, its hold token's.
	sale := s.SaleKeys(ev, "o1", "tok", 1)
	if sale[0] != "o1" || sale[4] != sp.Hold(ev, "tok") || k.sale[0] != "" || k.sale[4] != sp.Hold(ev, "-") || cap(sale) != len(want)+1 {
		t.Fatalf("SaleKeys %q (cap %d), cached %q", sale, cap(sale), k.sale)
	}
	for i := range maxCachedEvents + 10 {
		s.keysOf("ev_"+strconv.Itoa(i), true)
	}
	if n := s.evKeys.n.Load(); n > maxCachedEvents {
		t.Fatalf("%d events cached, bound %d", n, maxCachedEvents)
	}
}
