package servertest

import (
	"testing"
)

// StorefrontCatalog is the catalog the storefront tests run against: two
// tenants with publishable keys and domains, and events of every kind a
// host's site meets (GA with a hidden ticket and a limited code, seated,
// free, not switched on, draft, cancelled, embargoed), plus a channel
// that sells sf_ga and sf_rush on the partner surface beside the
// storefront.
const StorefrontCatalog = `{
 "tenants": [{
  "id": "t_shop", "name": "Shop Host", "notifyEmail": "host@shop.example.com",
  "publishableKeys": [
   {"key": "pk_shop", "domains": ["shop.example.com", "*.example.org", "localhost"], "enabled": true},
   {"key": "pk_shop_off", "domains": ["shop.example.com"], "enabled": false}],
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
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"}
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
