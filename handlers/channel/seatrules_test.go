package channel_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// ev_rules has the strict single-seat rule: row A (10 seats), row B (6).
const rulesBase = "/v1/channel/seating/events/ev_rules"

func refusedByRule(t *testing.T, r *servertest.Response, seat, where string) {
	t.Helper()
	expect(t, r, 409, "SEAT_RULE")
	var d struct{ SeatLabel string }
	r.Decode(t, &d)
	want := fmt.Sprintf("this choice would leave seat %s alone %s; add %s or pick other seats", seat, where, seat)
	if d.SeatLabel != seat || r.Message != want {
		t.Fatalf("got seatLabel %q, message %q; want %s, %q", d.SeatLabel, r.Message, seat, want)
	}
}

func keyedToken(t *testing.T, s *servertest.Server) string {
	t.Helper()
	return keyedTokenOn(t, s, rulesBase)
}

type bestHeld struct {
	HoldToken  string
	SeatLabels []string
	Subtotal   float64
	ExpiresAt  string
}

func decodeHeld(t *testing.T, r *servertest.Response) bestHeld {
	t.Helper()
	expect(t, r, 200, "")
	var h bestHeld
	r.Decode(t, &h)
	if h.HoldToken == "" || h.ExpiresAt == "" {
		t.Fatalf("hold answer without token or expiry: %s", r)
	}
	return h
}

// The partner surface meets the same rule as the storefront, from a buyer
// session and from a keyed caller: it is the hold script's.
func TestSeatRuleOnThePartnerSurface(t *testing.T) {
	s := start(t, servertest.Options{})
	sess := session(t, s, "a", "Rita")
	tok := keyedToken(t, s)
	hold := func(h map[string]string, body map[string]any) *servertest.Response {
		return s.Do(t, "POST", rulesBase+"/hold", h, body)
	}
	refusedByRule(t, hold(sess, map[string]any{"seatLabels": []string{"A-2"}}), "A-1", "at the end of its row")
	refusedByRule(t, hold(keyed("a"), map[string]any{"holdToken": tok, "seatLabels": []string{"A-9"}}), "A-10", "at the end of its row")
	expect(t, hold(keyed("a"), map[string]any{"holdToken": tok, "seatLabels": []string{"A-4", "A-5"}}), 200, "")
	refusedByRule(t, hold(sess, map[string]any{"seatLabels": []string{"A-7"}}), "A-6", "between taken seats")
	refusedByRule(t, hold(keyed("a"), map[string]any{"holdToken": tok, "seatLabels": []string{"A-1", "A-2"}}), "A-3", "between taken seats")
	// Up to the taken seats, or leaving a gap of two, is fine.
	expect(t, hold(sess, map[string]any{"seatLabels": []string{"A-1", "A-2", "A-3"}}), 200, "")
	expect(t, hold(sess, map[string]any{"seatLabels": []string{"A-8"}}), 200, "")
	av := s.Do(t, "GET", rulesBase+"/availability", keyed("a"), nil)
	var d struct{ Held []string }
	av.Decode(t, &d)
	slices.Sort(d.Held)
	if !slices.Equal(d.Held, []string{"A-1", "A-2", "A-3", "A-4", "A-5", "A-8"}) {
		t.Fatalf("held %v", d.Held)
	}
	cfg := s.Do(t, "GET", rulesBase+"/config", sess, nil)
	var c struct{ SingleSeatRule string }
	cfg.Decode(t, &c)
	if c.SingleSeatRule != "strict" {
		t.Fatalf("config: %s", cfg.Data)
	}
}

// best-available from a buyer session holds under the session's own token
// (the one its reserve uses); a keyed caller gets a new token or names
// its own; the write needs orders:write.
func TestBestAvailableOnThePartnerSurface(t *testing.T) {
	s := start(t, servertest.Options{})
	tok := keyedToken(t, s)
	expect(t, s.Do(t, "POST", rulesBase+"/hold", keyed("a"), map[string]any{"holdToken": tok, "seatLabels": []string{"A-4", "A-5"}}), 200, "")

	// Strict, A-4 and A-5 taken: is the best block that strands
	// nothing (A-1/A-2 strands  A-6, ...).
	sess := session(t, s, "a", "Ben")
	h := decodeHeld(t, s.Do(t, "POST", rulesBase+"/best-available", sess, map[string]any{"quantity": 2}))
	if !slices.Equal(h.SeatLabels, []string{"A-6", "A-7"}) || h.Subtotal != 80 {
		t.Fatalf("session best 2: %+v, want A-6, A-7 for 80", h)
	}
	// They are the session's: its reserve takes them without naming a token.
	o := s.Do(t, "POST", "/v1/channel/events/ev_rules/checkout", with(sess, "Idempotency-Key", "best-1"),
		map[string]any{"seatLabels": h.SeatLabels})
	expect(t, o, 200, "")
	// Naming another token inside a session is refused.
	expect(t, s.Do(t, "POST", rulesBase+"/best-available", sess, map[string]any{"quantity": 1, "holdToken": tok}), 400, "INVALID_HOLD_TOKEN")

	// Keyed, no token: a new one; with its token: added to its hold.
	// A-1..A-3 and A-8..A-10 are the free runs of row A now.
	k := decodeHeld(t, s.Do(t, "POST", rulesBase+"/best-available", keyed("a"), map[string]any{"quantity": 3}))
	if k.HoldToken == tok || k.HoldToken == h.HoldToken || !slices.Equal(k.SeatLabels, []string{"A-1", "A-2", "A-3"}) {
		t.Fatalf("keyed best 3: %+v, want A-1..A-3 under a new token", k)
	}
	// A pair in A-8..A-10 would strand a seat: row B's middle it is.
	k = decodeHeld(t, s.Do(t, "POST", rulesBase+"/best-available", keyed("a"), map[string]any{"quantity": 2, "holdToken": tok}))
	if k.HoldToken != tok || !slices.Equal(k.SeatLabels, []string{"A-4", "A-5", "B-3", "B-4"}) || k.Subtotal != 160 {
		t.Fatalf("keyed best 2 under its token: %+v, want A-4, A-5, B-3, B-4 for 160", k)
	}
	expect(t, s.Do(t, "POST", rulesBase+"/best-available", keyed("a"), map[string]any{"quantity": 11}), 400, "INVALID_REQUEST")
	r := s.Do(t, "POST", rulesBase+"/best-available", keyed("a"), map[string]any{"quantity": 10})
	expect(t, r, 409, "SEAT_CONFLICT")
	if string(r.Data) != `{"conflicts":[]}` {
		t.Fatalf("no block: data %s", r.Data)
	}
	// A channel without orders:write may not.
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/ev_ga/best-available", keyed("scope"), map[string]any{"quantity": 1}), 403, "SCOPE_DENIED")
}
