package storefront_test

import (
	"bytes"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

func holdToken(t *testing.T, s *servertest.Server, event string) string {
	t.Helper()
	r := s.Front(t, "POST", "/seating/events/"+event+"/hold-token", nil)
	expect(t, r, 200, "")
	var d struct{ HoldToken string }
	r.Decode(t, &d)
	if d.HoldToken == "" {
		t.Fatalf("no hold token: %s", r)
	}
	return d.HoldToken
}

func hold(t *testing.T, s *servertest.Server, event, token string, labels ...string) *servertest.Response {
	t.Helper()
	return s.Front(t, "POST", "/seating/events/"+event+"/hold", map[string]any{"holdToken": token, "seatLabels": labels})
}

func TestSeatEndpointsBehindTheStorefrontGate(t *testing.T) {
	t.Parallel()
	s := start(t)
	// Found by slug, within the tenant, switched on.
	expect(t, s.Front(t, "GET", "/seating/events/hall/config", nil), 200, "")
	expect(t, s.Front(t, "GET", "/seating/events/sf_seated/availability", nil), 200, "")
	unknown := s.Front(t, "GET", "/seating/events/nope/config", nil)
	expect(t, unknown, 404, "EVENT_NOT_FOUND")
	foreign := s.Do(t, "GET", "/v1/storefront/seating/events/ot_ga/config", servertest.Shop(), nil)
	if foreign.Status != 404 || !bytes.Equal(foreign.Body, unknown.Body) {
		t.Fatalf("another tenant's event: %s, want the unknown event's %s", foreign, unknown)
	}
	expect(t, s.Front(t, "POST", "/seating/events/sf_off/hold-token", nil), 403, "EVENT_NOT_PUBLIC")
	expect(t, s.Do(t, "POST", "/v1/storefront/seating/events/sf_seated/hold-token", headers("Origin", servertest.ShopOrigin), nil), 401, "MISSING_KEY")
	expect(t, s.Do(t, "POST", "/v1/storefront/seating/events/sf_seated/hold-token",
		headers("x-service-key", "pk_shop", "Origin", "https://shop.example.com.evil.test"), nil), 403, "ORIGIN_NOT_ALLOWED")
	expect(t, s.Front(t, "GET", "/seating/events/sf_ga/config", nil), 400, "NOT_SEATED")
}

func TestSeatConflictAndUnpricedSeatsOnTheStorefront(t *testing.T) {
	t.Parallel()
	s := start(t)
	first, second := holdToken(t, s, "sf_seated"), holdToken(t, s, "hall")
	r := hold(t, s, "sf_seated", first, "A-1", "A-2")
	expect(t, r, 200, "")
	var h struct {
		SeatLabels []string
		Subtotal   float64
	}
	r.Decode(t, &h)
	if len(h.SeatLabels) != 2 || h.Subtotal != 80 {
		t.Fatalf("hold = %+v, want A-1, A-2 for 80", h)
	}
	c := hold(t, s, "sf_seated", second, "A-2", "A-3")
	expect(t, c, 409, "SEAT_CONFLICT")
	var d struct{ Conflicts []string }
	c.Decode(t, &d)
	if len(d.Conflicts) != 1 || d.Conflicts[0] != "A-2" {
		t.Fatalf("conflicts %v, want [A-2]", d.Conflicts)
	}
	expect(t, hold(t, s, "sf_seated", second, "B-1"), 400, "SEAT_NOT_PRICED")
	// Released seats are free for the other token.
	expect(t, s.Front(t, "POST", "/seating/events/sf_seated/release", map[string]any{"holdToken": first}), 200, "")
	expect(t, hold(t, s, "sf_seated", second, "A-2", "A-3"), 200, "")
}

// ticketd's own seat picker page calls the seat endpoints from ticketd's
// origin without a key (decisions.md §4), naming the event by id or
// shortId; nothing else is open without a key.
func TestOwnSeatPickerNeedsNoKey(t *testing.T) {
	t.Parallel()
	s := start(t)
	own := headers("Origin", s.URL)
	for _, ref := range []string{"sf_seated", "sfst1"} {
		expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/"+ref+"/config", own, nil), 200, "")
	}
	r := s.Do(t, "POST", "/v1/storefront/seating/events/sfst1/hold-token", own, nil)
	expect(t, r, 200, "")
	var tok struct{ HoldToken string }
	r.Decode(t, &tok)
	expect(t, s.Do(t, "POST", "/v1/storefront/seating/events/sfst1/hold", own, map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"A-9"}}), 200, "")
	// The hold is the storefront's: a host's page registers it.
	reg := s.MustRegister(t, servertest.Guest("hall", map[string]any{"seatLabels": []string{"A-9"}, "seatHoldToken": tok.HoldToken}))
	if reg.Amount != 4200 {
		t.Fatalf("registration of the picked seat: %+v", reg)
	}
	expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/hall/config", own, nil), 404, "EVENT_NOT_FOUND") // slugs are per tenant
	expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/sf_off/config", own, nil), 403, "EVENT_NOT_PUBLIC")
	expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/sf_draft/config", own, nil), 404, "EVENT_NOT_FOUND")
	expect(t, s.Do(t, "GET", "/v1/storefront/events/sf_seated", own, nil), 401, "MISSING_KEY")
	expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/sf_seated/config", headers("Origin", "https://evil.test"), nil), 401, "MISSING_KEY")
	expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/sf_seated/config", headers("Referer", s.URL+"/events/hall/sfst1/seatmap"), nil), 200, "")
}
