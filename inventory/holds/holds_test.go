package holds

import "testing"

// A client is counted only under a limit; one subscriber is one key, two
// are two, and the key names no address.
func TestForCountsOneKeyPerSubscriber(t *testing.T) {
	if For("203.0.113.9", 0).Counted() || For("", 8).Counted() {
		t.Fatal("a client counted with the limit off, or without an address")
	}
	a, b := For("203.0.113.9", 8), For("2001:db8:1:2::/64", 8)
	if !a.Counted() || a.Key == b.Key || a.Key != For("203.0.113.9", 3).Key {
		t.Fatalf("keys %q %q", a.Key, b.Key)
	}
	if a.LimitArg() != "8" || (Client{}).LimitArg() != "0" {
		t.Fatalf("limit args %q %q", a.LimitArg(), (Client{}).LimitArg())
	}
	if e := LimitError(8); e.Status != 409 || e.Code != "HOLD_LIMIT_REACHED" {
		t.Fatalf("%+v", e)
	}
}
