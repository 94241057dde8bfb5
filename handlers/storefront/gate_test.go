package storefront_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/redisstate"
)

func start(t *testing.T) *servertest.Server {
	t.Helper()
	return servertest.StartStorefront(t, servertest.Options{})
}

var expect = servertest.Expect

func headers(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestKeyIsRequiredValidAndEnabled(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, c := range []struct {
		name    string
		headers map[string]string
		code    string
	}{
		{"no key", headers("Origin", servertest.ShopOrigin), "MISSING_KEY"},
		{"empty key", headers("x-service-key", "", "Origin", servertest.ShopOrigin), "MISSING_KEY"},
		{"unknown key", headers("x-service-key", "pk_nope", "Origin", servertest.ShopOrigin), "INVALID_KEY"},
		{"disabled key, its own domain", headers("x-service-key", "pk_shop_off", "Origin", servertest.ShopOrigin), "INVALID_KEY"},
		{"a channel key is no publishable key", headers("x-service-key", "ck_front", "Origin", servertest.ShopOrigin), "INVALID_KEY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			expect(t, s.Do(t, "GET", "/v1/storefront/events/sf_ga", c.headers, nil), 401, c.code)
		})
	}
}

func TestOriginMustBeOnTheKeysDomainList(t *testing.T) {
	t.Parallel()
	s := start(t)
	// pk_shop lists shop.example.com, *.example.org and localhost.
	for _, c := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"exact host", headers("Origin", "https://shop.example.com"), true},
		{"port ignored", headers("Origin", "https://shop.example.com:8443"), true},
		{"case ignored", headers("Origin", "HTTPS://SHOP.Example.COM"), true},
		{"plain http", headers("Origin", "http://shop.example.com"), true},
		{"wildcard subdomain", headers("Origin", "https://tickets.example.org"), true},
		{"wildcard deeper subdomain", headers("Origin", "https://a.b.example.org"), true},
		{"localhost with a port", headers("Origin", "http://localhost:3000"), true},
		{"Referer when no Origin", headers("Referer", "https://shop.example.com/events/summer?x=1"), true},
		{"wildcard is not the apex", headers("Origin", "https://example.org"), false},
		{"lookalike suffix", headers("Origin", "https://shop.example.com.evil.test"), false},
		{"lookalike prefix", headers("Origin", "https://evilexample.com"), false},
		{"lookalike of the wildcard", headers("Origin", "https://evilexample.org"), false},
		{"sibling subdomain", headers("Origin", "https://www.example.com"), false},
		{"other tenant's domain", headers("Origin", "https://other.example.net"), false},
		{"null origin", headers("Origin", "null"), false},
		{"not http", headers("Origin", "ftp://shop.example.com"), false},
		{"userinfo trick", headers("Origin", "https://shop.example.com@evil.test"), false},
		{"lookalike Referer", headers("Referer", "https://shop.example.com.evil.test/page"), false},
		{"Origin is final, Referer does not rescue it", headers("Origin", "https://evil.test", "Referer", "https://shop.example.com/"), false},
		{"neither Origin nor Referer", headers(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.headers["x-service-key"] = "pk_shop"
			r := s.Do(t, "GET", "/v1/storefront/events/sf_ga", c.headers, nil)
			if c.ok {
				expect(t, r, 200, "")
				return
			}
			expect(t, r, 403, "ORIGIN_NOT_ALLOWED")
		})
	}
}

// A refused origin says which fault the page has: no header at all, a
// header naming no usable origin (the page cannot fix that by adding its
// domain to the key), or a domain not on the list.
func TestRefusedOriginSaysWhy(t *testing.T) {
	t.Parallel()
	s := start(t)
	message := func(h map[string]string) string {
		t.Helper()
		h["x-service-key"] = "pk_shop"
		r := s.Do(t, "GET", "/v1/storefront/events/sf_ga", h, nil)
		expect(t, r, 403, "ORIGIN_NOT_ALLOWED")
		return r.Message
	}
	none := message(headers())
	if !strings.Contains(none, "no Origin or Referer") {
		t.Fatalf("no header: %q", none)
	}
	for _, h := range []map[string]string{
		headers("Origin", "null"),
		headers("Origin", "ftp://shop.example.com"),
		headers("Origin", "https://shop.example.com@evil.test"),
		headers("Referer", "https://user@shop.example.com/page"),
		headers("Origin", "null", "Referer", "https://shop.example.com/"),
	} {
		if m := message(h); m == none || !strings.Contains(m, "http(s) origin") {
			t.Errorf("%v answered %q, want the unusable-origin message", h, m)
		}
	}
	// Issue 21: the refusal names the origin received and where the
	// key's list is set.
	want := "the page's origin host evil.test is not on the domain list of publishable key pk_shop; " +
		"a key's list is its domains in the catalog (tenants[].publishableKeys[].domains), applied with ticketctl apply"
	for _, h := range []map[string]string{headers("Origin", "https://evil.test"), headers("Referer", "https://EVIL.test:8443/page")} {
		if m := message(h); m != want {
			t.Errorf("foreign origin %v: %q, want %q", h, m, want)
		}
	}
}

func TestEventByIDShortIDOrSlugWithinTheTenant(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, ref := range []string{"sf_ga", "sfga1", "summer"} {
		r := s.Front(t, "GET", "/events/"+ref, nil)
		expect(t, r, 200, "")
		var ev struct{ ID, ShortID, Slug string }
		r.Decode(t, &ev)
		if ev.ID != "sf_ga" || ev.ShortID != "sfga1" || ev.Slug != "summer" {
			t.Fatalf("%s resolved to %+v", ref, ev)
		}
	}
	// Both tenants have an event with slug "summer": each key finds its own.
	r := s.Do(t, "GET", "/v1/storefront/events/summer", headers("x-service-key", "pk_other", "Origin", "https://other.example.net"), nil)
	expect(t, r, 200, "")
	var ev struct{ ID string }
	r.Decode(t, &ev)
	if ev.ID != "ot_ga" {
		t.Fatalf("pk_other's summer = %s, want ot_ga", ev.ID)
	}
}

// Another tenant's event, by any of its names, and a draft answer exactly
// as an event that does not exist, so a key learns nothing beyond its
// tenant.
func TestForeignDraftAndUnknownEventsAreIndistinguishable(t *testing.T) {
	t.Parallel()
	s := start(t)
	unknown := s.Front(t, "GET", "/events/no-such-event", nil)
	expect(t, unknown, 404, "EVENT_NOT_FOUND")
	for _, ref := range []string{"ot_ga", "otga1", "sf_draft", "sfdr1", "draft"} {
		r := s.Front(t, "GET", "/events/"+ref, nil)
		expect(t, r, 404, "EVENT_NOT_FOUND")
		if !bytes.Equal(r.Body, unknown.Body) {
			t.Fatalf("%s: body %q differs from an unknown event's %q", ref, r.Body, unknown.Body)
		}
	}
	// The same through the body of a POST.
	q := s.Front(t, "POST", "/quote", map[string]any{"eventId": "ot_ga", "selectedTicketId": "tk_o"})
	expect(t, q, 404, "EVENT_NOT_FOUND")
	if !bytes.Equal(q.Body, unknown.Body) {
		t.Fatalf("quote of a foreign event: %q, want %q", q.Body, unknown.Body)
	}
}

func TestEventNotSwitchedOnIsNotPublic(t *testing.T) {
	t.Parallel()
	s := start(t)
	expect(t, s.Front(t, "GET", "/events/sf_off", nil), 403, "EVENT_NOT_PUBLIC")
	expect(t, s.Front(t, "POST", "/quote", map[string]any{"eventId": "private", "selectedTicketId": "tk"}), 403, "EVENT_NOT_PUBLIC")
	r := s.Front(t, "GET", "/events/sf_cancelled", nil)
	expect(t, r, 403, "EVENT_NOT_PUBLIC")
	if r.Reason != "cancelled" {
		t.Fatalf("cancelled event: reason %q, want cancelled", r.Reason)
	}
	// Not on sale yet: shown, not sold.
	d := s.Front(t, "GET", "/events/sf_later", nil)
	expect(t, d, 200, "")
	var ev struct{ Available bool }
	d.Decode(t, &ev)
	if ev.Available {
		t.Fatal("an embargoed event is available")
	}
	expect(t, s.Front(t, "POST", "/quote", map[string]any{"eventId": "sf_later", "selectedTicketId": "tk"}), 403, "EVENT_NOT_AVAILABLE")
}

func TestCORSPreflightAnsweredForAllowedOriginsOnly(t *testing.T) {
	t.Parallel()
	s := start(t)
	pre := func(origin string) *servertest.Response {
		return s.Do(t, "OPTIONS", "/v1/storefront/register-guest", headers("Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-service-key, content-type"), nil)
	}
	for _, o := range []string{"https://shop.example.com", "https://tickets.example.org", "https://other.example.net"} {
		r := s.Do(t, "OPTIONS", "/v1/storefront/register-guest", headers("Origin", o,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-service-key, content-type"), nil)
		if r.Status != 204 {
			t.Fatalf("preflight from %s: %d %s", o, r.Status, r.Body)
		}
		h := r.Header
		if h.Get("Access-Control-Allow-Origin") != o {
			t.Fatalf("preflight from %s: Allow-Origin %q", o, h.Get("Access-Control-Allow-Origin"))
		}
		allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
		for _, want := range []string{"x-service-key", "content-type"} {
			if !strings.Contains(allowed, want) {
				t.Fatalf("Allow-Headers %q lacks %s", allowed, want)
			}
		}
		if m := h.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "POST") || !strings.Contains(m, "GET") {
			t.Fatalf("Allow-Methods %q", m)
		}
		if n, err := strconv.Atoi(h.Get("Access-Control-Max-Age")); err != nil || n <= 0 {
			t.Fatalf("Max-Age %q", h.Get("Access-Control-Max-Age"))
		}
		if !strings.Contains(h.Get("Vary"), "Origin") {
			t.Fatalf("Vary %q", h.Get("Vary"))
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatal("credentials allowed")
		}
	}
	for _, o := range []string{"https://shop.example.com.evil.test", "https://evil.test", "null"} {
		r := pre(o)
		expect(t, r, 403, "ORIGIN_NOT_ALLOWED")
		if v := r.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Fatalf("preflight from %s got Allow-Origin %q", o, v)
		}
	}
	// The disabled key's domains do not count: off.example.com is on
	// pk_shop_off's list only. The refusal names the host received.
	r := pre("https://off.example.com")
	expect(t, r, 403, "ORIGIN_NOT_ALLOWED")
	if !strings.Contains(r.Message, "origin host off.example.com is on no enabled publishable key's domain list") {
		t.Errorf("preflight refusal: %q", r.Message)
	}
	if v := r.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Fatalf("preflight from a disabled key's domain got Allow-Origin %q", v)
	}
}

func TestActualResponsesCarryCORSForAllowedOriginsOnly(t *testing.T) {
	t.Parallel()
	s := start(t)
	ok := s.Front(t, "GET", "/events/sf_ga", nil)
	expect(t, ok, 200, "")
	if ok.Header.Get("Access-Control-Allow-Origin") != servertest.ShopOrigin || !strings.Contains(ok.Header.Get("Vary"), "Origin") {
		t.Fatalf("allowed origin's answer: Allow-Origin %q, Vary %q", ok.Header.Get("Access-Control-Allow-Origin"), ok.Header.Get("Vary"))
	}
	// An error the page must be able to read carries it too.
	nf := s.Front(t, "GET", "/events/nope", nil)
	if nf.Header.Get("Access-Control-Allow-Origin") != servertest.ShopOrigin {
		t.Fatalf("404 for an allowed origin lacks Allow-Origin")
	}
	bad := s.Do(t, "GET", "/v1/storefront/events/sf_ga", headers("x-service-key", "pk_shop", "Origin", "https://evil.test"), nil)
	expect(t, bad, 403, "ORIGIN_NOT_ALLOWED")
	if v := bad.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Fatalf("foreign origin got Allow-Origin %q", v)
	}
	// Another tenant's domain is allowed for its own key, not for pk_shop.
	cross := s.Do(t, "GET", "/v1/storefront/events/sf_ga", headers("x-service-key", "pk_shop", "Origin", "https://other.example.net"), nil)
	expect(t, cross, 403, "ORIGIN_NOT_ALLOWED")
	if v := cross.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Fatalf("another key's origin got Allow-Origin %q on pk_shop's answer", v)
	}
}

func TestPerIPRateLimitsByClass(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{Trusted: "127.0.0.1/32"})
	from := func(ip string) map[string]string {
		h := servertest.Shop()
		h["X-Forwarded-For"] = ip
		return h
	}
	pay := func(ip string) *servertest.Response {
		return s.Do(t, "POST", "/v1/storefront/wallet/create-payment", from(ip), map[string]any{"amount": 1})
	}
	// interface.md: about 20 payment calls a minute per IP.
	for i := 0; i < 20; i++ {
		expect(t, pay("198.51.100.7"), 400, "INVALID_REQUEST")
	}
	r := pay("198.51.100.7")
	expect(t, r, 429, "RATE_LIMITED")
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	if r.Header.Get("Access-Control-Allow-Origin") != servertest.ShopOrigin || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Fatalf("429 not readable by the page: %v", r.Header)
	}
	// Another client IP, and another class of the same IP, have buckets of
	// their own.
	expect(t, pay("198.51.100.8"), 400, "INVALID_REQUEST")
	expect(t, s.Do(t, "GET", "/v1/storefront/events/sf_ga", from("198.51.100.7"), nil), 200, "")
}

func TestWritesAreLimitedToThirtyAMinute(t *testing.T) {
	t.Parallel()
	s := start(t)
	body := map[string]any{"eventId": "sf_ga", "selectedTicketId": "tk_adult"} // no buyer: refused before anything is held
	for i := 0; i < 30; i++ {
		expect(t, s.Front(t, "POST", "/register-guest", body), 400, "INVALID_BUYER_NAME")
	}
	expect(t, s.Front(t, "POST", "/register-guest", body), 429, "RATE_LIMITED")
}

func TestBodyOver64KBIs413(t *testing.T) {
	t.Parallel()
	s := start(t)
	big := `{"eventId":"sf_ga","discountCode":"` + strings.Repeat("x", 65*1024) + `"}`
	expect(t, s.Front(t, "POST", "/quote", []byte(big)), 413, "PAYLOAD_TOO_LARGE")
}

// A node whose Redis lost its state answers the storefront 503 before it
// looks at the key: a site's valid key never turns into a 401.
func TestStoppedSalesAnswer503BeforeTheKey(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(s.Space.Live(0)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Monitor.View().Status == redisstate.Current {
		if time.Now().After(deadline) {
			t.Fatal("the monitor did not see the lost marker")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, h := range []map[string]string{servertest.Shop(), headers("Origin", servertest.ShopOrigin)} {
		r := s.Do(t, "GET", "/v1/storefront/events/sf_ga", h, nil)
		expect(t, r, 503, "SERVICE_UNAVAILABLE")
		if r.Header.Get("Access-Control-Allow-Origin") != servertest.ShopOrigin {
			t.Fatal("the 503 is not readable by the shop's page")
		}
	}
}
