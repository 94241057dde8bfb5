package storefront_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// securityCatalog is StorefrontCatalog with a seated event for t_other
// (ot_hall, shortId othall1, slug other-hall), so every seat endpoint has
// a foreign event to be refused.
func securityCatalog(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(servertest.StorefrontCatalog), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tn := range doc["tenants"].([]any) {
		tm := tn.(map[string]any)
		if tm["id"] != "t_other" {
			continue
		}
		tm["events"] = append(tm["events"].([]any), map[string]any{
			"id": "ot_hall", "shortId": "othall1", "slug": "other-hall", "name": "Other Hall", "startsAt": "2027-07-01T18:00:00Z",
			"status": "on_sale", "storefront": true, "channels": []string{}, "tickets": []any{},
			"seatMap": map[string]any{"categories": []any{map[string]any{"id": "std", "name": "Standard", "price": 30}},
				"rows": []any{map[string]any{"label": "O", "seats": 8, "category": "std"}}},
		})
	}
	return doc
}

func otherShop() map[string]string {
	return headers("x-service-key", "pk_other", "Origin", "https://other.example.net")
}

// TestSecurityCrossTenantReadsAreNotFound: pk_shop's site asks for the
// other tenant's events (by id, shortId and slug), their ticket key,
// quote, registration, payment and every seat endpoint, and its
// registrations; each answer is byte for byte the answer to an event or
// registration that does not exist, so a key learns nothing of another
// tenant, not even that the id exists. The other tenant's own key is
// answered, so the ids are real.
func TestSecurityCrossTenantReadsAreNotFound(t *testing.T) {
	t.Parallel()
	// Each call comes from an address of its own (through a trusted
	// proxy), so the write limit of 30 a minute per IP never answers
	// instead of the check under test.
	s := servertest.StartStorefront(t, servertest.Options{Trusted: "127.0.0.1/32"})
	s.Apply(t, securityCatalog(t))
	var n int
	from := func(h map[string]string) map[string]string {
		n++
		h["X-Forwarded-For"] = fmt.Sprintf("198.51.%d.%d", n/250, 1+n%250)
		return h
	}
	front := func(method, path string, body any) *servertest.Response {
		return s.Do(t, method, "/v1/storefront"+path, from(servertest.Shop()), body)
	}

	// The other tenant's registration, and a hold of its own.
	reg := s.Do(t, "POST", "/v1/storefront/register-guest", from(otherShop()), servertest.Guest("ot_ga", map[string]any{"selectedTicketId": "tk_o"}))
	expect(t, reg, 200, "")
	var foreignReg servertest.Registered
	reg.Decode(t, &foreignReg)
	ht := s.Do(t, "POST", "/v1/storefront/seating/events/ot_hall/hold-token", from(otherShop()), nil)
	expect(t, ht, 200, "")
	var tok struct{ HoldToken string }
	ht.Decode(t, &tok)
	expect(t, s.Do(t, "POST", "/v1/storefront/seating/events/ot_hall/hold", from(otherShop()),
		map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"O-1"}}), 200, "")

	notFound := front("GET", "/events/no-such-event", nil)
	expect(t, notFound, 404, "EVENT_NOT_FOUND")

	// Each call is made for a foreign event and for "no-such-event"; the
	// two answers must be the same bytes, and a 404.
	type call struct {
		method, path string
		body         func(ref string) any
	}
	none := func(string) any { return nil }
	cart := func(ref string) any {
		return map[string]any{"eventId": ref, "selectedTicketId": "tk_o", "quantity": 1}
	}
	calls := []call{
		{"GET", "/events/%s", none},
		{"GET", "/events/%s/ticket-key", none},
		{"POST", "/quote", cart},
		{"POST", "/register-guest", func(ref string) any { return servertest.Guest(ref, map[string]any{"selectedTicketId": "tk_o"}) }},
		{"POST", "/card/create-checkout-session", func(ref string) any {
			return map[string]any{"eventId": ref, "registrationId": foreignReg.RegistrationID, "selectedTicketId": "tk_o", "quantity": 1,
				"selectedTicketAmount": 20, "successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"}
		}},
		{"POST", "/wallet/create-payment", func(ref string) any {
			return map[string]any{"eventId": ref, "registrationId": foreignReg.RegistrationID, "selectedTicketId": "tk_o", "quantity": 1, "amount": 20}
		}},
	}
	seatCalls := []call{
		{"GET", "/seating/events/%s/config", none},
		{"GET", "/seating/events/%s/availability", none},
		{"GET", "/seating/events/%s/hold/" + tok.HoldToken, none},
		{"POST", "/seating/events/%s/hold-token", none},
		{"POST", "/seating/events/%s/hold", func(string) any { return map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"O-2"}} }},
		{"POST", "/seating/events/%s/hold/" + tok.HoldToken + "/extend", none},
		{"POST", "/seating/events/%s/release", func(string) any { return map[string]any{"holdToken": tok.HoldToken} }},
		{"POST", "/seating/events/%s/best-available", func(string) any { return map[string]any{"quantity": 1} }},
	}
	check := func(c call, refs ...string) {
		t.Helper()
		path := func(ref string) string {
			if strings.Contains(c.path, "%s") {
				return fmt.Sprintf(c.path, ref)
			}
			return c.path
		}
		unknown := front(c.method, path("no-such-event"), c.body("no-such-event"))
		if unknown.Status != 404 || !bytes.Equal(unknown.Body, notFound.Body) {
			t.Errorf("%s %s of an unknown event: %s, want %s", c.method, c.path, unknown, notFound.Body)
		}
		for _, ref := range refs {
			r := front(c.method, path(ref), c.body(ref))
			if r.Status != unknown.Status || !bytes.Equal(r.Body, unknown.Body) {
				t.Errorf("%s %s of the other tenant's %s: %s, want the unknown event's %s", c.method, c.path, ref, r, unknown.Body)
			}
		}
	}
	for _, c := range calls {
		check(c, "ot_ga", "otga1", "ot_hall", "othall1", "other-hall")
	}
	for _, c := range seatCalls {
		check(c, "ot_hall", "othall1", "other-hall")
	}

	// Registrations: the other tenant's id, in the path or the body of a
	// payment for an event of pk_shop's own, is an unknown registration.
	unknownReg := front("GET", "/registration/o"+strings.Repeat("a", 24)+".ot_ga", nil)
	expect(t, unknownReg, 404, "NOT_FOUND")
	for _, r := range []*servertest.Response{
		front("GET", "/registration/"+foreignReg.RegistrationID, nil),
		front("POST", "/wallet/create-payment", map[string]any{"registrationId": foreignReg.RegistrationID, "amount": 20}),
		front("POST", "/card/create-checkout-session", map[string]any{"eventId": "sf_ga", "registrationId": foreignReg.RegistrationID,
			"selectedTicketId": "tk_child", "quantity": 1, "selectedTicketAmount": 10,
			"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"}),
	} {
		if r.Status != 404 || !bytes.Equal(r.Body, unknownReg.Body) {
			t.Errorf("another tenant's registration: %s, want the unknown registration's %s", r, unknownReg.Body)
		}
	}

	// The other tenant's hold token, on an event of pk_shop's own, holds
	// nothing: it reads, extends and releases as a token never issued.
	never := "h" + strings.Repeat("z", 26)
	for _, p := range []struct{ method, path string }{
		{"GET", "/seating/events/sf_seated/hold/%s"},
		{"POST", "/seating/events/sf_seated/hold/%s/extend"},
	} {
		want := front(p.method, fmt.Sprintf(p.path, never), nil)
		got := front(p.method, fmt.Sprintf(p.path, tok.HoldToken), nil)
		if want.Status < 400 || got.Status != want.Status || !bytes.Equal(got.Body, want.Body) {
			t.Errorf("%s %s with the other tenant's token: %s; a token never issued: %s", p.method, p.path, got, want)
		}
	}
	rel := func(token string) *servertest.Response {
		return front("POST", "/seating/events/sf_seated/release", map[string]any{"holdToken": token})
	}
	// Release answers the token it was sent; apart from it, the same.
	if want, got := rel(never), rel(tok.HoldToken); got.Status != want.Status ||
		!bytes.Equal(bytes.ReplaceAll(got.Body, []byte(tok.HoldToken), []byte(never)), want.Body) {
		t.Errorf("release with the other tenant's token: %s; a token never issued: %s", got, want)
	}

	// Nothing pk_shop sent touched the other tenant: its hold still holds
	// O-1 alone, its registration is there, and its own key reads both.
	h := s.Do(t, "GET", "/v1/storefront/seating/events/ot_hall/hold/"+tok.HoldToken, from(otherShop()), nil)
	expect(t, h, 200, "")
	var held struct{ SeatLabels []string }
	h.Decode(t, &held)
	if strings.Join(held.SeatLabels, ",") != "O-1" {
		t.Fatalf("the other tenant's hold: %s, want O-1 only", h)
	}
	expect(t, s.Do(t, "GET", "/v1/storefront/registration/"+foreignReg.RegistrationID, from(otherShop()), nil), 200, "")
	for _, ref := range []string{"ot_hall", "othall1", "other-hall"} {
		expect(t, s.Do(t, "GET", "/v1/storefront/events/"+ref+"/ticket-key", from(otherShop()), nil), 200, "")
		expect(t, s.Do(t, "GET", "/v1/storefront/seating/events/"+ref+"/config", from(otherShop()), nil), 200, "")
	}
}
