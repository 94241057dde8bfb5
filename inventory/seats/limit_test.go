package seats

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/along"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/holds"
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
	if ae.Fields["maxPerOrder"] != int64(10) || !strings.Contains(ae.Message, "at most 10 seats for this event") {
		t.Fatalf("fields %v, message %q", ae.Fields, ae.Message)
	}
	for _, l := range eleven[:10] {
		if _, err := b.eng.Hold(b.ctx, ev, tok, []string{l}); err != nil {
			t.Fatalf("hold %s: %v", l, err)
		}
	}
	apiErr(t, errOf(b.eng.Hold(b.ctx, ev, tok, eleven[10:])), 400, "MAX_PER_ORDER_EXCEEDED")
	if v := b.seat(t, ev.ID, "C-11"); v != "" {
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

// A token best-available made and could hold nothing with reaches no
// buyer: it is dropped and stops counting for its client at once, while a
// token that holds seats is kept. Under a rush of best-available calls on
// few seats, every token still counted for the client is one that holds
// seats.
func TestBestAvailableLeavesNoCountedTokenItDidNotHand(t *testing.T) {
	b := setup(t)
	ev := b.limited(t, 4)
	client := holds.For(nil, "203.0.113.7", 1000)
	live := func() map[string]bool {
		t.Helper()
		m, err := b.rc.Do(b.ctx, b.rc.B().Zrange().Key(b.sp.IPTokens(ev.ID, client.Key)).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tok := range m {
			out[tok] = true
		}
		return out
	}

	// dropToken itself: an empty token goes, one holding a seat stays.
	empty, full := NewToken(), NewToken()
	for _, tok := range []string{empty, full} {
		if _, err := b.eng.CreateTokenFor(b.ctx, ev.ID, tok, client); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.eng.Hold(b.ctx, ev, full, []string{"C-1"}); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{empty, full} {
		if err := b.eng.dropToken(b.ctx, ev.ID, tok, client); err != nil {
			t.Fatal(err)
		}
	}
	if got := live(); got[empty] || !got[full] || b.seat(t, ev.ID, "C-1") != "h:"+full {
		t.Fatalf("after dropping: counted %v, C-1 %q; want only the token holding C-1", got, b.seat(t, ev.ID, "C-1"))
	}
	if n, err := b.rc.Do(b.ctx, b.rc.B().Exists().Key(b.sp.Hold(ev.ID, empty)).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("the dropped token still exists (%v)", err)
	}

	// Only a token the call made is dropped: one that existed (a buyer
	// session's own, from hold-token) is the caller's.
	own := NewToken()
	if _, fresh, err := b.eng.createToken(b.ctx, ev.ID, own, client, nil); err != nil || !fresh {
		t.Fatalf("a new token: made %v, %v", fresh, err)
	}
	if _, fresh, err := b.eng.createToken(b.ctx, ev.ID, own, client, nil); err != nil || fresh {
		t.Fatalf("an existing token: made %v, %v; best-available would drop it", fresh, err)
	}
	if err := b.eng.dropToken(b.ctx, ev.ID, own, client); err != nil {
		t.Fatal(err)
	}

	// A rush: 40 calls for 4 seats each on a row of 20 (C-1 taken).
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = b.eng.BestAvailable(b.ctx, ev, BestRequest{Quantity: 4, Token: NewToken(), Create: true, Client: client})
		}()
	}
	wg.Wait()
	for tok := range live() {
		if len(b.seatsOf(t, ev.ID, tok)) == 0 {
			t.Errorf("token %s is counted for the client and holds nothing", tok)
		}
	}
}

// A rate limit the node decided alone (no commands to send, a leased
// limit: handlers/ratelimit) refuses a best-available that makes its
// token before anything is read or held; it was never settled there.
func TestBestAvailableTakesANodeDecidedLimitFirst(t *testing.T) {
	b := setup(t)
	ev := b.evs["ev_crowd"]
	refused := apierr.Of("RATE_LIMITED", "slow down")
	tok := NewToken()
	_, err := b.eng.BestAvailable(b.ctx, ev, BestRequest{Quantity: 2, Token: tok, Create: true,
		Along: along.Along{Settle: func([]rueidis.RedisResult) error { return refused }}})
	if !errors.Is(err, refused) {
		t.Fatalf("best-available over a node-decided limit: %v, want the refusal", err)
	}
	if got := b.seatsOf(t, ev.ID, tok); len(got) != 0 {
		t.Fatalf("a refused best-available held %v", got)
	}
}

// A refusal counts seats in words a buyer reads: one seat, not "1 seats".
func TestSeatCountSaysOneSeat(t *testing.T) {
	for n, want := range map[int64]string{1: "1 seat", 2: "2 seats", 10: "10 seats"} {
		if got := seatCount(n); got != want {
			t.Errorf("seatCount(%d) = %q, want %q", n, got, want)
		}
	}
}
