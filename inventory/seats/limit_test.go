package seats

import (
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// A hold token holds at most the event's maxPerOrder seats (a hold is for
// one order): the probe's picker token took 100 seats; with no maxPerOrder
// in the catalog it now takes 10, one request at a time or all at once,
// and best-available picks no more. Refused with the cart's code.
func TestATokenHoldsAtMostMaxPerOrderSeats(t *testing.T) {
	b := setup(t)
	ev := b.evs["ev_crowd"] // row C of 20 seats, no maxPerOrder
	if MaxPerToken(ev) != catalog.DefaultMaxPerOrder {
		t.Fatalf("MaxPerToken %d, want the default maxPerOrder %d", MaxPerToken(ev), catalog.DefaultMaxPerOrder)
	}
	tok := b.token(t, ev.ID)
	eleven := []string{"C-1", "C-2", "C-3", "C-4", "C-5", "C-6", "C-7", "C-8", "C-9", "C-10", "C-11"}
	ae := apiErr(t, errOf(b.eng.Hold(b.ctx, ev, tok, eleven)), 400, "MAX_PER_ORDER_EXCEEDED")
	if ae.Fields["maxPerOrder"] != int64(10) {
		t.Fatalf("fields %v", ae.Fields)
	}
	for _, l := range eleven[:10] {
		if _, err := b.eng.Hold(b.ctx, ev, tok, []string{l}); err != nil {
			t.Fatalf("hold %s: %v", l, err)
		}
	}
	apiErr(t, errOf(b.eng.Hold(b.ctx, ev, tok, eleven[10:])), 400, "MAX_PER_ORDER_EXCEEDED")
	if v := b.get(t, b.sp.Seat(ev.ID, "C-11")); v != "" {
		t.Fatalf("C-11 held beyond the limit: %q", v)
	}
	if got := b.seatsOf(t, ev.ID, tok); len(got) != 10 {
		t.Fatalf("token holds %d seats", len(got))
	}
	// seats it holds already do not count twice
	if _, err := b.eng.Hold(b.ctx, ev, tok, eleven[:3]); err != nil {
		t.Fatalf("holding its own seats again: %v", err)
	}

	// best-available: no more than the limit in one call, nor on a token
	// that would pass it
	small := b.limited(t, 3)
	apiErr(t, errOf(b.eng.BestAvailable(b.ctx, small, BestRequest{Quantity: 4, Token: NewToken(), Create: true})), 400, "MAX_PER_ORDER_EXCEEDED")
	tok2 := NewToken()
	if _, err := b.eng.BestAvailable(b.ctx, small, BestRequest{Quantity: 2, Token: tok2, Create: true}); err != nil {
		t.Fatal(err)
	}
	apiErr(t, errOf(b.eng.BestAvailable(b.ctx, small, BestRequest{Quantity: 2, Token: tok2})), 400, "MAX_PER_ORDER_EXCEEDED")
	if got := b.seatsOf(t, small.ID, tok2); len(got) != 2 {
		t.Fatalf("token holds %v after a refused best-available", got)
	}
}

// limited is ev_crowd's seat map as an event of its own with maxPerOrder n.
func (b *bundle) limited(t *testing.T, n int64) *catalog.CompiledEvent {
	t.Helper()
	crowd := *b.evs["ev_crowd"].Event
	crowd.ID, crowd.MaxPerOrder = "ev_small", &n
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: "t1", Events: []catalog.Event{crowd}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Events["ev_small"]
}
