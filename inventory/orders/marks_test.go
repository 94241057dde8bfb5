package orders

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/soldmarks"
)

// Each paid confirm reports the event's units ever paid (the sold hash's
// "paid", raised by the order's admissions) and the units it added, a
// duplicate the current value and none added, and a failed one nothing;
// each tells Paid its partition (the node's sync worker reads that paid
// stream at once); a held event refuses reserves.
func TestConfirmReportsPaidUnits(t *testing.T) {
	s, ctx := setup(t)
	var parts []int
	s.Paid = func(p int) { parts = append(parts, p) }
	var seen, added []int64
	s.Marks = func(ev string, paid, add int64) bool {
		if ev != "ev" {
			t.Errorf("mark of %q", ev)
		}
		seen, added = append(seen, paid), append(added, add)
		return false
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
	if len(seen) != 3 || seen[0] != 3 || seen[1] != 5 || seen[2] != 5 || added[0] != 3 || added[1] != 2 || added[2] != 0 {
		t.Fatalf("reported %v added %v, want [3 5 5] added [3 2 0]", seen, added)
	}
	if p := keys.Partition("ev"); !slices.Equal(parts, []int{p, p, p}) {
		t.Fatalf("paid partitions told %v, want [%d %d %d]", parts, p, p, p)
	}
	sold, _ := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Sold("ev")).Build()).AsIntMap()
	if sold["paid"] != 5 || sold["ev"] != 5 {
		t.Fatalf("sold %v", sold)
	}
	if left, err := s.Remaining(ctx, "ev", capacity.Storefront); err != nil || left["ev"] != 1 || len(left) != 1 {
		t.Fatalf("remaining %v %v", left, err)
	}

	s.Held = func(ev string) *apierr.Error { return apierr.Of("SALES_HELD", "held") }
	if _, err := s.Reserve(ctx, req("ev", map[string]int64{"ev": 1})); code(err) != "SALES_HELD" {
		t.Fatalf("reserve of a held event: %v", err)
	}
}

// A Redis that went back hands out paid units again: the confirm that gets
// units the node's book saw sold before is answered ErrRolledBack (503,
// not paid), the monitor is told, and the book's mark counts the sale on
// top of what it saw.
func TestConfirmOnARolledBackRedisStopsSales(t *testing.T) {
	s, ctx := setup(t)
	book := &soldmarks.Book{}
	s.Marks = book.Saw
	var told string
	s.RolledBack = func(reason string) { told = reason }
	caps(t, s, "ev", "ev", "10")
	for range 3 {
		r, err := s.Reserve(ctx, req("ev", map[string]int64{"ev": 1}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := confirm(ctx, s, r.OrderID, "p"); err != nil {
			t.Fatal(err)
		}
	}
	// The rollback: Redis lost the last two payments' counts.
	if err := s.Redis.Do(ctx, s.Redis.B().Hset().Key(s.Space.Sold("ev")).FieldValue().FieldValue("paid", "1").FieldValue("ev", "1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Reserve(ctx, req("ev", map[string]int64{"ev": 1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := confirm(ctx, s, r.OrderID, "p"); !errors.Is(err, ErrRolledBack) {
		t.Fatalf("a confirm handed unit 2 again: %v, want ErrRolledBack", err)
	}
	if !strings.Contains(told, "ev") {
		t.Fatalf("RolledBack told %q, want the event named", told)
	}
	if m := book.Marks()["ev"]; m != 4 {
		t.Fatalf("mark %d, want 4 (the 3 seen and this sale)", m)
	}
}
