package orders

import (
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/along"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// A replay that finds the key gone (its attempt was refused or failed and
// gave it back after the replay read the claim) answers in progress and
// makes no order: the retry after it claims the key afresh, so one key
// makes one order.
func TestReplayOfAKeyGivenBackMakesNoOrder(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "10")
	r := req("ev", map[string]int64{"t:a": 1})
	r.DiscountCode, r.DiscountMaxUses = "ONCE", 5
	idem := s.Space.Idempotency(r.IdempotencyKey)
	given := s.newOrderID(r.EventID, r.ChannelID) // the refused attempt's order id, never made
	if _, err := s.replay(ctx, r, idem, given); !errors.Is(err, ErrInProgress) {
		t.Fatalf("replay of a key given back: %v, want in progress", err)
	}
	okey, _ := s.Space.Order(given)
	if n, _ := s.Redis.Do(ctx, s.Redis.B().Exists().Key(okey).Build()).AsInt64(); n != 0 {
		t.Fatal("the replay made the given-back attempt's order")
	}
	first, err := s.Reserve(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Reserve(ctx, r)
	if err != nil || again.OrderID != first.OrderID || !again.Duplicate {
		t.Fatalf("the retry after: %+v %v, want a replay of %s", again, err, first.OrderID)
	}
}

// A limit the node decides alone (no commands to send) is settled before
// anything is sent: refused, a reserve that takes a discount use claims no
// key; and a held event's reserve still sends the limit's commands.
func TestReserveSettlesItsLimitFirst(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "10")
	refused := apierr.Of("RATE_LIMITED", "slow down")
	r := req("ev", map[string]int64{"t:a": 1})
	r.DiscountCode, r.DiscountMaxUses = "ONCE", 5
	r.Along.Settle = func(answers []rueidis.RedisResult) error {
		if answers != nil {
			t.Errorf("a node-decided limit was given %d answers", len(answers))
		}
		return refused
	}
	// counted: a key claimed and given back leaves no key to find, but
	// costs its round trips
	plain := s.Redis
	s.Redis = roundtrips.Wrap(plain, nil)
	trips := &roundtrips.Counter{}
	if _, err := s.Reserve(roundtrips.With(ctx, trips), r); !errors.Is(err, refused) {
		t.Fatalf("reserve over a node-decided limit: %v, want the refusal", err)
	}
	if n := trips.Load(); n != 0 {
		t.Fatalf("a reserve refused by a node-decided limit made %d Redis round trips (claimed its key?), want none", n)
	}
	s.Redis = plain

	held := apierr.Of("SALES_HELD", "held")
	s.Held = func(string) *apierr.Error { return held }
	counter := s.Space.Prefix + "test:limit"
	r = req("ev", map[string]int64{"t:a": 1})
	settled := false
	r.Along = along.Along{Cmds: []rueidis.Completed{s.Redis.B().Incr().Key(counter).Build()},
		Settle: func(answers []rueidis.RedisResult) error { settled = len(answers) == 1; return nil }}
	if _, err := s.Reserve(ctx, r); !errors.Is(err, held) {
		t.Fatalf("reserve on a held event: %v", err)
	}
	if n, _ := s.Redis.Do(ctx, s.Redis.B().Get().Key(counter).Build()).AsInt64(); n != 1 || !settled {
		t.Fatalf("a held event's reserve sent its limit %d times (settled %v), want once", n, settled)
	}
}
