package orders

import (
	"testing"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// Each paid confirm reports the event's units ever paid (the sold hash's
// "paid", raised by the order's admissions), a duplicate the current
// value, and a failed one nothing; a held event refuses reserves.
func TestConfirmReportsPaidUnits(t *testing.T) {
	s, ctx := setup(t)
	var seen []int64
	s.Marks = func(ev string, paid int64) {
		if ev != "ev" {
			t.Errorf("mark of %q", ev)
		}
		seen = append(seen, paid)
	}
	caps(t, s, "ev", "ev", "6")
	r1, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 3, "ev": 3}))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 2, "ev": 2, "x:p": 1}))
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Reserve(ctx, req("ev", map[string]int64{"ev": 2}))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{r1.OrderID, r2.OrderID, r1.OrderID} {
		if _, err := confirm(ctx, s, id, "p"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := confirm(ctx, s, r3.OrderID, "p"); code(err) != "CONFIRM_FAILED" {
		t.Fatalf("over capacity: %v", err)
	}
	if len(seen) != 3 || seen[0] != 3 || seen[1] != 5 || seen[2] != 5 {
		t.Fatalf("reported %v, want [3 5 5]", seen)
	}
	sold, _ := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Sold("ev")).Build()).AsIntMap()
	if sold["paid"] != 5 || sold["ev"] != 5 {
		t.Fatalf("sold %v", sold)
	}
	if left, err := s.Remaining(ctx, "ev"); err != nil || left["ev"] != 1 || len(left) != 1 {
		t.Fatalf("remaining %v %v", left, err)
	}

	s.Held = func(ev string) *apierr.Error { return apierr.Of("SALES_HELD", "held") }
	if _, err := s.Reserve(ctx, req("ev", map[string]int64{"ev": 1})); code(err) != "SALES_HELD" {
		t.Fatalf("reserve of a held event: %v", err)
	}
}
