package admin_test

import (
	"context"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/handlers/servertest"
)

const doc = `{
 "tenants": [{"id": "t1", "name": "Host", "notifyEmail": "host@test.example", "publishableKeys": [],
  "events": [{"id": "ev1", "shortId": "e1", "slug": "e1", "name": "E1", "startsAt": "2027-01-01T00:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch1"], "capacity": 10,
   "tickets": [{"id": "tk", "name": "T", "price": 10, "capacity": 5}],
   "seatMap": {"categories": [{"id": "c", "name": "C", "price": 30}], "rows": [{"label": "A", "seats": 4, "category": "c"}]}}]}],
 "channels": [{"id": "ch1", "name": "C1", "key": "ck1", "secret": "cs1_secret", "signingKey": "sk1",
  "scopes": ["catalog:read", "orders:write", "orders:confirm"], "ipAllowlist": ["127.0.0.1"], "settlement": "partner_remit"}]}`

func put(t *testing.T, s *servertest.Server, token string, body any) *servertest.Response {
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return s.Do(t, "PUT", "/v1/admin/catalog", h, body)
}

func TestApplyCatalog(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	ctx := context.Background()

	if r := put(t, s, "", []byte(doc)); r.Status != 401 || r.Code != "ADMIN_UNAUTHORIZED" {
		t.Fatalf("no token: %s", r)
	}
	if r := put(t, s, "wrong", []byte(doc)); r.Status != 401 || r.Code != "ADMIN_UNAUTHORIZED" {
		t.Fatalf("wrong token: %s", r)
	}
	r := put(t, s, servertest.AdminToken, []byte(doc))
	if r.Status != 200 || !strings.Contains(string(r.Data), `"applied":{"tenants":1,"channels":1,"events":1}`) {
		t.Fatalf("apply: %s", r)
	}
	// Re-applying changes nothing.
	if r := put(t, s, servertest.AdminToken, []byte(doc)); r.Status != 200 {
		t.Fatalf("re-apply: %s", r)
	}
	// Secrets are stored hashed / sealed, never in clear.
	var stored string
	if err := s.Pool.QueryRow(ctx, `SELECT doc::text FROM channels WHERE id = 'ch1'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, "cs1_secret") || strings.Contains(stored, `"sk1"`) {
		t.Fatalf("secret in clear at rest: %s", stored)
	}
	proj, _ := s.Redis.Do(ctx, s.Redis.B().Get().Key(s.Space.CatalogDoc()).Build()).ToString()
	if strings.Contains(proj, "cs1_secret") || strings.Contains(proj, `"sk1"`) {
		t.Fatalf("secret in clear in Redis: %s", proj)
	}

	// Sell 4 tickets and book seat A-2 directly, as confirm would.
	s.Redis.Do(ctx, s.Redis.B().Hset().Key(s.Space.Sold("ev1")).FieldValue().FieldValue("t:tk", "4").FieldValue("ev", "5").Build())
	s.Redis.Do(ctx, s.Redis.B().Hset().Key(s.Space.Booked("ev1")).FieldValue().FieldValue("A-2", "o01x").Build())

	// Re-applying never resets sold counts or booked seats.
	if r := put(t, s, servertest.AdminToken, []byte(doc)); r.Status != 200 {
		t.Fatalf("re-apply after sales: %s", r)
	}
	sold, _ := s.Redis.Do(ctx, s.Redis.B().Hget().Key(s.Space.Sold("ev1")).Field("t:tk").Build()).AsInt64()
	booked, _ := s.Redis.Do(ctx, s.Redis.B().Hget().Key(s.Space.Booked("ev1")).Field("A-2").Build()).ToString()
	if sold != 4 || booked != "o01x" {
		t.Fatalf("apply reset sales: sold %d booked %q", sold, booked)
	}

	// Lowering a capacity below what is sold is refused, naming the field.
	low := strings.Replace(doc, `"capacity": 5}`, `"capacity": 3}`, 1)
	r = put(t, s, servertest.AdminToken, []byte(low))
	if r.Status != 400 || r.Code != "INVALID_CATALOG" || !strings.Contains(r.Message, "tickets[0].capacity") {
		t.Fatalf("capacity below sold: %s", r)
	}
	// Removing a booked seat from the map is refused.
	shrunk := strings.Replace(doc, `"seats": 4`, `"seats": 1`, 1)
	if r := put(t, s, servertest.AdminToken, []byte(shrunk)); r.Status != 400 || r.Code != "INVALID_CATALOG" {
		t.Fatalf("booked seat removed: %s", r)
	}
	// Nothing of a refused document was applied.
	caps, _ := s.Redis.Do(ctx, s.Redis.B().Hget().Key(s.Space.Caps("ev1")).Field("t:tk").Build()).AsInt64()
	if caps != 5 {
		t.Fatalf("refused document changed capacity to %d", caps)
	}

	// A bad document is rejected whole, naming the path of the first bad field.
	var bad map[string]any
	_ = json.Unmarshal([]byte(doc), &bad)
	bad["tenants"].([]any)[0].(map[string]any)["events"].([]any)[0].(map[string]any)["status"] = "bogus"
	r = put(t, s, servertest.AdminToken, bad)
	if r.Status != 400 || r.Code != "INVALID_CATALOG" || !strings.Contains(r.Message, "tenants[0].events[0].status") {
		t.Fatalf("bad document: %s", r)
	}
	if r := put(t, s, servertest.AdminToken, "{not json"); r.Status != 400 || r.Code != "INVALID_CATALOG" {
		t.Fatalf("malformed document: %s", r)
	}

	// Objects absent from a document are left alone.
	other := `{"tenants": [{"id": "t1", "name": "Host", "notifyEmail": "", "publishableKeys": [],
	  "events": [{"id": "ev2", "shortId": "e2", "slug": "e2", "name": "E2", "startsAt": "2027-01-01T00:00:00Z",
	   "status": "on_sale", "storefront": false, "channels": ["ch1"], "tickets": [{"id": "tk", "name": "T", "price": 1, "capacity": 1}]}]}],
	  "channels": []}`
	if r := put(t, s, servertest.AdminToken, []byte(other)); r.Status != 200 {
		t.Fatalf("second document: %s", r)
	}
	snap := s.Catalog.Current()
	if snap.Events["ev1"] == nil || snap.Events["ev2"] == nil || snap.Channels["ch1"] == nil {
		t.Fatalf("absent objects were dropped: events %v", snap.Events)
	}
	if n := s.Count(t, `SELECT count(*) FROM events WHERE tenant_id = 't1'`); n != 2 {
		t.Fatalf("Postgres holds %d events of t1, want 2", n)
	}
}

// serve runs one request through the server's root handler, with the admin
// surface built from token, and decodes the envelope.
func serve(t *testing.T, token, method string) (int, string) {
	t.Helper()
	return servePath(t, token, method, "/v1/admin/catalog")
}

// servePath is serve of another path.
func servePath(t *testing.T, token, method, path string) (int, string) {
	t.Helper()
	h := server.Handler(nil, &admin.API{Token: token})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	ctx.Request.SetBodyString(doc)
	h(&ctx)
	var env struct {
		Success bool   `json:"success"`
		Code    string `json:"code"`
	}
	if err := json.Unmarshal(ctx.Response.Body(), &env); err != nil || env.Success {
		t.Fatalf("%s: not a failure envelope: %q", method, ctx.Response.Body())
	}
	return ctx.Response.StatusCode(), env.Code
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Without TICKETD_ADMIN_TOKEN the admin surface is off: every method is
// 404 ADMIN_DISABLED, which says how to turn it on, so nothing tells a
// prober that PUT would be served.
func TestAdminOffIsNotFoundForEveryMethod(t *testing.T) {
	for _, m := range methods {
		if st, code := serve(t, "", m); st != 404 || code != "ADMIN_DISABLED" {
			t.Errorf("%s with the admin surface off: %d %s, want 404 ADMIN_DISABLED", m, st, code)
		}
	}
	for _, p := range []string{"/v1/admin/events/ev_1/queue", "/v1/admin/events/ev_1/queue/audit", "/v1/admin/nothing"} {
		if st, code := servePath(t, "", "GET", p); st != 404 || code != "ADMIN_DISABLED" {
			t.Errorf("GET %s with the admin surface off: %d %s, want 404 ADMIN_DISABLED", p, st, code)
		}
	}
}

// With a token the catalog takes PUT only; other methods are 405.
func TestAdminOnRefusesOtherMethods(t *testing.T) {
	for _, m := range methods {
		st, code := serve(t, "tok", m)
		want, wantCode := 405, "METHOD_NOT_ALLOWED"
		if m == "PUT" {
			want, wantCode = 401, "ADMIN_UNAUTHORIZED" // no Authorization header sent
		}
		if st != want || code != wantCode {
			t.Errorf("%s with the admin surface on: %d %s, want %d %s", m, st, code, want, wantCode)
		}
	}
}

// maxUses 0 would mean "unlimited" to pricing and the order scripts, so it
// is refused, naming the field; an omitted maxUses is unlimited.
func TestApplyRefusesMaxUsesZero(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	zero := strings.Replace(doc, `"tickets":`, `"discountCodes": [{"code": "FREE", "percent": 100, "maxUses": 0}], "tickets":`, 1)
	r := put(t, s, servertest.AdminToken, []byte(zero))
	if r.Status != 400 || r.Code != "INVALID_CATALOG" || !strings.Contains(r.Message, "tenants[0].events[0].discountCodes[0].maxUses") {
		t.Fatalf("maxUses 0: %s", r)
	}
	if s.Catalog.Current().Events["ev1"] != nil {
		t.Fatal("a refused document was applied")
	}
	one := strings.Replace(zero, `"maxUses": 0`, `"maxUses": 1`, 1)
	if r := put(t, s, servertest.AdminToken, []byte(one)); r.Status != 200 {
		t.Fatalf("maxUses 1: %s", r)
	}
}

// A channel key another channel already has is the operator's mistake, not
// a server fault: 400 INVALID_CATALOG naming the field (it was a 503 from
// the record's unique constraint), and nothing of the document is applied.
func TestApplyRefusesAChannelKeyInUse(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	if r := put(t, s, servertest.AdminToken, []byte(doc)); r.Status != 200 {
		t.Fatalf("apply: %s", r)
	}
	taken := `{"tenants": [], "channels": [{"id": "ch2", "name": "C2", "key": "ck1", "secret": "cs2_secret",
	  "scopes": ["catalog:read"], "ipAllowlist": ["127.0.0.1"], "settlement": "invoice"}]}`
	r := put(t, s, servertest.AdminToken, []byte(taken))
	if r.Status != 400 || r.Code != "INVALID_CATALOG" || r.Raw["path"] != "channels[0].key" {
		t.Fatalf("channel key of another channel: %s, want 400 INVALID_CATALOG at channels[0].key", r)
	}
	if s.Catalog.Current().Channels["ch2"] != nil {
		t.Fatal("the refused channel was applied")
	}
}
