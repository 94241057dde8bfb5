package keys

import (
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
	all := []string{s.Caps(ev), s.Sold(ev), s.Booked(ev), s.Seat(ev, "A-1"), s.Hold(ev, "tok"),
		s.DiscountUsed(ev), s.DiscountHolds(ev, "EARLY"), ok, s.Paid(Partition(ev))}
	want := slotTag(all[0])
	for _, k := range all {
		if slotTag(k) != want {
			t.Fatalf("key %q has tag %q, want %q", k, slotTag(k), want)
		}
	}
}

func TestOrderPartitionRoundTrip(t *testing.T) {
	for _, ev := range []string{"a", "ev_summer", "ev_seated", strings.Repeat("x", 60)} {
		id := OrderID(ev, "k3j9")
		p, ok := OrderPartition(id)
		if !ok || p != Partition(ev) {
			t.Fatalf("OrderPartition(%q) = %d,%v want %d", id, p, ok, Partition(ev))
		}
	}
	for _, bad := range []string{"", "o", "x01abc", "o99abc", "o0xabc", "o01AB", "o01a{b}"} {
		if _, ok := OrderPartition(bad); ok {
			t.Fatalf("accepted %q", bad)
		}
	}
}
