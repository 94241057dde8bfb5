package channel_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// TestSecurityChannelCannotTouchAnotherChannelsOrder: ch_slow sells ev_ga
// beside ch_a, with a signing key of its own. It confirms and reads ch_a's
// order, pending, paid, and once only Postgres has it, correctly signed
// with its own key; ch_b, which does not sell ev_ga, does the same. Every
// answer is byte for byte the answer to an order id ticketd never made,
// and ch_a's order is neither paid nor failed by it. A storefront
// registration is no order of any channel either.
func TestSecurityChannelCannotTouchAnotherChannelsOrder(t *testing.T) {
	t.Parallel()
	s := start(t, servertest.Options{})
	o := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 1})
	unknownID := "o" + strings.Repeat("b", 24) + ".ev_ga"

	same := func(what string, got, want *servertest.Response) {
		t.Helper()
		if got.Status != 404 || !bytes.Equal(got.Body, want.Body) {
			t.Errorf("%s: %s, want the unknown order's %s", what, got, want)
		}
	}
	strangers := func(stage string) {
		t.Helper()
		for _, ch := range []string{"slow", "b"} {
			same(stage+": "+ch+" confirms ch_a's order", confirm(t, s, ch, o.OrderID, o.Amount, "ref-"+ch),
				confirm(t, s, ch, unknownID, o.Amount, "ref-"+ch))
			same(stage+": "+ch+" reads ch_a's order", s.Status(t, ch, o.OrderID), s.Status(t, ch, unknownID))
		}
	}
	strangers("pending")
	if st := s.Status(t, "a", o.OrderID); !strings.Contains(string(st.Data), `"status":"pending"`) {
		t.Fatalf("after the strangers' confirms ch_a's order is %s, want pending", st)
	}
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "ref-a"), 200, "")
	strangers("paid")

	// Once Redis forgets the order, Postgres answers, for its channel only.
	s.Drain(t)
	okey, _ := s.Space.Order(o.OrderID)
	if err := s.Redis.Do(context.Background(), s.Redis.B().Del().Key(okey).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	strangers("in Postgres only")
	if st := s.Status(t, "a", o.OrderID); !strings.Contains(string(st.Data), `"status":"paid"`) {
		t.Fatalf("ch_a's own order from Postgres: %s", st)
	}

	// A storefront registration of the same tenant is no channel's order.
	reg := s.Do(t, "POST", "/v1/storefront/register-guest", map[string]string{"x-service-key": "pk_t1", "Origin": "http://localhost"},
		map[string]any{"eventId": "ev_ga", "name": "Grace Hopper", "email": "grace@example.com", "selectedTicketId": "tk_b"})
	expect(t, reg, 200, "")
	var r servertest.Registered
	reg.Decode(t, &r)
	same("ch_a reads a storefront registration", s.Status(t, "a", r.RegistrationID), s.Status(t, "a", unknownID))
	same("ch_a confirms a storefront registration", confirm(t, s, "a", r.RegistrationID, r.Total, "ref-sf"),
		confirm(t, s, "a", unknownID, r.Total, "ref-sf"))
	// And the storefront does not read a channel's order as a registration.
	front := map[string]string{"x-service-key": "pk_t1", "Origin": "http://localhost"}
	unknownReg := s.Do(t, "GET", "/v1/storefront/registration/"+unknownID, front, nil)
	expect(t, unknownReg, 404, "NOT_FOUND")
	if got := s.Do(t, "GET", "/v1/storefront/registration/"+o.OrderID, front, nil); got.Status != 404 || !bytes.Equal(got.Body, unknownReg.Body) {
		t.Errorf("the storefront reads ch_a's order: %s, want %s", got, unknownReg.Body)
	}
}

// TestSecurityChannelSeesOnlyItsEvents: ch_b does not sell ev_ga or
// ev_seated. Every partner endpoint that takes an event, the seat
// endpoints with ch_a's live hold token among them, answers ch_b for them
// byte for byte as for an event that does not exist, and ch_a's hold is
// untouched.
func TestSecurityChannelSeesOnlyItsEvents(t *testing.T) {
	t.Parallel()
	s := start(t, servertest.Options{})
	a, b := keyed("a"), keyed("b")
	ht := s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold-token", a, map[string]any{})
	expect(t, ht, 200, "")
	var tok struct{ HoldToken string }
	ht.Decode(t, &tok)
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold", a,
		map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"A-1"}}), 200, "")

	type call struct {
		method, path string
		headers      map[string]string
		body         any
	}
	calls := []call{
		{"GET", "/v1/channel/events/%s", b, nil},
		{"POST", "/v1/channel/events/%s/quote", b, map[string]any{"selectedTicketId": "tk_a"}},
		{"POST", "/v1/channel/events/%s/checkout", with(b, "Idempotency-Key", "sec-1"), buyer(map[string]any{"selectedTicketId": "tk_a"})},
		{"GET", "/v1/channel/seating/events/%s/config", b, nil},
		{"GET", "/v1/channel/seating/events/%s/availability", b, nil},
		{"GET", "/v1/channel/seating/events/%s/hold/" + tok.HoldToken, b, nil},
		{"POST", "/v1/channel/seating/events/%s/hold-token", b, map[string]any{}},
		{"POST", "/v1/channel/seating/events/%s/hold", b, map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"A-2"}}},
		{"POST", "/v1/channel/seating/events/%s/hold/" + tok.HoldToken + "/extend", b, nil},
		{"POST", "/v1/channel/seating/events/%s/release", b, map[string]any{"holdToken": tok.HoldToken}},
		{"POST", "/v1/channel/seating/events/%s/best-available", b, map[string]any{"quantity": 1}},
		{"POST", "/v1/channel/events/%s/checkout", with(b, "Idempotency-Key", "sec-2"),
			buyer(map[string]any{"seatLabels": []string{"A-1"}, "seatHoldToken": tok.HoldToken})},
	}
	for _, c := range calls {
		unknown := s.Do(t, c.method, fmt.Sprintf(c.path, "ev_nope"), c.headers, c.body)
		if unknown.Status != 404 || unknown.Code != "EVENT_NOT_FOUND" {
			t.Errorf("%s %s of an unknown event: %s", c.method, c.path, unknown)
			continue
		}
		for _, ev := range []string{"ev_ga", "ev_seated", "ga1", "seated"} {
			r := s.Do(t, c.method, fmt.Sprintf(c.path, ev), c.headers, c.body)
			if r.Status != 404 || !bytes.Equal(r.Body, unknown.Body) {
				t.Errorf("ch_b: %s %s of %s: %s, want the unknown event's %s", c.method, c.path, ev, r, unknown.Body)
			}
		}
	}
	h := s.Do(t, "GET", "/v1/channel/seating/events/ev_seated/hold/"+tok.HoldToken, a, nil)
	expect(t, h, 200, "")
	if !strings.Contains(string(h.Data), `"seatLabels":["A-1"]`) {
		t.Fatalf("ch_a's hold after ch_b's calls: %s, want A-1 alone", h.Data)
	}
	expect(t, s.Do(t, "GET", "/v1/channel/events/ev_other", b, nil), 200, "")
}
