package servertest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/inventory/money"
)

// Catalog is the catalog the partner tests run against: events of every
// kind (GA, with a maxPerOrder above its capacity so one cart can pass the
// event's capacity; seated, seated with the strict single-seat rule,
// showings, draft, cancelled, embargoed) and channels of
// every configuration, all allowlisted from loopback except ch_ip.
const Catalog = `{
 "tenants": [{
  "id": "t1", "name": "Test Host", "notifyEmail": "host@test.example",
  "publishableKeys": [{"key": "pk_t1", "domains": ["localhost"], "enabled": true}],
  "events": [
   {"id": "ev_ga", "shortId": "ga1", "slug": "ga", "name": "GA Night", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_a", "ch_nosign", "ch_invoice", "ch_slow", "ch_scope", "ch_ip", "ch_sess", "ch_low"], "capacity": 10,
    "maxPerOrder": 12,
    "pricing": {"feePerTicket": 1.5, "feePercent": 0, "vatPercent": 0, "refundProtectionPercent": 8},
    "tickets": [
     {"id": "tk_a", "name": "Adult", "price": 25, "capacity": 5, "maxPerOrder": 10},
     {"id": "tk_b", "name": "Balcony", "price": 10, "capacity": 8},
     {"id": "tk_hidden", "name": "Crew", "price": 5, "capacity": 5, "hidden": true, "accessCode": "SECRET"}
    ],
    "extras": [{"id": "ex_parking", "name": "Parking", "price": 10, "capacity": 3}],
    "discountCodes": [{"code": "ONCE", "percent": 10, "maxUses": 1}]},
   {"id": "ev_draft", "shortId": "d1", "slug": "draft", "name": "Draft", "startsAt": "2027-07-01T18:00:00Z",
    "status": "draft", "storefront": false, "channels": ["ch_a"], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "ev_cancelled", "shortId": "c1", "slug": "cancelled", "name": "Cancelled", "startsAt": "2027-07-01T18:00:00Z",
    "status": "cancelled", "storefront": false, "channels": ["ch_a"], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "ev_embargo", "shortId": "e1", "slug": "embargo", "name": "Later", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "onSaleAt": "2099-01-01T00:00:00Z", "storefront": false, "channels": ["ch_a"],
    "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "ev_other", "shortId": "o1", "slug": "other", "name": "Other channel", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": false, "channels": ["ch_b"], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "ev_seated", "shortId": "s1", "slug": "seated", "name": "Seated", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_a", "ch_low"], "tickets": [],
    "pricing": {"feePerTicket": 2, "feePercent": 0, "vatPercent": 0, "refundProtectionPercent": 0},
    "seatMap": {
     "categories": [{"id": "stalls", "name": "Stalls", "price": 40}, {"id": "box", "name": "Box"}],
     "rows": [{"label": "A", "seats": 20, "category": "stalls"}, {"label": "B", "seats": 5, "category": "box"}],
     "gaAreas": [{"id": "floor", "name": "Floor", "capacity": 3, "category": "stalls"}],
     "tables": [{"id": "T1", "seats": 4, "category": "stalls"}]}},
   {"id": "ev_rules", "shortId": "rl1", "slug": "rules", "name": "Strict seats", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": false, "channels": ["ch_a"], "tickets": [],
    "seatMap": {"singleSeatRule": "strict", "categories": [{"id": "stalls", "name": "Stalls", "price": 40}],
     "rows": [{"label": "A", "seats": 10, "category": "stalls"}, {"label": "B", "seats": 6, "category": "stalls"}]}},
   {"id": "ev_show", "shortId": "sh1", "slug": "shows", "name": "Two shows", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": false, "channels": ["ch_a"],
    "showings": [{"id": "sh_1", "startsAt": "2027-07-01T18:00:00Z", "capacity": 2}, {"id": "sh_2", "startsAt": "2027-07-02T18:00:00Z"}],
    "tickets": [{"id": "tk", "name": "T", "price": 20, "capacity": 10}]}
  ]}],
 "channels": [
  {"id": "ch_a", "name": "A", "key": "ck_a", "secret": "cs_a_secret", "signingKey": "sk_a",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"},
  {"id": "ch_b", "name": "B", "key": "ck_b", "secret": "cs_b_secret", "signingKey": "sk_b",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"},
  {"id": "ch_nosign", "name": "No signing key", "key": "ck_nosign", "secret": "cs_nosign_secret",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read"],
   "ipAllowlist": ["127.0.0.1/32"], "settlement": "partner_remit"},
  {"id": "ch_invoice", "name": "Invoiced", "key": "ck_invoice", "secret": "cs_invoice_secret", "signingKey": "sk_invoice",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read"],
   "ipAllowlist": ["127.0.0.1/32"], "settlement": "invoice"},
  {"id": "ch_scope", "name": "Read only", "key": "ck_scope", "secret": "cs_scope_secret",
   "scopes": ["catalog:read"], "ipAllowlist": ["127.0.0.1/32"], "settlement": "partner_remit"},
  {"id": "ch_ip", "name": "Elsewhere", "key": "ck_ip", "secret": "cs_ip_secret",
   "scopes": ["catalog:read"], "ipAllowlist": ["10.0.0.0/8"], "settlement": "partner_remit"},
  {"id": "ch_sess", "name": "Sessions but no orders", "key": "ck_sess", "secret": "cs_sess_secret",
   "scopes": ["catalog:read", "sessions:write"], "ipAllowlist": ["127.0.0.1/32"], "settlement": "partner_remit"},
  {"id": "ch_low", "name": "Low catalog limit", "key": "ck_low", "secret": "cs_low_secret",
   "scopes": ["catalog:read", "orders:write"], "ipAllowlist": ["127.0.0.1/32"], "settlement": "partner_remit",
   "rateLimits": {"catalog": 2}},
  {"id": "ch_slow", "name": "Slow", "key": "ck_slow", "secret": "cs_slow_secret", "signingKey": "sk_slow",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read"],
   "ipAllowlist": ["127.0.0.1/32"], "settlement": "partner_remit", "rateLimits": {"checkout": 2}}
 ]}`

// StartWithCatalog starts a test server and applies Catalog.
func StartWithCatalog(t testing.TB, opt Options) *Server {
	t.Helper()
	s := Start(t, opt)
	s.Apply(t, []byte(Catalog))
	return s
}

// Keyed returns the credential headers of a Catalog channel ("a" ->
// ck_a/cs_a_secret).
func Keyed(ch string) map[string]string {
	return map[string]string{"x-service-key": "ck_" + ch, "x-service-secret": "cs_" + ch + "_secret"}
}

// With returns a copy of h with one more header.
func With(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range h {
		out[a] = b
	}
	return out
}

var keySeq atomic.Int64

// NewKey returns a fresh Idempotency-Key.
func NewKey() string { return fmt.Sprintf("key-%d-%d", keySeq.Add(1), keySeq.Load()*7919) }

// Buyer is a reserve body with a valid buyer and the extra fields.
func Buyer(extra map[string]any) map[string]any {
	m := map[string]any{"buyerName": "Ada Lovelace", "buyerEmail": "ada@example.com"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// Reserve reserves with a fresh Idempotency-Key as Catalog channel ch.
func (s *Server) Reserve(t testing.TB, ch, event string, body map[string]any) *Response {
	t.Helper()
	return s.ReserveWithKey(t, ch, event, NewKey(), body)
}

// ReserveWithKey reserves with the given Idempotency-Key as channel ch.
func (s *Server) ReserveWithKey(t testing.TB, ch, event, key string, body map[string]any) *Response {
	t.Helper()
	return s.Do(t, "POST", "/v1/channel/events/"+event+"/checkout", With(Keyed(ch), "Idempotency-Key", key), Buyer(body))
}

// Reserved is a reserve's data.
type Reserved struct {
	OrderID   string      `json:"orderId"`
	Amount    money.Cents `json:"amount"`
	Currency  string      `json:"currency"`
	Duplicate bool        `json:"duplicate"`
}

// MustReserve reserves and fails the test unless the order is created.
func (s *Server) MustReserve(t testing.TB, ch, event string, body map[string]any) Reserved {
	t.Helper()
	r := s.Reserve(t, ch, event, body)
	if r.Status != 200 {
		t.Fatalf("servertest: reserve: %s", r)
	}
	var out Reserved
	r.Decode(t, &out)
	return out
}

// Confirm sends a correctly signed confirm as Catalog channel ch.
func (s *Server) Confirm(t testing.TB, ch, orderID string, amount money.Cents, ref string) *Response {
	t.Helper()
	sig := channel.Signature("sk_"+ch, orderID, amount, ref)
	return s.Do(t, "POST", "/v1/channel/orders/confirm", With(Keyed(ch), "x-service-signature", sig),
		fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":%q}`, orderID, amount, ref))
}

// Status asks for an order's status as Catalog channel ch.
func (s *Server) Status(t testing.TB, ch, orderID string) *Response {
	t.Helper()
	return s.Do(t, "POST", "/v1/channel/orders/status", Keyed(ch), map[string]string{"orderId": orderID})
}

// Remote returns a client of a ticketd running elsewhere (a whole ticketd
// in a test, at base URL) with the helpers of Server: Do, Reserve, Confirm,
// Status. Its other fields are empty. (A ticketd a cmd/ticketd test runs
// checks its own answers against the OpenAPI document: Validating.)
func Remote(base string) *Server {
	return &Server{URL: base, Client: &fasthttp.Client{MaxConnsPerHost: 2048, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}}
}
