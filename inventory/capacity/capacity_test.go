package capacity

import "testing"

func TestRemainingAndTicket(t *testing.T) {
	rem := Remaining(map[string]int64{"ev": 10, "t:a": 8, "t:b": 3}, map[string]int64{"ev": 6, "t:a": 1, "t:b": 3})
	if rem["ev"] != 4 || rem["t:a"] != 7 || rem["t:b"] != 0 {
		t.Fatalf("remaining %v", rem)
	}
	for id, want := range map[string]int64{"a": 4, "b": 0} { // a bounded by the event, b sold out
		if got, ok := Ticket(rem, id); !ok || got != want {
			t.Errorf("ticket %s: %d %v, want %d", id, got, ok, want)
		}
	}
	if _, ok := Ticket(rem, "c"); ok {
		t.Error("a ticket without a cap reported capped")
	}
	if Left(5, 7) != 0 {
		t.Error("left below zero")
	}
}
