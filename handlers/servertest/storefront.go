package servertest

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/app"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
)

// Secrets of every test server: the built-in processors' webhook secrets
// and the key tickets are signed under.
const (
	CardWebhookSecret   = "test-card-webhook-secret"
	WalletWebhookSecret = "test-wallet-webhook-secret"
	SecretsKey          = "test-secrets-key"
	// PickerKey signs the seat picker's page tokens.
	PickerKey = "test-picker-key"
	// RoomKey signs the waiting room's poll tokens and passes.
	RoomKey = "test-room-key"
)

// settings are the app's settings of a test server at appURL: test
// payments on (the built-in card and wallet, under the secrets above),
// and opt's TTLs, limits and card.
func settings(opt Options, appURL string, trusted []netip.Prefix) app.Settings {
	return app.Settings{
		AppURL: appURL, AdminToken: AdminToken, Trusted: trusted,
		Keys: app.Keys{Sessions: []byte("test-session-secret"), OrderIDs: []byte("test-order-ids"), Picker: []byte(PickerKey),
			Holds: []byte("test-holds-key"), Room: []byte(RoomKey), Tickets: SecretsKey, CardWebhook: CardWebhookSecret, WalletWebhook: WalletWebhookSecret},
		OrderTTL: opt.OrderTTL, SeatHoldTTL: opt.SeatHoldTTL, CheckoutTTL: opt.CheckoutTTL, RegisterHoldTTL: opt.RegisterHoldTTL,
		Retention: opt.Retention, HoldsPerIP: opt.HoldsPerIP, LockoutPerIP: opt.LockoutPerIP, LockoutPerKey: opt.LockoutPerKey,
		StorefrontTimeout: opt.StorefrontTimeout, RoomNearHead: opt.RoomNearHead,
		TestMode: true, TestPayments: true, CardProcessor: payments.Card, WalletProcessor: payments.Wallet,
		StripeWebhookSecret: opt.StripeWebhookSecret, StorefrontCard: opt.StorefrontCard,
		ClaimIdle: time.Second, BacklogEvery: time.Second, SweepEvery: 100 * time.Millisecond,
	}
}

// StorefrontCatalog is the catalog the storefront tests run against: two
// tenants with publishable keys and domains, and events of every kind a
// host's site meets (GA with a hidden ticket and a limited code, seated,
// seated with the lenient (sf_rules) and strict (sf_strict) single-seat
// rule, free, not switched on, draft, cancelled, embargoed), plus a channel
// that sells sf_ga and sf_rush on the partner surface beside the
// storefront.
const StorefrontCatalog = `{
 "tenants": [{
  "id": "t_shop", "name": "Shop Host", "notifyEmail": "host@shop.example.com",
  "publishableKeys": [
   {"key": "pk_shop", "domains": ["shop.example.com", "*.example.org", "localhost"], "enabled": true},
   {"key": "pk_shop_off", "domains": ["shop.example.com", "off.example.com"], "enabled": false}],
  "events": [
   {"id": "sf_ga", "shortId": "sfga1", "slug": "summer", "name": "Summer Night", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_front"], "capacity": 100,
    "pricing": {"feePerTicket": 1.5, "feePercent": 0, "vatPercent": 0, "refundProtectionPercent": 8},
    "tickets": [
     {"id": "tk_adult", "name": "Adult", "price": 25, "capacity": 50, "maxPerOrder": 10},
     {"id": "tk_child", "name": "Child", "price": 10, "capacity": 50},
     {"id": "tk_crew", "name": "Crew", "price": 5, "capacity": 5, "hidden": true, "accessCode": "CREW"}],
    "extras": [{"id": "ex_parking", "name": "Parking", "price": 10, "capacity": 20}],
    "discountCodes": [{"code": "SAVE10", "percent": 10, "maxUses": 1}]},
   {"id": "sf_seated", "shortId": "sfst1", "slug": "hall", "name": "Hall", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [],
    "pricing": {"feePerTicket": 2, "feePercent": 0, "vatPercent": 0, "refundProtectionPercent": 0},
    "seatMap": {
     "categories": [{"id": "stalls", "name": "Stalls", "price": 40}, {"id": "box", "name": "Box"}],
     "rows": [{"label": "A", "seats": 20, "category": "stalls"}, {"label": "B", "seats": 5, "category": "box"}],
     "gaAreas": [{"id": "floor", "name": "Floor", "capacity": 10, "category": "stalls"}]}},
   {"id": "sf_free", "shortId": "sffr1", "slug": "open-day", "name": "Open Day", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk_free", "name": "Entry", "price": 0, "capacity": 100}]},
   {"id": "sf_rush", "shortId": "sfru1", "slug": "rush", "name": "Rush", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_front"], "tickets": [],
    "seatMap": {"categories": [{"id": "std", "name": "Standard", "price": 30}], "rows": [{"label": "R", "seats": 20, "category": "std"}]}},
   {"id": "sf_rules", "shortId": "sfrl1", "slug": "rules", "name": "Rules Hall", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [],
    "seatMap": {"singleSeatRule": "lenient", "categories": [{"id": "crew", "name": "Crew"}, {"id": "front", "name": "Front", "price": 50}, {"id": "back", "name": "Back", "price": 30}],
     "rows": [{"label": "K", "seats": 10, "category": "crew"}, {"label": "A", "seats": 10, "category": "front"}, {"label": "B", "seats": 10, "category": "front"},
      {"label": "C", "seats": 7, "category": "back"}, {"label": "S", "seats": 1, "category": "back"}]}},
   {"id": "sf_strict", "shortId": "sfsr1", "slug": "strict", "name": "Strict Hall", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [],
    "seatMap": {"singleSeatRule": "strict", "categories": [{"id": "front", "name": "Front", "price": 50}, {"id": "back", "name": "Back", "price": 30}],
     "rows": [{"label": "A", "seats": 10, "category": "front"}, {"label": "S", "seats": 1, "category": "back"}]}},
   {"id": "sf_off", "shortId": "sfof1", "slug": "private", "name": "Not on the shop", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": false, "channels": [], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "sf_draft", "shortId": "sfdr1", "slug": "draft", "name": "Draft", "startsAt": "2027-07-01T18:00:00Z",
    "status": "draft", "storefront": true, "channels": [], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "sf_cancelled", "shortId": "sfca1", "slug": "called-off", "name": "Called off", "startsAt": "2027-07-01T18:00:00Z",
    "status": "cancelled", "storefront": true, "channels": [], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]},
   {"id": "sf_later", "shortId": "sfla1", "slug": "later", "name": "Later", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "onSaleAt": "2099-01-01T00:00:00Z", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]}
  ]}, {
  "id": "t_other", "name": "Other Host",
  "publishableKeys": [{"key": "pk_other", "domains": ["other.example.net"], "enabled": true}],
  "events": [
   {"id": "ot_ga", "shortId": "otga1", "slug": "summer", "name": "Other Summer", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [{"id": "tk_o", "name": "O", "price": 20, "capacity": 10}]}
  ]}],
 "channels": [
  {"id": "ch_front", "name": "Partner beside the shop", "key": "ck_front", "secret": "cs_front_secret", "signingKey": "sk_front",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit",
   "rateLimits": {"catalog": 3000, "checkout": 3000, "confirm": 3000}}
 ]}`

// ShopOrigin is an origin on pk_shop's domain list.
const ShopOrigin = "https://shop.example.com"

// StartStorefront starts a test server and applies StorefrontCatalog.
func StartStorefront(t testing.TB, opt Options) *Server {
	t.Helper()
	s := Start(t, opt)
	s.Apply(t, []byte(StorefrontCatalog))
	return s
}

// Shop returns the headers of a storefront call from a page of pk_shop's
// site: the key and the Origin.
func Shop() map[string]string {
	return map[string]string{"x-service-key": "pk_shop", "Origin": ShopOrigin}
}

// Front sends a storefront call (path under /v1/storefront) as a page of
// pk_shop's site.
func (s *Server) Front(t testing.TB, method, path string, body any) *Response {
	t.Helper()
	return s.Do(t, method, "/v1/storefront"+path, Shop(), body)
}

// Expect fails the test unless r has the status and code (code "" for a
// success), and a failure its envelope's message.
func Expect(t testing.TB, r *Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code != code {
		t.Fatalf("want %d %s, got %s", status, code, r)
	}
	if status >= 400 && (r.Success || r.Message == "") {
		t.Fatalf("failure without envelope message: %s", r)
	}
}

// Registered is a storefront registration as register-guest and the
// registration read answer it.
type Registered struct {
	RegistrationID string `json:"registrationId"`
	EventID        string `json:"eventId"`
	Status         string `json:"status"`
	Payment        struct {
		PaymentStatus string      `json:"paymentStatus"`
		Amount        money.Cents `json:"amount"`
	} `json:"payment"`
	Amount    money.Cents `json:"amount"`
	Total     money.Cents `json:"total"`
	ExpiresAt string      `json:"expiresAt"`
	Reason    string      `json:"reason"`
	Tickets   []struct {
		TicketID string `json:"ticketId"`
		Label    string `json:"label"`
	} `json:"tickets"`
}

// guestSeq numbers Guest's buyers.
var guestSeq atomic.Int64

// Guest is a register-guest body for pk_shop's site: a valid buyer of its
// own (each call another e-mail address: a buyer has one registration
// awaiting payment per event) and the cart fields given, which may name
// the email.
func Guest(event string, cart map[string]any) map[string]any {
	m := map[string]any{"eventId": event, "name": "Grace Hopper", "email": fmt.Sprintf("grace-%d@example.com", guestSeq.Add(1))}
	for k, v := range cart {
		m[k] = v
	}
	return m
}

// MustRegister registers a guest on pk_shop's site and fails the test
// unless the registration is made.
func (s *Server) MustRegister(t testing.TB, body map[string]any) Registered {
	t.Helper()
	r := s.Front(t, "POST", "/register-guest", body)
	if r.Status != 200 {
		t.Fatalf("servertest: register-guest: %s", r)
	}
	var out Registered
	r.Decode(t, &out)
	return out
}

// Registration reads a registration as pk_shop's site does.
func (s *Server) Registration(t testing.TB, id string) Registered {
	t.Helper()
	r := s.Front(t, "GET", "/registration/"+id, nil)
	if r.Status != 200 {
		t.Fatalf("servertest: registration %s: %s", id, r)
	}
	var out Registered
	r.Decode(t, &out)
	return out
}

// PayOnPage pays a hosted checkout as the buyer does: it opens the page at
// url and submits its form with the card number; it returns the status of
// the answer to the form and where it redirects (the success URL when paid).
func (s *Server) PayOnPage(t testing.TB, url, card string) (status int, location string) {
	t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	if err := s.Client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("servertest: hosted page %s: %d %v", url, resp.StatusCode(), err)
	}
	req.Reset()
	resp.Reset()
	req.Header.SetMethod("POST")
	req.SetRequestURI(url + "/pay")
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.SetBodyString("card=" + card)
	if err := s.Client.Do(req, resp); err != nil {
		t.Fatalf("servertest: pay on %s: %v", url, err)
	}
	return resp.StatusCode(), string(resp.Header.Peek("Location"))
}
