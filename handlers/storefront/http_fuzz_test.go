package storefront_test

import (
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// storefrontRoutes are the storefront API's endpoints: {id} is the event
// or registration (the fuzzed id before '|'), {token} a hold token (after).
// Routes 8 to 15 are the seat API, in servertest.SeatSeeds' order.
var storefrontRoutes = []string{
	"GET /v1/storefront/events/{id}",
	"GET /v1/storefront/events/{id}/ticket-key",
	"POST /v1/storefront/quote",
	"POST /v1/storefront/register-guest",
	"POST /v1/storefront/card/create-checkout-session",
	"POST /v1/storefront/wallet/create-payment",
	"GET /v1/storefront/registration/{id}",
	"OPTIONS /v1/storefront/{id}",
	"GET /v1/storefront/seating/events/{id}/config",
	"GET /v1/storefront/seating/events/{id}/availability",
	"GET /v1/storefront/seating/events/{id}/hold/{token}",
	"POST /v1/storefront/seating/events/{id}/hold-token",
	"POST /v1/storefront/seating/events/{id}/hold",
	"POST /v1/storefront/seating/events/{id}/hold/{token}/extend",
	"POST /v1/storefront/seating/events/{id}/release",
	"POST /v1/storefront/seating/events/{id}/best-available",
	"GET {raw}",
}

// FuzzStorefrontHTTP sends fuzzed storefront requests through the whole
// stack (real Redis and Postgres): every endpoint with its path
// parameters, query, headers (key, Origin, Referer and any other) and JSON
// body. No answer may be a 5xx; every refusal is the envelope with a code
// of the table. Each request comes from its own client address (trusted
// X-Forwarded-For), so per-IP limits do not end the run's coverage.
func FuzzStorefrontHTTP(f *testing.F) {
	s := servertest.StartStorefront(f, servertest.Options{Trusted: "127.0.0.1/32"})
	reg := s.MustRegister(f, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	vars := map[string]string{"REG": reg.RegistrationID}
	r := s.Front(f, "POST", "/seating/events/sf_seated/hold-token", map[string]any{})
	var ht struct {
		HoldToken string `json:"holdToken"`
	}
	r.Decode(f, &ht)
	vars["HOLD"] = ht.HoldToken

	const pay = `"eventId":"sf_ga","registrationId":"$REG","selectedTicketId":"tk_adult","quantity":2,` +
		`"successUrl":"https://shop.example.com/thanks?reg={REGISTRATION_ID}","cancelUrl":"https://shop.example.com/cart"`
	for i, seed := range []struct{ id, query, headers, body string }{
		{"sf_ga", "", "", ""},
		{"sf_ga", "", "", ""},
		{"", "", "", `{"eventId":"sf_ga","selectedTicketId":"tk_adult","quantity":2,"extras":[{"extraId":"ex_parking","quantity":1}],"discountCode":"SAVE10","refundProtectionOptIn":true}`},
		{"", "", "", `{"eventId":"sf_ga","name":"Grace Hopper","email":"grace@example.com","phone":"+1 555 0100","tickets":[{"ticketId":"tk_child","quantity":1}]}`},
		{"", "", "", `{` + pay + `,"selectedTicketAmount":50}`},
		{"", "", "", `{` + pay + `,"amount":53.00}`},
		{"$REG", "", "", ""},
		{"register-guest", "", "Access-Control-Request-Method: POST\nAccess-Control-Request-Headers: content-type, x-service-key", ""},
	} {
		f.Add(uint8(i), seed.id, seed.query, seed.headers, []byte(seed.body))
	}
	for i, seed := range servertest.SeatSeeds("sf_seated") {
		f.Add(uint8(8+i), seed[0], "", "", []byte(seed[1]))
	}
	f.Add(uint8(16), "/v1/storefront/events/summer", "", "", []byte(nil))
	f.Add(uint8(3), "", "", "", []byte(`{"eventId":"sf_seated","name":"Grace Hopper","email":"grace@example.com","seatLabels":["A-3"],"seatHoldToken":"$HOLD"}`))
	f.Add(uint8(0), "sf_ga", "", "x-service-key: pk_other", []byte(nil))
	f.Add(uint8(0), "sf_ga", "", "Origin: https://evil.example.com", []byte(nil))
	f.Add(uint8(0), "summer", "", "Origin: null\nReferer: https://shop.example.com/page", []byte(nil))

	f.Fuzz(func(t *testing.T, route uint8, id, query, headers string, body []byte) {
		method, _, path := servertest.FuzzTarget(storefrontRoutes, route, servertest.Subst(id, vars), query, "/v1/storefront/")
		req := servertest.FuzzRequest{Method: method, Path: path, Body: []byte(servertest.Subst(string(body), vars))}
		req.Headers = [][2]string{{"x-service-key", "pk_shop"}, {"Origin", servertest.ShopOrigin},
			{"Idempotency-Key", servertest.NewKey()}, {"X-Forwarded-For", servertest.FuzzClientIP()}}
		req.Headers = append(req.Headers, servertest.FuzzHeaders(servertest.Subst(headers, vars))...)
		s.Send(t, req)
	})
}
