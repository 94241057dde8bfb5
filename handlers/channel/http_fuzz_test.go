package channel_test

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
)

// channelRoutes are the partner API's endpoints: {id} is the event (or
// the first half of the fuzzed id before '|'), {token} a hold token (the
// second half). Routes 8 to 15 are the seat API, in servertest.SeatSeeds'
// order.
var channelRoutes = []string{
	"GET /v1/channel/events",
	"GET /v1/channel/events/{id}",
	"POST /v1/channel/events/{id}/quote",
	"POST /v1/channel/events/{id}/checkout",
	"POST /v1/channel/orders/confirm",
	"POST /v1/channel/orders/status",
	"POST /v1/channel/session",
	"GET /v1/channel/session",
	"GET /v1/channel/seating/events/{id}/config",
	"GET /v1/channel/seating/events/{id}/availability",
	"GET /v1/channel/seating/events/{id}/hold/{token}",
	"POST /v1/channel/seating/events/{id}/hold-token",
	"POST /v1/channel/seating/events/{id}/hold",
	"POST /v1/channel/seating/events/{id}/hold/{token}/extend",
	"POST /v1/channel/seating/events/{id}/release",
	"POST /v1/channel/seating/events/{id}/best-available",
	"GET {raw}", // the fuzzed id is the whole path: the router's input
}

// Credentials of a fuzzed request (auth % 4); auth&4 leaves a confirm
// unsigned, otherwise it is signed with the channel's signing key so that
// fuzzed bodies reach the order.
const (
	authKeyedA = iota
	authSession
	authNone
	authKeyedB
)

// fuzzCatalog is servertest.Catalog with channel ch_a's rate limits out of
// a fuzz run's reach: a 429 after the first minute's budget would end the
// run's coverage.
var fuzzCatalog = strings.Replace(servertest.Catalog, `"settlement": "partner_remit"}`,
	`"settlement": "partner_remit", "rateLimits": {"catalog": 100000000, "status": 100000000, "checkout": 100000000, "confirm": 100000000, "session": 100000000}}`, 1)

// FuzzChannelHTTP sends fuzzed partner API requests through the whole
// stack (real Redis and Postgres): every endpoint, its path parameters,
// query, headers and JSON body. No answer may be a 5xx; every refusal is
// the envelope with a code of the table.
func FuzzChannelHTTP(f *testing.F) {
	s := servertest.Start(f, servertest.Options{LockoutPerIP: 1 << 40, LockoutPerKey: 1 << 40})
	s.Apply(f, []byte(fuzzCatalog))
	vars := map[string]string{}
	vars["ORDER"] = s.MustReserve(f, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1}).OrderID
	r := s.Do(f, "POST", "/v1/channel/seating/events/ev_seated/hold-token", servertest.Keyed("a"), map[string]any{})
	var ht struct {
		HoldToken string `json:"holdToken"`
	}
	r.Decode(f, &ht)
	vars["HOLD"] = ht.HoldToken
	vars["SESSION"], _ = s.Sessions.Mint("ch_a", "Ada Lovelace", "ada@example.com", "", time.Now())

	for i, seed := range []struct {
		id, query, headers, body string
	}{
		{"", "limit=2&cursor=ev_draft", "", ""},
		{"ev_ga", "", "", ""},
		{"ev_ga", "", "", `{"selectedTicketId":"tk_a","quantity":2,"extras":[{"extraId":"ex_parking","quantity":1}],"discountCode":"ONCE","refundProtectionOptIn":true}`},
		{"ev_ga", "", "", `{"buyerName":"Ada Lovelace","buyerEmail":"ada@example.com","tickets":[{"ticketId":"tk_b","quantity":1}]}`},
		{"", "", "", `{"orderId":"$ORDER","amount":11.50,"partnerReference":"ref-1"}`},
		{"", "", "", `{"orderId":"$ORDER"}`},
		{"", "", "", `{"buyerName":"Ada Lovelace","buyerEmail":"ada@example.com"}`},
		{"", "", "Authorization: Bearer $SESSION", ""},
	} {
		f.Add(uint8(i), seed.id, seed.query, uint8(authKeyedA), seed.headers, []byte(seed.body))
	}
	for i, seed := range servertest.SeatSeeds("ev_seated") {
		f.Add(uint8(8+i), seed[0], "", uint8(authKeyedA), "", []byte(seed[1]))
	}
	f.Add(uint8(16), "/v1/channel/events/ev_ga/../ev_ga", "", uint8(authKeyedA), "", []byte(nil))
	f.Add(uint8(3), "ev_seated", "", uint8(authSession), "Authorization: Bearer $SESSION", []byte(`{"seatLabels":["A-3"],"seatHoldToken":"$HOLD"}`))
	f.Add(uint8(4), "", "", uint8(authKeyedB), "", []byte(`{"orderId":"$ORDER","amount":11.5,"partnerReference":"r"}`))
	f.Add(uint8(1), "ev_ga", "", uint8(authNone), "x-service-key: ck_a\nx-service-secret: wrong", []byte(nil))

	f.Fuzz(func(t *testing.T, route uint8, id, query string, auth uint8, headers string, body []byte) {
		method, tmpl, path := servertest.FuzzTarget(channelRoutes, route, servertest.Subst(id, vars), query, "/v1/channel/")
		b := []byte(servertest.Subst(string(body), vars))
		req := servertest.FuzzRequest{Method: method, Path: path, Body: b}
		switch auth % 4 {
		case authKeyedA:
			req.Headers = [][2]string{{"x-service-key", "ck_a"}, {"x-service-secret", "cs_a_secret"}}
		case authKeyedB:
			req.Headers = [][2]string{{"x-service-key", "ck_b"}, {"x-service-secret", "cs_b_secret"}}
		case authSession:
			req.Headers = [][2]string{{"Authorization", "Bearer " + vars["SESSION"]}}
		}
		req.Headers = append(req.Headers, [2]string{"Idempotency-Key", servertest.NewKey()})
		if auth&4 == 0 && tmpl == "/v1/channel/orders/confirm" {
			key := "sk_a"
			if auth%4 == authKeyedB {
				key = "sk_b"
			}
			var ctx fasthttp.RequestCtx
			ctx.Request.SetBody(b)
			if cf, e := channel.DecodeConfirm(&ctx); e == nil {
				req.Headers = append(req.Headers, [2]string{"x-service-signature", channel.Signature(key, cf.OrderID, cf.Amount, cf.Reference)})
			}
		}
		req.Headers = append(req.Headers, servertest.FuzzHeaders(servertest.Subst(headers, vars))...)
		s.Send(t, req)
	})
}
