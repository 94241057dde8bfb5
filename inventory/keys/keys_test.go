package keys

import (
	"hash/fnv"
	"strings"
	"testing"
)

// slotTag returns the hash tag Redis Cluster hashes for key k.
func slotTag(k string) string {
	i := strings.IndexByte(k, '{')
	if i < 0 {
		return k
	}
	j := strings.IndexByte(k[i+1:], '}')
	if j <= 0 {
		return k
	}
	return k[i+1 : i+1+j]
}

func TestEventKeysShareOneSlot(t *testing.T) {
	s := Space{Prefix: "test:"}
	ev := "ev_summer"
	oid := OrderID(ev, "abc123")
	ok, _ := s.Order(oid)
	all := []string{s.Caps(ev), s.Sold(ev), s.Booked(ev), s.SeatHolds(ev), s.OrderSeats(ev), s.RegSeats(ev), s.Hold(ev, "tok"),
		s.DiscountUsed(ev), s.DiscountHolds(ev), s.DiscountHeld(ev), ok, s.Paid(Partition(ev))}
	want := slotTag(all[0])
	for _, k := range all {
		if slotTag(k) != want {
			t.Fatalf("key %q has tag %q, want %q", k, slotTag(k), want)
		}
	}
}

// Partitions are FNV-1a of the event id: changing them would move every
// event's keys to another slot.
func TestPartitionIsFNV1a(t *testing.T) {
	for _, ev := range []string{"", "a", "ev_summer", "ev_demo_ga", strings.Repeat("x", 64)} {
		h := fnv.New32a()
		h.Write([]byte(ev))
		if got, want := Partition(ev), int(h.Sum32()%Partitions); got != want {
			t.Fatalf("Partition(%q) = %d, want %d", ev, got, want)
		}
	}
	if Tag(7) != "{p7}" {
		t.Fatalf("Tag(7) = %q", Tag(7))
	}
}

func TestOrderIDNamesItsEvent(t *testing.T) {
	for _, ev := range []string{"a", "ev_summer", "ev.seated-2", strings.Repeat("x", 64)} {
		id := OrderID(ev, "k3j9")
		got, ok := OrderEvent(id)
		if !ok || got != ev {
			t.Fatalf("OrderEvent(%q) = %q,%v want %q", id, got, ok, ev)
		}
		if len(OrderID(ev, strings.Repeat("a", 40))) > MaxOrderID {
			t.Fatalf("order id of %q longer than MaxOrderID", ev)
		}
	}
	for _, bad := range []string{"", "o", "o.", "oabc", "oabc.", "x01.ev", "o.ev", "oAB.ev", "oab.e{v}", "oab.e:v",
		"o" + strings.Repeat("a", 41) + ".ev", "oab." + strings.Repeat("x", 65)} {
		if ev, ok := OrderEvent(bad); ok {
			t.Fatalf("OrderEvent accepted %q as event %q", bad, ev)
		}
		if _, ok := (Space{}).Order(bad); ok {
			t.Fatalf("Order accepted %q", bad)
		}
	}
}
