package storefront_test

import (
	"bytes"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/seats"
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

// The seat endpoints take the key like every storefront call: a page of
// ticketd's own origin without one is refused, as any other page is
// (ticketd's own seat picker will authenticate otherwise, decisions.md).
func TestSeatEndpointsNeedTheKeyFromTicketdsOwnOriginToo(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, h := range []map[string]string{
		headers("Origin", s.URL),
		headers("Referer", s.URL+"/events/hall/sfst1/seatmap"),
		headers("Origin", "http://localhost:1"),
	} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/config"}, {"GET", "/availability"}, {"POST", "/hold-token"},
		} {
			for _, ref := range []string{"sf_seated", "sfst1", "ot_ga", "sf_off", "sf_later"} {
				expect(t, s.Do(t, c.method, "/v1/storefront/seating/events/"+ref+c.path, h, nil), 401, "MISSING_KEY")
			}
		}
	}
}

// A page that reloads reads its hold back by token: the seats by row and
// number with their subtotal; a gone token is HOLD_EXPIRED, a malformed one
// INVALID_HOLD_TOKEN.
func TestHoldReadGivesAReloadedPageItsSeats(t *testing.T) {
	t.Parallel()
	s := start(t)
	tok := holdToken(t, s, "sf_seated")
	expect(t, hold(t, s, "sf_seated", tok, "A-10", "A-2"), 200, "")
	r := s.Front(t, "GET", "/seating/events/sf_seated/hold/"+tok, nil)
	expect(t, r, 200, "")
	var h struct {
		HoldToken  string
		SeatLabels []string
		Subtotal   float64
		ExpiresAt  string
	}
	r.Decode(t, &h)
	if h.HoldToken != tok || len(h.SeatLabels) != 2 || h.SeatLabels[0] != "A-2" || h.SeatLabels[1] != "A-10" || h.Subtotal != 80 || h.ExpiresAt == "" {
		t.Fatalf("hold read = %+v, want A-2, A-10 for 80", h)
	}
	expect(t, s.Front(t, "GET", "/seating/events/sf_seated/hold/"+seats.NewToken(), nil), 409, "HOLD_EXPIRED")
	expect(t, s.Front(t, "GET", "/seating/events/sf_seated/hold/nope", nil), 400, "INVALID_HOLD_TOKEN")
}

// A best-available the seat engine refuses before reading anything (a
// quantity out of range) still counts in its client's write limit: the
// route takes it after the answer, and past the limit the refusal is 429.
func TestRefusedBestAvailableCountsInTheWriteLimit(t *testing.T) {
	t.Parallel()
	s := start(t)
	limited := false
	for i := 0; i < 80 && !limited; i++ {
		r := s.Front(t, "POST", "/seating/events/sf_seated/best-available", map[string]any{"quantity": 0})
		switch {
		case r.Status == 429 && r.Code == "RATE_LIMITED":
			limited = true
		case r.Status != 400:
			t.Fatalf("best-available of 0 seats, call %d: %s", i+1, r)
		}
	}
	if !limited {
		t.Fatal("80 refused best-availables from one client: never rate limited")
	}
}
