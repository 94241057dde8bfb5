package picker_test

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/handlers/servertest"
)

// The picker tests' catalog: the storefront's, plus a seated event of the
// other tenant and a seated event not on sale yet.
var extraShop = []map[string]any{{
	"id": "pk_later", "shortId": "pklat1", "slug": "hall-later", "name": "Hall, later", "startsAt": "2099-07-01T18:00:00Z",
	"status": "on_sale", "onSaleAt": "2099-01-01T00:00:00Z", "storefront": true, "channels": []string{}, "tickets": []any{},
	"seatMap": map[string]any{"categories": []any{map[string]any{"id": "std", "name": "Standard", "price": 30}},
		"rows": []any{map[string]any{"label": "L", "seats": 8, "category": "std"}}},
}}

var extraOther = []map[string]any{{
	"id": "ot_hall", "shortId": "othall1", "slug": "hall", "name": "Other Hall", "startsAt": "2027-07-01T18:00:00Z",
	"status": "on_sale", "storefront": true, "channels": []string{}, "tickets": []any{},
	"seatMap": map[string]any{"categories": []any{map[string]any{"id": "std", "name": "Standard", "price": 30}},
		"rows": []any{map[string]any{"label": "O", "seats": 8, "category": "std"}}},
}}

// catalogWith is StorefrontCatalog with more events for pk_shop's tenant
// (t_shop) and for t_other.
func catalogWith(t testing.TB, shop, other []map[string]any) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(servertest.StorefrontCatalog), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tn := range doc["tenants"].([]any) {
		tm := tn.(map[string]any)
		add := shop
		if tm["id"] == "t_other" {
			add = other
		}
		for _, e := range add {
			tm["events"] = append(tm["events"].([]any), e)
		}
	}
	return doc
}

func start(t testing.TB) *servertest.Server {
	t.Helper()
	s := servertest.StartStorefront(t, servertest.Options{})
	s.Apply(t, catalogWith(t, extraShop, extraOther))
	return s
}

type page struct {
	Status int
	Header http.Header
	Body   string
}

// get fetches a page (not an API envelope).
func get(t testing.TB, s *servertest.Server, path string) page {
	t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(s.URL + path)
	if err := s.Client.Do(req, resp); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	p := page{Status: resp.StatusCode(), Header: http.Header{}, Body: string(resp.Body())}
	for k, v := range resp.Header.All() {
		p.Header.Add(string(k), string(v))
	}
	return p
}

// pageConfig is what the page hands its script.
type pageConfig struct {
	EventID  string   `json:"eventId"`
	API      string   `json:"api"`
	Token    string   `json:"token"`
	Domains  []string `json:"domains"`
	OnSaleAt string   `json:"onSaleAt"`
}

var dataAttr = regexp.MustCompile(`data-picker="([^"]*)"`)

func config(t testing.TB, p page) pageConfig {
	t.Helper()
	m := dataAttr.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("page has no data-picker: %d %.300s", p.Status, p.Body)
	}
	var c pageConfig
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &c); err != nil {
		t.Fatalf("data-picker %q: %v", m[1], err)
	}
	return c
}

const hallPage = "/events/hall/sfst1/seatmap?app=storefront"

func pickerHeaders(token string) map[string]string {
	return map[string]string{picker.TokenHeader: token}
}

// call sends a picker API call for the event with the token.
func call(t testing.TB, s *servertest.Server, token, method, event, path string, body any) *servertest.Response {
	t.Helper()
	return s.Do(t, method, picker.Prefix+"/seating/events/"+event+path, pickerHeaders(token), body)
}

// Unknown, draft, cancelled, not on the storefront, not seated, a slug
// of another event or tenant, another app: the same plain 404 page.
func TestPageNotFoundTellsNothing(t *testing.T) {
	t.Parallel()
	s := start(t)
	unknown := get(t, s, "/events/hall/nope1/seatmap?app=storefront")
	if unknown.Status != 404 || !strings.Contains(unknown.Body, "Seat map not found") {
		t.Fatalf("unknown event: %d %.200s", unknown.Status, unknown.Body)
	}
	if strings.Contains(unknown.Body, "data-picker") || strings.Contains(unknown.Body, "x-picker-token") {
		t.Fatal("the 404 page carries a token")
	}
	for _, path := range []string{
		"/events/draft/sfdr1/seatmap?app=storefront",        // draft
		"/events/called-off/sfca1/seatmap?app=storefront",   // cancelled
		"/events/private/sfof1/seatmap?app=storefront",      // storefront: false
		"/events/summer/sfga1/seatmap?app=storefront",       // not seated
		"/events/summer/sfst1/seatmap?app=storefront",       // another event's slug
		"/events/hall-later/othall1/seatmap?app=storefront", // one tenant's slug, the other's shortId
		"/events/hall/sfst1/seatmap?app=partner",            // another app
	} {
		p := get(t, s, path)
		if p.Status != 404 || p.Body != unknown.Body {
			t.Errorf("%s: %d %.120s, want the unknown event's 404", path, p.Status, p.Body)
		}
	}
}

// The page is framed by the event's tenant's sites only: frame-ancestors
// lists the domains of its enabled publishable keys (a disabled key's
// off.example.com is not there), and the other tenant's page its own.
func TestPageCSPListsTheTenantsDomains(t *testing.T) {
	t.Parallel()
	s := start(t)
	p := get(t, s, hallPage)
	if p.Status != 200 {
		t.Fatalf("seat map: %d %.300s", p.Status, p.Body)
	}
	want := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors http://shop.example.com:* https://shop.example.com:* " +
		"http://*.example.org:* https://*.example.org:* http://localhost:* https://localhost:*"
	if got := p.Header.Get("Content-Security-Policy"); got != want {
		t.Fatalf("CSP\n got %s\nwant %s", got, want)
	}
	for h, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if got := p.Header.Get(h); got != v {
			t.Errorf("%s: %q, want %q", h, got, v)
		}
	}
	if !strings.Contains(p.Body, "<h1 class=\"event-name\">Hall</h1>") || strings.Contains(p.Body, "<script>") ||
		strings.Contains(p.Body, "style=") {
		t.Errorf("page: want the event's name and no inline script or style: %.600s", p.Body)
	}
	c := config(t, p)
	if c.EventID != "sf_seated" || c.Token == "" || strings.Join(c.Domains, " ") != "shop.example.com *.example.org localhost" {
		t.Errorf("page data: %+v", c)
	}
	other := get(t, s, "/events/hall/othall1/seatmap?app=storefront")
	if got := other.Header.Get("Content-Security-Policy"); !strings.HasSuffix(got,
		"frame-ancestors http://other.example.net:* https://other.example.net:*") {
		t.Errorf("other tenant's CSP: %s", got)
	}
	// The script and style the page loads are served, versioned.
	js := regexp.MustCompile(`src="(/assets/picker/picker\.js\?v=[0-9a-f]+)"`).FindStringSubmatch(p.Body)
	if js == nil {
		t.Fatal("page loads no picker.js")
	}
	a := get(t, s, html.UnescapeString(js[1]))
	if a.Status != 200 || !strings.HasPrefix(a.Header.Get("Content-Type"), "text/javascript") ||
		!strings.Contains(a.Header.Get("Cache-Control"), "immutable") || !strings.Contains(a.Body, "x-picker-token") {
		t.Errorf("picker.js: %d %v", a.Status, a.Header)
	}
	if u := get(t, s, "/assets/picker/picker.css"); u.Status != 200 || u.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("unversioned picker.css: %d %v", u.Status, u.Header)
	}
	if u := get(t, s, "/assets/picker/secret.go"); u.Status != 404 {
		t.Errorf("unknown asset: %d", u.Status)
	}
}

// The API takes the page's token only: missing, malformed, forged,
// expired, another event's or another tenant's are refused with the
// envelope, before anything is read.
func TestAPIRefusesBadTokens(t *testing.T) {
	t.Parallel()
	s := start(t)
	good := config(t, get(t, s, hallPage)).Token
	key := []byte(servertest.PickerKey)
	later := time.Now().Add(time.Hour)
	servertest.Expect(t, s.Do(t, "GET", picker.Prefix+"/seating/events/sf_seated/config", nil, nil), 401, "MISSING_KEY")
	for name, tok := range map[string]string{
		"garbage":       "not-a-token",
		"forged":        picker.Sign([]byte("another key"), "sf_seated", "t_shop", later),
		"tampered":      strings.Replace(good, "sf_seated", "sf_rush", 1),
		"expired":       picker.Sign(key, "sf_seated", "t_shop", time.Now().Add(-time.Second)),
		"other event":   config(t, get(t, s, "/events/hall-later/pklat1/seatmap")).Token,
		"other tenant":  picker.Sign(key, "sf_seated", "t_other", later),
		"truncated mac": good[:len(good)-2],
	} {
		r := call(t, s, tok, "GET", "sf_seated", "/config", nil)
		servertest.Expect(t, r, 401, "INVALID_KEY")
		if r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: CORS headers on the picker API", name)
		}
	}
	// A token for another event does not open this one either way round.
	rush := picker.Sign(key, "sf_rush", "t_shop", later)
	servertest.Expect(t, call(t, s, rush, "POST", "sf_seated", "/hold-token", nil), 401, "INVALID_KEY")
	servertest.Expect(t, call(t, s, rush, "GET", "sf_rush", "/config", nil), 200, "")
}

// With the page's token the picker holds and releases seats, which the
// storefront's availability shows: one seat state for both.
func TestAPIHoldsAndReleasesWithTheToken(t *testing.T) {
	t.Parallel()
	s := start(t)
	tok := config(t, get(t, s, hallPage)).Token
	r := call(t, s, tok, "GET", "sf_seated", "/config", nil)
	servertest.Expect(t, r, 200, "")
	r = call(t, s, tok, "POST", "sf_seated", "/hold-token", nil)
	servertest.Expect(t, r, 200, "")
	var ht struct{ HoldToken string }
	r.Decode(t, &ht)
	r = call(t, s, tok, "POST", "sf_seated", "/hold", map[string]any{"holdToken": ht.HoldToken, "seatLabels": []string{"A-1", "A-2"}})
	servertest.Expect(t, r, 200, "")
	var held struct {
		SeatLabels []string
		Subtotal   float64
	}
	r.Decode(t, &held)
	if strings.Join(held.SeatLabels, ",") != "A-1,A-2" || held.Subtotal != 80 {
		t.Fatalf("hold: %s", r)
	}
	av := s.Front(t, "GET", "/seating/events/sf_seated/availability", nil)
	if !bytes.Contains(av.Body, []byte(`"A-1","A-2"`)) {
		t.Fatalf("storefront availability after the picker's hold: %s", av)
	}
	r = call(t, s, tok, "POST", "sf_seated", "/release", map[string]any{"holdToken": ht.HoldToken, "seatLabels": []string{"A-1"}})
	servertest.Expect(t, r, 200, "")
	r = call(t, s, tok, "GET", "sf_seated", "/availability", nil)
	var a struct{ Held []string }
	r.Decode(t, &a)
	if strings.Join(a.Held, ",") != "A-2" {
		t.Fatalf("availability after release: %s", r)
	}
	// Another buyer's picker meets the held seat as a conflict.
	other := config(t, get(t, s, hallPage)).Token
	r = call(t, s, other, "POST", "sf_seated", "/hold-token", nil)
	r.Decode(t, &ht)
	r = call(t, s, other, "POST", "sf_seated", "/hold", map[string]any{"holdToken": ht.HoldToken, "seatLabels": []string{"A-2"}})
	servertest.Expect(t, r, 409, "SEAT_CONFLICT")
}

// An event not on sale yet is shown (config, availability) but not held;
// one the host switches off after the page was served is refused.
func TestAPIFollowsTheStorefrontEventRule(t *testing.T) {
	t.Parallel()
	s := start(t)
	p := get(t, s, "/events/hall-later/pklat1/seatmap?app=storefront")
	c := config(t, p)
	if p.Status != 200 || c.OnSaleAt == "" {
		t.Fatalf("page of an event not on sale yet: %d %+v", p.Status, c)
	}
	servertest.Expect(t, call(t, s, c.Token, "GET", "pk_later", "/config", nil), 200, "")
	servertest.Expect(t, call(t, s, c.Token, "GET", "pk_later", "/availability", nil), 200, "")
	servertest.Expect(t, call(t, s, c.Token, "POST", "pk_later", "/hold-token", nil), 403, "EVENT_NOT_AVAILABLE")

	tok := config(t, get(t, s, hallPage)).Token
	doc := catalogWith(t, extraShop, extraOther)
	for _, e := range doc["tenants"].([]any)[0].(map[string]any)["events"].([]any) {
		if e.(map[string]any)["id"] == "sf_seated" {
			e.(map[string]any)["storefront"] = false
		}
	}
	s.Apply(t, doc)
	servertest.Expect(t, call(t, s, tok, "GET", "sf_seated", "/config", nil), 403, "EVENT_NOT_PUBLIC")
	if p := get(t, s, hallPage); p.Status != 404 {
		t.Fatalf("page of an event switched off: %d", p.Status)
	}
}

// The picker's availability polls have a budget of their own: a buyer's
// two pickers polling once a second for a minute (120 polls) leave the
// reads budget whole; holds take the storefront's write budget.
func TestAPIRateClasses(t *testing.T) {
	t.Parallel()
	s := start(t)
	tok := config(t, get(t, s, hallPage)).Token
	for i := range 130 {
		if r := call(t, s, tok, "GET", "sf_seated", "/availability", nil); r.Status != 200 {
			t.Fatalf("poll %d: %s", i+1, r)
		}
	}
	servertest.Expect(t, call(t, s, tok, "GET", "sf_seated", "/config", nil), 200, "")
	var refused *servertest.Response
	for range 40 {
		if r := call(t, s, tok, "POST", "sf_seated", "/hold-token", nil); r.Status != 200 {
			refused = r
			break
		}
	}
	if refused == nil {
		t.Fatal("40 hold-tokens a minute from one address were all served")
	}
	servertest.Expect(t, refused, 429, "RATE_LIMITED")
	if refused.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
}
