package main

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/inventory/payments"
)

// The probes of issue 17, "Inventory held without paying", against a whole
// ticketd over real sockets: each shows what one client could hold before
// and is now bounded. Each client is an address of its own, believed in
// X-Forwarded-For from loopback (TICKETD_TRUSTED_PROXIES).

// holdsCatalog has an event of 1,000 tickets without maxPerOrder (the
// probe's), one with maxPerOrder and maxTicketsPerBuyer 4, a hall of 60
// seats for the seat picker and a free event of 1,000, sold by pk_probe
// on localhost and, for the GA event, by ch_probe.
const holdsCatalog = `{
 "tenants": [{"id": "t_probe", "name": "Probe Host", "notifyEmail": "host@probe.test",
  "publishableKeys": [{"key": "pk_probe", "domains": ["localhost"], "enabled": true}],
  "events": [
   {"id": "ev_probe_ga", "shortId": "prb1", "slug": "probe-ga", "name": "Probe GA", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_probe"], "capacity": 1000,
    "tickets": [{"id": "tk", "name": "General", "price": 10, "capacity": 1000}]},
   {"id": "ev_probe_lim", "shortId": "prb2", "slug": "probe-lim", "name": "Probe Limited", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "capacity": 1000, "maxTicketsPerBuyer": 4,
    "tickets": [{"id": "tk", "name": "General", "price": 10, "capacity": 1000, "maxPerOrder": 4}]},
   {"id": "ev_probe_hall", "shortId": "prb3", "slug": "probe-hall", "name": "Probe Hall", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "tickets": [],
    "seatMap": {"categories": [{"id": "std", "name": "Standard", "price": 20}],
     "rows": [{"label": "A", "seats": 20, "category": "std"}, {"label": "B", "seats": 20, "category": "std"},
              {"label": "C", "seats": 20, "category": "std"}]}},
   {"id": "ev_probe_free", "shortId": "prb4", "slug": "probe-free", "name": "Probe Free", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "capacity": 1000,
    "tickets": [{"id": "tk", "name": "Free", "price": 0, "capacity": 1000}]}
  ]}],
 "channels": [{"id": "ch_probe", "name": "Probe Partner", "key": "ck_probe", "secret": "cs_probe_secret", "signingKey": "sk_probe",
  "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
  "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"}]
}`

const probeCardSecret = "probe-card-webhook-secret"

// probe is a ticketd with holdsCatalog applied.
type probe struct {
	t    *testing.T
	base string
}

// startProbe runs ticketd (API only: no worker, no mail) with cfg
// adjusted by tune, trusting loopback's X-Forwarded-For, and applies
// holdsCatalog.
func startProbe(t *testing.T, tune func(*config)) *probe {
	t.Helper()
	cfg := localConfig(t)
	cfg.TrustedProxies, cfg.AdminToken, cfg.CardWebhookSecret = "127.0.0.1/32, ::1/128", "probe-admin-token", probeCardSecret
	if tune != nil {
		tune(&cfg)
	}
	p := &probe{t: t, base: runTicketd(t, cfg, options{API: true})}
	if st, body := call(t, "PUT", p.base+"/v1/admin/catalog", map[string]string{"Authorization": "Bearer probe-admin-token"}, holdsCatalog); st != 200 {
		t.Fatalf("apply: %d %s", st, body)
	}
	return p
}

// answer is a decoded envelope.
type answer struct {
	status int
	raw    string
	env    map[string]any
}

func (a answer) code() string { s, _ := a.env["code"].(string); return s }

func (a answer) data() map[string]any { d, _ := a.env["data"].(map[string]any); return d }

func (a answer) str(field string) string { s, _ := a.data()[field].(string); return s }

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.raw) }

func (p *probe) do(method, path string, h map[string]string, body string) answer {
	p.t.Helper()
	st, raw := call(p.t, method, p.base+path, h, body)
	a := answer{status: st, raw: raw}
	if err := json.Unmarshal([]byte(raw), &a.env); err != nil {
		p.t.Fatalf("%s %s: %d %s: not the envelope: %v", method, path, st, raw, err)
	}
	return a
}

// shop is the storefront headers of a buyer at ip.
func shop(ip string) map[string]string {
	return map[string]string{"x-service-key": "pk_probe", "Origin": "http://localhost:3000", "Content-Type": "application/json",
		"X-Forwarded-For": ip}
}

var partnerProbe = map[string]string{"x-service-key": "ck_probe", "x-service-secret": "cs_probe_secret", "Content-Type": "application/json"}

// register is register-guest of a buyer at ip; cart holds the cart's
// fields without braces.
func (p *probe) register(ip, event, name, email, cart string) answer {
	p.t.Helper()
	return p.do("POST", "/v1/storefront/register-guest", shop(ip),
		fmt.Sprintf(`{"eventId":%q,"name":%q,"email":%q,%s}`, event, name, email, cart))
}

// remaining is what the storefront's event detail says is left of the
// event, and its maxPerOrder and its first ticket's.
func (p *probe) remaining(ip, event string) (left, maxPerOrder, ticketMax float64) {
	p.t.Helper()
	a := p.do("GET", "/v1/storefront/events/"+event, shop(ip), "")
	if a.status != 200 {
		p.t.Fatalf("event %s: %s", event, a)
	}
	d := a.data()
	left, _ = d["remaining"].(float64)
	maxPerOrder, _ = d["maxPerOrder"].(float64)
	if tks, _ := d["tickets"].([]any); len(tks) > 0 {
		ticketMax, _ = tks[0].(map[string]any)["maxPerOrder"].(float64)
	}
	return left, maxPerOrder, ticketMax
}

// registration reads a registration's view.
func (p *probe) registration(ip, id string) answer {
	p.t.Helper()
	return p.do("GET", "/v1/storefront/registration/"+id, shop(ip), "")
}

// pay opens a card checkout session for a registration of n tickets at
// unit dollars and delivers the processor's signed webhook for it.
func (p *probe) pay(ip, event, id string, n, unit int) {
	p.t.Helper()
	s := p.do("POST", "/v1/storefront/card/create-checkout-session", shop(ip), fmt.Sprintf(
		`{"eventId":%q,"registrationId":%q,"selectedTicketId":"tk","quantity":%d,"selectedTicketAmount":%d,`+
			`"successUrl":"http://localhost:3000/ok","cancelUrl":"http://localhost:3000/no"}`, event, id, n, n*unit))
	if s.status != 200 {
		p.t.Fatalf("checkout session: %s", s)
	}
	hook := fmt.Sprintf(`{"id":"evt_%s","type":%q,"data":{"object":{"id":%q,"payment_status":"paid","amount_total":%d,"currency":"usd","client_reference_id":%q}}}`,
		s.str("sessionId"), payments.EventCheckoutCompleted, s.str("sessionId"), n*unit*100, id)
	st, body := call(p.t, "POST", p.base+"/v1/webhooks/card", map[string]string{"Content-Type": "application/json",
		payments.SignatureHeader: payments.Sign(probeCardSecret, time.Now(), []byte(hook))}, hook)
	if st != 200 {
		p.t.Fatalf("card webhook: %d %s", st, body)
	}
	if r := p.registration(ip, id); r.str("status") != "confirmed" {
		p.t.Fatalf("registration after its payment: %s", r)
	}
}

// The probe: one register-guest with quantity 1,000 held a whole
// 1,000-ticket event whose catalog set no maxPerOrder. Now such an event
// takes 10 an order, shown in its detail, and 1,000 is refused with the
// cart's code on the storefront's quote and register and the partner's
// quote and reserve alike; a free event the same, with nothing claimed.
// A buyer's name is at most 100 characters on both surfaces.
func TestHoldsProbeOneRequestCannotHoldAnEvent(t *testing.T) {
	p := startProbe(t, nil)
	const ip = "203.0.113.10"
	left, maxPerOrder, ticketMax := p.remaining(ip, "ev_probe_ga")
	if left != 1000 || maxPerOrder != 10 || ticketMax != 10 {
		t.Fatalf("event detail: remaining %v, maxPerOrder %v, ticket maxPerOrder %v; want 1000, 10, 10", left, maxPerOrder, ticketMax)
	}
	refused := func(what string, a answer) {
		t.Helper()
		if a.status != 400 || a.code() != "MAX_PER_ORDER_EXCEEDED" || a.env["maxPerOrder"] != float64(10) {
			t.Errorf("%s of 1,000: %s, want 400 MAX_PER_ORDER_EXCEEDED, maxPerOrder 10", what, a)
		}
	}
	thousand := `"selectedTicketId":"tk","quantity":1000`
	refused("storefront quote", p.do("POST", "/v1/storefront/quote", shop(ip), `{"eventId":"ev_probe_ga",`+thousand+`}`))
	refused("register-guest", p.register(ip, "ev_probe_ga", "Mallory", "mallory@example.com", thousand))
	refused("free register-guest", p.register(ip, "ev_probe_free", "Mallory", "mallory@example.com", thousand))
	refused("partner quote", p.do("POST", "/v1/channel/events/ev_probe_ga/quote", partnerProbe, `{`+thousand+`}`))
	refused("partner reserve", p.do("POST", "/v1/channel/events/ev_probe_ga/checkout", with(partnerProbe, "Idempotency-Key", "probe-1"),
		`{"buyerName":"Mallory","buyerEmail":"mallory@example.com",`+thousand+`}`))
	for _, ev := range []string{"ev_probe_ga", "ev_probe_free"} {
		if left, _, _ := p.remaining(ip, ev); left != 1000 {
			t.Fatalf("%s: %v left after the refusals, want 1000", ev, left)
		}
	}
	if a := p.register(ip, "ev_probe_ga", "Ann", "ann@example.com", `"selectedTicketId":"tk","quantity":10`); a.status != 200 {
		t.Fatalf("10 tickets: %s", a)
	}
	if a := p.register(ip, "ev_probe_free", "Ann", "ann@example.com", `"selectedTicketId":"tk","quantity":10`); a.str("status") != "confirmed" {
		t.Fatalf("10 free tickets: %s", a)
	}
	if left, _, _ := p.remaining(ip, "ev_probe_ga"); left != 990 {
		t.Fatalf("%v left after a registration of 10", left)
	}

	long := strings.Repeat("M", 101)
	if a := p.register(ip, "ev_probe_free", long, "long@example.com", `"selectedTicketId":"tk"`); a.status != 400 || a.code() != "INVALID_BUYER_NAME" {
		t.Errorf("a name of 101 characters on the storefront: %s", a)
	}
	if a := p.do("POST", "/v1/channel/events/ev_probe_ga/checkout", with(partnerProbe, "Idempotency-Key", "probe-2"),
		fmt.Sprintf(`{"buyerName":%q,"buyerEmail":"long@example.com","selectedTicketId":"tk"}`, long)); a.status != 400 || a.code() != "INVALID_BUYER_NAME" {
		t.Errorf("a name of 101 characters on the partner surface: %s", a)
	}
}

// The probe: with maxPerOrder and maxTicketsPerBuyer 4, one address held
// 120 tickets with 30 requests under 30 e-mail addresses, and "+tag"
// spellings of one address passed the buyer limit (12 requests here: the
// probe's 30 are the write rate limit's whole minute). Now one address
// holds at most 8 registrations awaiting payment per event (409
// HOLD_LIMIT_REACHED, saying what to do), another address is not held
// back by it, one paid registration frees a place at once, and the
// spellings of one inbox are one buyer whose new registration releases
// the older one, its tickets back on sale.
func TestHoldsProbeOneAddressHoldsAtMostEight(t *testing.T) {
	p := startProbe(t, nil)
	const ip, other = "203.0.113.20", "203.0.113.21"
	var ids []string
	for i := range 12 {
		a := p.register(ip, "ev_probe_lim", "Mallory", fmt.Sprintf("mallory%d@example.com", i), `"selectedTicketId":"tk","quantity":4`)
		if i < 8 {
			if a.status != 200 {
				t.Fatalf("registration %d: %s", i+1, a)
			}
			ids = append(ids, a.str("registrationId"))
			continue
		}
		if a.status != 409 || a.code() != "HOLD_LIMIT_REACHED" || !strings.Contains(a.env["message"].(string), "finish paying for one") {
			t.Fatalf("registration %d from one address: %s, want 409 HOLD_LIMIT_REACHED saying what to do", i+1, a)
		}
	}
	if left, _, _ := p.remaining(ip, "ev_probe_lim"); left != 1000-32 {
		t.Fatalf("%v left: one address holds more than 8 registrations of 4", left)
	}
	if a := p.register(other, "ev_probe_lim", "Bob", "bob@example.com", `"selectedTicketId":"tk","quantity":4`); a.status != 200 {
		t.Fatalf("another address: %s", a)
	}
	// a household that paid can buy again at once
	p.pay(ip, "ev_probe_lim", ids[0], 4, 10)
	if a := p.register(ip, "ev_probe_lim", "Mallory", "mallory-paid@example.com", `"selectedTicketId":"tk","quantity":1`); a.status != 200 {
		t.Fatalf("after one of the address's registrations was paid: %s", a)
	}

	// One inbox, many spellings: the buyer limit counts them as one, and
	// each new registration releases the older one.
	first := p.register(other, "ev_probe_lim", "Ann", "ann.lee@gmail.com", `"selectedTicketId":"tk","quantity":3`)
	if first.status != 200 {
		t.Fatalf("first registration: %s", first)
	}
	before, _, _ := p.remaining(other, "ev_probe_lim")
	second := p.register(other, "ev_probe_lim", "Ann", "Ann.Lee+again@googlemail.com", `"selectedTicketId":"tk","quantity":2`)
	if second.status != 200 {
		t.Fatalf("the same buyer again: %s", second)
	}
	if after, _, _ := p.remaining(other, "ev_probe_lim"); after != before+1 {
		t.Fatalf("remaining %v after a registration of 2 replaced one of 3, want %v: the older one's tickets are back", after, before+1)
	}
	if r := p.registration(other, first.str("registrationId")); r.str("status") != "expired" || r.str("reason") != "replaced" {
		t.Fatalf("the older registration: %s, want expired, replaced", r)
	}
	p.pay(other, "ev_probe_lim", second.str("registrationId"), 2, 10)
	if a := p.register(other, "ev_probe_lim", "Ann", "annlee+3@gmail.com", `"selectedTicketId":"tk","quantity":3`); a.status != 409 || a.code() != "BUYER_LIMIT_REACHED" {
		t.Fatalf("a third spelling beyond the buyer limit (2 paid + 3 > 4): %s", a)
	}
}

// The probe: the seat picker's token came from the public page, and two
// requests held all 60 seats of a hall (100 seats a token, about 1,500
// seats per address at once). Now a token holds at most the event's
// maxPerOrder (10 without one in the catalog), best-available too, and
// an address takes at most 8 tokens per event, counted together with its
// storefront registrations.
func TestHoldsProbeThePickerHoldsAtMostMaxPerOrderAndEightTokens(t *testing.T) {
	p := startProbe(t, nil)
	const ip = "203.0.113.30"
	page := p.pageToken("/events/probe-hall/prb3/seatmap?app=storefront")
	pick := map[string]string{picker.TokenHeader: page, "Content-Type": "application/json", "X-Forwarded-For": ip}
	api := "/v1/picker/seating/events/ev_probe_hall"
	token := func() answer { return p.do("POST", api+"/hold-token", pick, "{}") }
	labels := func(row string, from, to int) string {
		var ls []string
		for n := from; n <= to; n++ {
			ls = append(ls, fmt.Sprintf("%q", fmt.Sprintf("%s-%d", row, n)))
		}
		return "[" + strings.Join(ls, ",") + "]"
	}
	hold := func(tok, ls string) answer {
		return p.do("POST", api+"/hold", pick, fmt.Sprintf(`{"holdToken":%q,"seatLabels":%s}`, tok, ls))
	}

	t1 := token()
	if t1.status != 200 {
		t.Fatalf("hold-token: %s", t1)
	}
	if a := hold(t1.str("holdToken"), labels("A", 1, 20)); a.status != 400 || a.code() != "MAX_PER_ORDER_EXCEEDED" {
		t.Fatalf("a token holding a row of 20: %s, want 400 MAX_PER_ORDER_EXCEEDED", a)
	}
	if a := hold(t1.str("holdToken"), labels("A", 1, 10)); a.status != 200 {
		t.Fatalf("10 seats: %s", a)
	}
	if a := hold(t1.str("holdToken"), labels("A", 11, 11)); a.status != 400 || a.code() != "MAX_PER_ORDER_EXCEEDED" {
		t.Fatalf("an 11th seat: %s", a)
	}
	t2 := token()
	if a := hold(t2.str("holdToken"), labels("B", 1, 10)); a.status != 200 {
		t.Fatalf("a second token's 10 seats: %s", a)
	}
	av := p.do("GET", api+"/availability", pick, "")
	if held, _ := av.data()["held"].([]any); len(held) != 20 {
		t.Fatalf("two tokens hold %d seats, want 20", len(held))
	}
	if a := p.do("POST", api+"/best-available", pick, `{"quantity":11}`); a.status != 400 {
		t.Fatalf("best-available of 11: %s", a)
	}
	for i := 3; i <= 8; i++ {
		if a := token(); a.status != 200 {
			t.Fatalf("token %d: %s", i, a)
		}
	}
	for what, a := range map[string]answer{
		"a 9th token":                   token(),
		"best-available making a token": p.do("POST", api+"/best-available", pick, `{"quantity":2}`),
		"a storefront hold-token":       p.do("POST", "/v1/storefront/seating/events/ev_probe_hall/hold-token", shop(ip), "{}"),
	} {
		if a.status != 409 || a.code() != "HOLD_LIMIT_REACHED" {
			t.Errorf("%s from an address with 8 tokens: %s, want 409 HOLD_LIMIT_REACHED", what, a)
		}
	}
	// The seats a token holds can still be bought: its registration does
	// not count that token twice (else seats held with the address's last
	// hold could never be bought); nothing more can be held after it.
	if a := p.register(ip, "ev_probe_hall", "Mallory", "mallory@example.com",
		fmt.Sprintf(`"seatLabels":%s,"seatHoldToken":%q`, labels("A", 1, 10), t1.str("holdToken"))); a.status != 200 ||
		a.str("status") != "awaiting_payment" {
		t.Fatalf("a registration of a token's held seats from an address with 8 tokens: %s", a)
	}
	if a := p.register(ip, "ev_probe_hall", "Mallory", "mallory2@example.com",
		fmt.Sprintf(`"seatLabels":%s,"seatHoldToken":%q`, labels("B", 1, 10), t2.str("holdToken"))); a.status != 409 ||
		a.code() != "HOLD_LIMIT_REACHED" {
		t.Fatalf("a second registration beyond the address's holds: %s, want 409 HOLD_LIMIT_REACHED", a)
	}
	// the limit is per event: the same address registers for another
	if a := p.register(ip, "ev_probe_ga", "Mallory", "mallory@example.com", `"selectedTicketId":"tk","quantity":1`); a.status != 200 {
		t.Fatalf("another event: %s", a)
	}
}

// pageToken loads a seat picker page and returns its token.
func (p *probe) pageToken(path string) string {
	p.t.Helper()
	st, page := call(p.t, "GET", p.base+path, nil, "")
	m := regexp.MustCompile(`data-picker="([^"]*)"`).FindStringSubmatch(page)
	if st != 200 || m == nil {
		p.t.Fatalf("picker page: %d %.300s", st, page)
	}
	var pc struct{ Token string }
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &pc); err != nil || pc.Token == "" {
		p.t.Fatalf("picker data %q: %v", m[1], err)
	}
	return pc.Token
}

// A registration nobody opens a payment for holds its tickets for
// TICKETD_REGISTER_HOLD_TTL (here 2s), then the sweep gives them back; one
// whose checkout session was opened holds on until TICKETD_CHECKOUT_TTL
// counted from the registration, and its view shows that end.
func TestHoldsProbeARegistrationWithoutPaymentEndsAfterTheRegisterHold(t *testing.T) {
	p := startProbe(t, func(c *config) { c.RegisterHoldTTL, c.CheckoutTTL = 2*time.Second, time.Minute })
	const ip = "203.0.113.40"
	start := time.Now()
	idle := p.register(ip, "ev_probe_ga", "Idle", "idle@example.com", `"selectedTicketId":"tk","quantity":5`)
	paying := p.register(ip, "ev_probe_ga", "Pays", "pays@example.com", `"selectedTicketId":"tk","quantity":3`)
	if idle.status != 200 || paying.status != 200 {
		t.Fatalf("registrations: %s / %s", idle, paying)
	}
	for _, a := range []answer{idle, paying} {
		exp, err := time.Parse(time.RFC3339Nano, a.str("expiresAt"))
		if err != nil || exp.Sub(start) > 10*time.Second {
			t.Fatalf("expiresAt %q of a registration without a session: want the register hold's 2s", a.str("expiresAt"))
		}
	}
	s := p.do("POST", "/v1/storefront/card/create-checkout-session", shop(ip), fmt.Sprintf(
		`{"eventId":"ev_probe_ga","registrationId":%q,"selectedTicketId":"tk","quantity":3,"selectedTicketAmount":30,`+
			`"successUrl":"http://localhost:3000/ok","cancelUrl":"http://localhost:3000/no"}`, paying.str("registrationId")))
	if s.status != 200 {
		t.Fatalf("checkout session: %s", s)
	}
	r := p.registration(ip, paying.str("registrationId"))
	exp, err := time.Parse(time.RFC3339Nano, r.str("expiresAt"))
	if err != nil || exp.Sub(start) < 50*time.Second {
		t.Fatalf("expiresAt %q once a session is open: want the checkout window (1m from the registration)", r.str("expiresAt"))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if left, _, _ := p.remaining(ip, "ev_probe_ga"); left == 997 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registration without a session still holds its tickets 20s after its 2s register hold")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := p.registration(ip, idle.str("registrationId")); r.str("status") != "expired" {
		t.Fatalf("registration without a session: %s", r)
	}
	if r := p.registration(ip, paying.str("registrationId")); r.str("status") != "awaiting_payment" {
		t.Fatalf("registration with a session: %s", r)
	}
}

// with is h and one more header.
func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

// TICKETD_REGISTER_HOLD_TTL is 3m by default, the checkout TTL when that
// is shorter, and refused (naming it) when set longer than the checkout
// TTL or below a second; TICKETD_HOLDS_PER_IP is 8 by default, 0 turns it
// off, and anything but a whole number is refused.
func TestLoadConfigHoldLimits(t *testing.T) {
	cases := []struct {
		env        map[string]string
		hold       time.Duration
		perIP      int64
		refusedFor string
	}{
		{env: map[string]string{}, hold: 3 * time.Minute, perIP: 8},
		{env: map[string]string{"TICKETD_CHECKOUT_TTL": "1m"}, hold: time.Minute, perIP: 8},
		{env: map[string]string{"TICKETD_REGISTER_HOLD_TTL": "90s", "TICKETD_HOLDS_PER_IP": "0"}, hold: 90 * time.Second},
		{env: map[string]string{"TICKETD_REGISTER_HOLD_TTL": "15m", "TICKETD_HOLDS_PER_IP": "20"}, hold: 15 * time.Minute, perIP: 20},
		{env: map[string]string{"TICKETD_REGISTER_HOLD_TTL": "16m"}, refusedFor: "TICKETD_REGISTER_HOLD_TTL"},
		{env: map[string]string{"TICKETD_REGISTER_HOLD_TTL": "5m", "TICKETD_CHECKOUT_TTL": "4m"}, refusedFor: "TICKETD_REGISTER_HOLD_TTL"},
		{env: map[string]string{"TICKETD_REGISTER_HOLD_TTL": "500ms"}, refusedFor: "TICKETD_REGISTER_HOLD_TTL"},
		{env: map[string]string{"TICKETD_HOLDS_PER_IP": "-1"}, refusedFor: "TICKETD_HOLDS_PER_IP"},
		{env: map[string]string{"TICKETD_HOLDS_PER_IP": "eight"}, refusedFor: "TICKETD_HOLDS_PER_IP"},
	}
	for _, c := range cases {
		for _, v := range []string{"TICKETD_CHECKOUT_TTL", "TICKETD_REGISTER_HOLD_TTL", "TICKETD_HOLDS_PER_IP"} {
			t.Setenv(v, c.env[v])
		}
		cfg, err := loadConfig()
		if c.refusedFor != "" {
			if err == nil || !strings.Contains(err.Error(), c.refusedFor) {
				t.Errorf("%v: %v, want an error naming %s", c.env, err, c.refusedFor)
			}
			continue
		}
		if err != nil || cfg.RegisterHoldTTL != c.hold || cfg.HoldsPerIP != c.perIP {
			t.Errorf("%v: hold %s, per IP %d (%v); want %s, %d", c.env, cfg.RegisterHoldTTL, cfg.HoldsPerIP, err, c.hold, c.perIP)
		}
	}
}

// The probe: a free event's one request claimed 1,000 tickets for good.
// Beyond maxPerOrder, one address claims a free event no faster than it
// could hold a paid one: a free registration counts for its address as a
// hold for the register hold (TICKETD_REGISTER_HOLD_TTL), so the 9th from
// one address within it is 409 HOLD_LIMIT_REACHED, another address is not
// held back, and once the register hold has passed the address claims
// again.
func TestHoldsProbeFreeClaimsPerAddressAreBounded(t *testing.T) {
	p := startProbe(t, func(c *config) { c.RegisterHoldTTL = 3 * time.Second })
	const ip, other = "203.0.113.40", "203.0.113.41"
	free := `"selectedTicketId":"tk","quantity":10`
	for i := range 9 {
		a := p.register(ip, "ev_probe_free", "Mallory", fmt.Sprintf("free%d@example.com", i), free)
		if i < 8 {
			if a.str("status") != "confirmed" {
				t.Fatalf("free registration %d: %s", i+1, a)
			}
			continue
		}
		if a.status != 409 || a.code() != "HOLD_LIMIT_REACHED" {
			t.Fatalf("free registration %d from one address: %s, want 409 HOLD_LIMIT_REACHED", i+1, a)
		}
	}
	if left, _, _ := p.remaining(ip, "ev_probe_free"); left != 1000-80 {
		t.Fatalf("%v left after 8 free registrations of 10 and a refused one", left)
	}
	if a := p.register(other, "ev_probe_free", "Bob", "bob.free@example.com", free); a.str("status") != "confirmed" {
		t.Fatalf("another address: %s", a)
	}
	// Once the register hold has passed, the address claims again; until
	// then it is refused (polled slowly: register-guest is a write, 30 a
	// minute an address).
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		a := p.register(ip, "ev_probe_free", "Ann", "ann.free@example.com", `"selectedTicketId":"tk"`)
		if a.str("status") == "confirmed" {
			break
		}
		if a.code() != "HOLD_LIMIT_REACHED" || time.Now().After(deadline) {
			t.Fatalf("the address after the register hold: %s", a)
		}
	}
}
