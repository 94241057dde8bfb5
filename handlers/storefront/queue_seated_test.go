package storefront_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// seatedRoomCatalog: sf_room_seats sells row A's 6 seats (row X is not for
// sale) through a waiting room whose T0 has passed, 2 seats a buyer; the
// partner channel ch_p lists it with allocation 0.
func seatedRoomCatalog() string {
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	soon := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	return fmt.Sprintf(`{"tenants": [{"id": "t_shop", "name": "Shop Host",
  "publishableKeys": [{"key": "pk_shop", "domains": ["shop.example.com"], "enabled": true}],
  "events": [
   {"id": "sf_room_seats", "shortId": "sfrs1", "slug": "room-seats", "name": "Seated Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_p"], "tickets": [],
    "seatMap": {"categories": [{"id": "stalls", "name": "Stalls", "price": 30}, {"id": "box", "name": "Box"}],
      "rows": [{"label": "A", "seats": 6, "category": "stalls"}, {"label": "X", "seats": 2, "category": "box"}]},
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "perBuyer": 2, "allocations": {"ch_p": 0}}}
  ]}],
 "channels": [
  {"id": "ch_p", "name": "Partner", "key": "ck_p", "secret": "cs_p_secret", "signingKey": "sk_p",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"}]}`, past, soon)
}

const seatedRoom = "sf_room_seats"

// seatCall is a storefront seat call of sf_room_seats with the pass in its
// x-queue-pass header ("": none).
func seatCall(t *testing.T, s *servertest.Server, pass, path string, body any) *servertest.Response {
	t.Helper()
	h := servertest.Shop()
	if pass != "" {
		h["x-queue-pass"] = pass
	}
	return s.Do(t, "POST", "/v1/storefront/seating/events/"+seatedRoom+path, h, body)
}

// passTokenOf makes the hold token of a pass (hold-token) and returns it.
func passTokenOf(t *testing.T, s *servertest.Server, pass string) string {
	t.Helper()
	r := seatCall(t, s, pass, "/hold-token", nil)
	expect(t, r, 200, "")
	var d struct{ HoldToken string }
	r.Decode(t, &d)
	return d.HoldToken
}

func registerSeats(t *testing.T, s *servertest.Server, token, email string, labels ...string) *servertest.Response {
	t.Helper()
	return s.Front(t, "POST", "/register-guest",
		servertest.Guest(seatedRoom, map[string]any{"seatLabels": labels, "seatHoldToken": token, "email": email}))
}

// A seated event sells through its waiting room too: hold-token and
// best-available need a pass, which the token they make burns (a retry
// with it answers the same token, a second use of it is refused); the
// token holds at most the pass's seats, a token made without a pass holds
// none, and register-guest burns the place through the token, for the
// buyer who joined alone. A partner, with allocation 0, holds no seat.
func TestSeatedWaitingRoomOverHTTP(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(seatedRoomCatalog()))

	// no pass, no seats: nor through a token made elsewhere
	expect(t, seatCall(t, s, "", "/hold-token", nil), 403, "QUEUE_REQUIRED")
	expect(t, seatCall(t, s, "", "/best-available", map[string]any{"quantity": 1}), 403, "QUEUE_REQUIRED")
	partner := servertest.Keyed("p")
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/"+seatedRoom+"/hold-token", partner, nil), 403, "QUEUE_REQUIRED")
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/"+seatedRoom+"/hold", partner,
		map[string]any{"holdToken": "hpartnertoken1", "seatLabels": []string{"A-1"}}), 409, "HOLD_EXPIRED")

	ann := join(t, s, seatedRoom, "ann@example.com", 2)
	bob := join(t, s, seatedRoom, "bob@example.com", 2)
	cat := join(t, s, seatedRoom, "cat@example.com", 2)
	dan := join(t, s, seatedRoom, "dan@example.com", 1)
	if ann.State != "admitted" || bob.State != "admitted" || cat.State != "admitted" || dan.State != "waiting" {
		t.Fatalf("6 seats for 2+2+2+1: %s %s %s %s, want the first three admitted", ann.State, bob.State, cat.State, dan.State)
	}
	expect(t, seatCall(t, s, ann.Pass+"x", "/hold-token", nil), 403, "QUEUE_PASS_INVALID")

	tok := passTokenOf(t, s, ann.Pass)
	if again := passTokenOf(t, s, ann.Pass); again != tok {
		t.Fatalf("a retry with the pass: token %s, want the one it made, %s", again, tok)
	}
	if st := status(t, s, seatedRoom, ann); st.State != "admitted" || st.Pass != "" {
		t.Fatalf("ann once her pass made a token: %+v, want admitted, the pass used", st)
	}
	// the token holds the pass's 2 seats at most
	expect(t, hold(t, s, seatedRoom, tok, "A-1", "A-2", "A-3"), 400, "MAX_PER_ORDER_EXCEEDED")
	expect(t, hold(t, s, seatedRoom, tok, "A-1", "A-2"), 200, "")

	// bob's pass through best-available: its token is the pass's, and
	// holds 2 seats at most
	expect(t, seatCall(t, s, bob.Pass, "/best-available", map[string]any{"quantity": 3}), 400, "MAX_PER_ORDER_EXCEEDED")
	r := seatCall(t, s, bob.Pass, "/best-available", map[string]any{"quantity": 2})
	expect(t, r, 200, "")
	var best struct {
		HoldToken  string   `json:"holdToken"`
		SeatLabels []string `json:"seatLabels"`
	}
	r.Decode(t, &best)
	if len(best.SeatLabels) != 2 || best.HoldToken == "" {
		t.Fatalf("bob's best-available: %+v", best)
	}
	if again := passTokenOf(t, s, bob.Pass); again != best.HoldToken {
		t.Fatalf("hold-token with bob's pass: %s, want best-available's %s", again, best.HoldToken)
	}
	// a token made without a pass holds nothing here
	expect(t, seatCall(t, s, "", "/best-available", map[string]any{"quantity": 1, "holdToken": "hnopass0001"}), 409, "HOLD_EXPIRED")

	// register-guest burns the place through the token, for its own buyer
	expect(t, registerSeats(t, s, tok, "bob@example.com", "A-1", "A-2"), 403, "QUEUE_PASS_INVALID")
	expect(t, registerSeats(t, s, tok, "ann@example.com", "A-1", "A-2"), 200, "")
	expect(t, registerSeats(t, s, tok, "ann@example.com", "A-1"), 409, "QUEUE_PASS_USED")
	expect(t, seatCall(t, s, ann.Pass, "/hold-token", nil), 409, "QUEUE_PASS_USED")
	expect(t, hold(t, s, seatedRoom, tok, "A-5"), 409, "QUEUE_PASS_USED") // its token holds no more

	// ann's seats are registered, bob's held, cat's pass holds 2: dan waits
	if st := status(t, s, seatedRoom, dan); st.State != "waiting" {
		t.Fatalf("dan with every seat held or promised: %+v", st)
	}
}
