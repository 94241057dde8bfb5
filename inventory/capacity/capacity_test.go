package capacity

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/eval"
)

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

// Every field a part's constructor builds splits back into its kind and
// id, and the event's own field is the event kind without an id.
func TestFieldsSplitBack(t *testing.T) {
	for _, c := range []struct {
		field string
		kind  Kind
		id    string
	}{
		{TicketField("tk_a"), KindTicket, "tk_a"}, {ShowingField("sh:1"), KindShowing, "sh:1"}, {ExtraField("x"), KindExtra, "x"},
		{AreaField("floor"), KindArea, "floor"}, {TableField("T1"), KindTable, "T1"}, {Event, KindEvent, ""},
	} {
		if k, id := Split(c.field); k != c.kind || id != c.id {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", c.field, k, id, c.kind, c.id)
		}
	}
	if TicketField("a") != "t:a" || TableField("b") != "tb:b" {
		t.Fatal("field names moved: the scripts and Redis' stored caps name them t:<id>, tb:<id>, ...")
	}
}

// The scripts spell two of the Go names in lib/capacity: a drift would
// make a room count the wrong field.
func TestTheScriptsSpellTheFieldsAsGo(t *testing.T) {
	src, err := eval.Source("lib/capacity")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"local CAPACITY_STOREFRONT = '" + Storefront + "'\n",
		"local CAPACITY_SHOWING = '" + string(KindShowing) + "'\n",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("lib/capacity lacks %q", want)
		}
	}
}
