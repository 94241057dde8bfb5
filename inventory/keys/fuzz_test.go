package keys

import (
	"strings"
	"testing"
)

// FuzzOrderEvent checks the order id parser every order endpoint runs on
// client input before it builds a Redis key: no panic; what it accepts is
// an id OrderID makes (so it round-trips), within MaxOrderID, whose event
// id has no character that could break out of a key name or hash slot.
func FuzzOrderEvent(f *testing.F) {
	for _, s := range []string{"oabc.ev_ga", "o.ev", "oa.", "oA.ev", "oabc.ev:x", "oabc.{ev}", "oabc.ev.more", "x", "",
		"o" + strings.Repeat("a", 40) + ".e", "o" + strings.Repeat("a", 41) + ".e", "oa." + strings.Repeat("e", 65), "oa.é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		ev, ok := OrderEvent(id)
		if !ok {
			return
		}
		if !ValidID(ev) || strings.ContainsAny(ev, "{}: ") || len(id) > MaxOrderID {
			t.Fatalf("OrderEvent(%q) accepted event %q", id, ev)
		}
		random := id[1 : len(id)-len(ev)-1]
		if OrderID(ev, random) != id {
			t.Fatalf("OrderEvent(%q) = %q does not round-trip", id, ev)
		}
		if Partition(ev) < 0 {
			t.Fatalf("Partition(%q) < 0", ev)
		}
	})
}

// FuzzSessionRegistration checks the test processors' session id parser
// (the hosted pay pages' path parameter): no panic, and what it accepts
// carries a valid order id.
func FuzzSessionRegistration(f *testing.F) {
	for _, s := range []string{"cs_abc123_oabc.ev_ga", "cs__oabc.ev", "_a_oabc.ev", "cs_abc_", "cs_ABC_oabc.ev", "wp_x_oa.e", "", "cs_a_oa.e_b"} {
		f.Add(s)
	}
	sp := Space{Prefix: "fz:"}
	f.Fuzz(func(t *testing.T, id string) {
		reg, ok := SessionRegistration(id)
		key, kok := sp.PaySession(id)
		if ok != kok {
			t.Fatalf("SessionRegistration and PaySession disagree on %q", id)
		}
		if !ok {
			return
		}
		if _, ok := OrderEvent(reg); !ok || !strings.HasSuffix(id, "_"+reg) {
			t.Fatalf("SessionRegistration(%q) = %q", id, reg)
		}
		if strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
			t.Fatalf("PaySession(%q) = %q: more than one hash tag", id, key)
		}
	})
}
