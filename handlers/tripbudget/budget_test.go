package tripbudget_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/stripe/stripe-go/v82/webhook"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
)

// call is one request of a route, made ready by its case's prepare.
type call struct {
	method, path string
	headers      map[string]string
	body         any
	// raw is sent as is (a signed webhook), instead of body.
	raw []byte
}

// send makes the call with the round-trip count asked for; it answers the
// status, the round trips the request made and the body.
func send(t *testing.T, s *servertest.Server, c call) (status, trips int, body string) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(c.method)
	req.SetRequestURI(s.URL + c.path)
	req.Header.Set(servertest.TripsHeader, "1")
	switch {
	case c.raw != nil:
		req.SetBody(c.raw)
		req.Header.SetContentType("application/json")
	case c.body != nil:
		b, err := json.Marshal(c.body)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBody(b)
		req.Header.SetContentType("application/json")
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	if err := s.Client.Do(req, resp); err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	n, err := strconv.Atoi(string(resp.Header.Peek(servertest.TripsCount)))
	if err != nil {
		t.Fatalf("%s %s: no round-trip count in the answer", c.method, c.path)
	}
	return resp.StatusCode(), n, string(resp.Body())
}

// budget is a route's case: the route as the router knows it, what the
// request does, and its budget of Redis round trips.
type budget struct {
	route  string // "METHOD /path/{param}"
	what   string
	budget int
	// over, when set, is what the route takes today above its budget:
	// known, left for later (the test fails if it grows, and when the
	// route comes within budget, so that the entry goes).
	over    int
	prepare func(t *testing.T, f *fixture) call
	// status is the answer's status (200 unless set).
	status int
}

type fixture struct {
	s *servertest.Server
	// doc is the catalog the test applied.
	doc string
	// linePoll is the poll token of tb_line's far place (farPoll).
	linePoll string
}

const stripeSecret = "whsec_budget"

// budgetSeq numbers the waiting room's buyers.
var budgetSeq atomic.Int64

// joinRoom joins tb_room's waiting room (its T0 passed, stock enough for
// every case) as email: admitted at once, with a pass.
func (f *fixture) joinRoom(t *testing.T, email string) (p struct{ PollToken, Pass string }) {
	t.Helper()
	r := f.s.Do(t, "POST", "/v1/storefront/queue/tb_room/join", front(nil), map[string]any{"email": email})
	if r.Status != 200 {
		t.Fatalf("join: %s", r)
	}
	r.Decode(t, &p)
	if p.Pass == "" {
		t.Fatalf("join: no pass: %s", r)
	}
	return p
}

// farPoll is a status call (query: "" or "?wait=N") of the last of
// tb_line's places, joined once: one buyer admitted (the one ticket), the
// next three waiting, the last 2 behind the head. It waits for the node's
// tick to have read the line, so that the poll is answered from memory.
func (f *fixture) farPoll(t *testing.T, query string) call {
	t.Helper()
	if f.linePoll == "" {
		var p struct{ PollToken, State string }
		for i := range 4 {
			r := f.s.Do(t, "POST", "/v1/storefront/queue/tb_line/join", front(nil),
				map[string]any{"email": fmt.Sprintf("line-%d@example.com", i)})
			if r.Status != 200 {
				t.Fatalf("join tb_line: %s", r)
			}
			r.Decode(t, &p)
		}
		if p.State != "waiting" {
			t.Fatalf("tb_line's fourth buyer: %s, want waiting", p.State)
		}
		f.linePoll = p.PollToken
	}
	c := call{method: "GET", path: "/v1/storefront/queue/tb_line/status" + query,
		headers: front(map[string]string{"Authorization": "Bearer " + f.linePoll})}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, n, body := send(t, f.s, call{method: c.method, path: "/v1/storefront/queue/tb_line/status", headers: c.headers}); st != 200 {
			t.Fatalf("tb_line status: %d %s", st, body)
		} else if n == 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("tb_line's far place was not answered from the node's memory within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// walletSession is a wallet payment opened for a new registration.
func (f *fixture) walletSession(t *testing.T) string {
	t.Helper()
	reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
	r := f.s.Do(t, "POST", "/v1/storefront/wallet/create-payment", front(nil),
		map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID, "amount": json.Number(reg.Total.String()),
			"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"})
	if r.Status != 200 {
		t.Fatalf("wallet payment: %s", r)
	}
	var out struct{ SessionID string }
	r.Decode(t, &out)
	return out.SessionID
}

// freeOrder is a free registration, paid at once, written to Postgres.
func (f *fixture) freeOrder(t *testing.T) string {
	t.Helper()
	reg := f.mustRegister(t, servertest.Guest("open-day", map[string]any{"selectedTicketId": "tk_free"}))
	f.s.Drain(t)
	return reg.RegistrationID
}

// ipSeq numbers the client addresses: each request comes from its own
// (X-Forwarded-For from the trusted loopback), so no per-IP rate limit
// or hold limit meets the cases.
var ipSeq int

func freshIP() string {
	ipSeq++
	return fmt.Sprintf("198.51.%d.%d", ipSeq/250, ipSeq%250+1)
}

func front(h map[string]string) map[string]string {
	out := servertest.Shop()
	out["X-Forwarded-For"] = freshIP()
	for k, v := range h {
		out[k] = v
	}
	return out
}

func (f *fixture) mustRegister(t *testing.T, body map[string]any) servertest.Registered {
	t.Helper()
	r := f.s.Do(t, "POST", "/v1/storefront/register-guest", front(nil), body)
	if r.Status != 200 {
		t.Fatalf("register-guest: %s", r)
	}
	var out servertest.Registered
	r.Decode(t, &out)
	return out
}

func (f *fixture) register(t *testing.T, cart map[string]any) servertest.Registered {
	t.Helper()
	return f.mustRegister(t, servertest.Guest("sf_ga", cart))
}

// rows are the priced seats of each seated event the cases use; seats
// hands them out in pairs, so no two cases meet on a seat.
var rows = map[string][]string{"tb_hall": {"A", "B", "C", "D", "E", "F", "G", "H"}}

var used = map[string]int{}

func seats(event string, n int) []string {
	out := make([]string, n)
	for i := range out {
		k := used[event]
		used[event]++
		out[i] = rows[event][k/20] + "-" + strconv.Itoa(k%20+1)
	}
	return out
}

// seatHeaders are the headers of a seat call of surface on its event.
func seatHeaders(surface string) map[string]string {
	switch surface {
	case "picker":
		return map[string]string{"X-Forwarded-For": freshIP(),
			picker.TokenHeader: picker.Sign([]byte(servertest.PickerKey), "tb_hall", "t_shop", time.Now().Add(picker.TokenTTL))}
	case "partner":
		return partner(nil)
	}
	return front(nil)
}

// seatSurfaces maps each surface mounting the seat endpoints to its base
// path and the event its cases hold seats of.
var seatSurfaces = []struct{ name, base, event string }{
	{"storefront", "/v1/storefront/seating/events/{id}", "tb_hall"},
	{"picker", picker.Prefix + "/seating/events/{id}", "tb_hall"},
	{"partner", "/v1/channel/seating/events/{id}", "tb_hall"},
}

func (f *fixture) seatCall(t *testing.T, surface, base, event, method, path string, body any) *servertest.Response {
	t.Helper()
	return f.s.Do(t, method, strings.ReplaceAll(base, "{id}", event)+path, seatHeaders(surface), body)
}

// heldToken is a token of surface holding n fresh seats of event.
func (f *fixture) heldToken(t *testing.T, surface, base, event string, n int) (string, []string) {
	t.Helper()
	r := f.seatCall(t, surface, base, event, "POST", "/hold-token", map[string]any{})
	if r.Status != 200 {
		t.Fatalf("%s hold-token: %s", surface, r)
	}
	var out struct{ HoldToken string }
	r.Decode(t, &out)
	if n == 0 {
		return out.HoldToken, nil
	}
	l := seats(event, n)
	if r := f.seatCall(t, surface, base, event, "POST", "/hold", map[string]any{"holdToken": out.HoldToken, "seatLabels": l}); r.Status != 200 {
		t.Fatalf("%s hold: %s", surface, r)
	}
	return out.HoldToken, l
}

// rushReserve is a partner reserve body for two held seats of tb_hall.
func (f *fixture) rushReserve(t *testing.T) map[string]any {
	t.Helper()
	tok, l := f.heldToken(t, "partner", seatSurfaces[2].base, "tb_hall", 2)
	return map[string]any{"seatLabels": l, "seatHoldToken": tok}
}

func (f *fixture) reserve(t *testing.T, event string, body map[string]any) servertest.Reserved {
	t.Helper()
	return f.s.MustReserve(t, "front", event, body)
}

func (f *fixture) cardSession(t *testing.T, body map[string]any) string {
	t.Helper()
	r := f.s.Do(t, "POST", "/v1/storefront/card/create-checkout-session", front(nil), body)
	if r.Status != 200 {
		t.Fatalf("checkout session: %s", r)
	}
	var out struct{ SessionID string }
	r.Decode(t, &out)
	return out.SessionID
}

// cardBody is the card checkout body of reg, a registration of one adult
// ticket of sf_ga, or with cart, of that cart.
func cardBody(reg servertest.Registered, cart ...any) map[string]any {
	m := map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID,
		"selectedTicketId": "tk_adult", "quantity": 1, "selectedTicketAmount": 25,
		"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"}
	if len(cart) > 0 {
		delete(m, "selectedTicketId")
		delete(m, "quantity")
		for i := 0; i+1 < len(cart); i += 2 {
			m[cart[i].(string)] = cart[i+1]
		}
	}
	return m
}

func cardWebhook(t *testing.T, sessionID string, reg servertest.Registered) call {
	t.Helper()
	var w payments.CardWebhook
	w.ID = "evt_" + reg.RegistrationID
	w.Type = payments.EventCheckoutCompleted
	w.Data.Object = payments.CardSession{ID: sessionID, PaymentStatus: "paid", AmountTotal: int64(reg.Total), Currency: "usd", ClientReferenceID: reg.RegistrationID}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return call{method: "POST", path: "/v1/webhooks/card", raw: b,
		headers: map[string]string{payments.SignatureHeader: payments.Sign(servertest.CardWebhookSecret, time.Now(), b), "Content-Type": "application/json"}}
}

func partner(extra map[string]string) map[string]string {
	h := servertest.Keyed("front")
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func confirmCall(orderID string, amount money.Cents) call {
	ref := "ref-" + orderID
	return call{method: "POST", path: "/v1/channel/orders/confirm",
		headers: partner(map[string]string{"x-service-signature": channel.Signature("sk_front", orderID, amount, ref)}),
		raw:     fmt.Appendf(nil, `{"orderId":%q,"amount":%s,"partnerReference":%q}`, orderID, amount, ref)}
}

func ga(n int) map[string]any {
	return map[string]any{"tickets": []map[string]any{{"ticketId": "tk_adult", "quantity": n}}}
}

// budgets lists every route with its budget. Design rule 7: two round
// trips at most, the rate limit included.
var budgets = []budget{
	// Partner surface.
	{route: "GET /v1/channel/events", what: "catalog list", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/v1/channel/events", headers: partner(nil)}
	}},
	{route: "GET /v1/channel/events/{id}", what: "event detail", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/v1/channel/events/sf_ga", headers: partner(nil)}
	}},
	{route: "POST /v1/channel/events/{id}/quote", what: "quote", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/channel/events/sf_ga/quote", headers: partner(nil), body: ga(1)}
	}},
	{route: "POST /v1/channel/events/{id}/checkout", what: "GA reserve", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/channel/events/sf_ga/checkout", headers: partner(map[string]string{"Idempotency-Key": servertest.NewKey()}), body: servertest.Buyer(ga(1))}
	}},
	{route: "POST /v1/channel/events/{id}/checkout", what: "seated reserve", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/channel/events/tb_hall/checkout", headers: partner(map[string]string{"Idempotency-Key": servertest.NewKey()}),
			body: servertest.Buyer(f.rushReserve(t))}
	}},
	{route: "POST /v1/channel/events/{id}/checkout", what: "seated reserve replayed", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		key, body := servertest.NewKey(), servertest.Buyer(f.rushReserve(t))
		h := partner(map[string]string{"Idempotency-Key": key})
		if r := f.s.Do(t, "POST", "/v1/channel/events/tb_hall/checkout", h, body); r.Status != 200 {
			t.Fatalf("first reserve: %s", r)
		}
		return call{method: "POST", path: "/v1/channel/events/tb_hall/checkout", headers: h, body: body}
	}},
	{route: "POST /v1/channel/events/{id}/checkout", what: "discounted reserve", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		b := ga(1)
		b["discountCode"] = "MANY"
		return call{method: "POST", path: "/v1/channel/events/sf_ga/checkout", headers: partner(map[string]string{"Idempotency-Key": servertest.NewKey()}), body: servertest.Buyer(b)}
	}},
	{route: "POST /v1/channel/orders/confirm", what: "GA confirm", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		o := f.reserve(t, "sf_ga", ga(1))
		return confirmCall(o.OrderID, o.Amount)
	}},
	{route: "POST /v1/channel/orders/confirm", what: "seated confirm", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		o := f.reserve(t, "tb_hall", f.rushReserve(t))
		return confirmCall(o.OrderID, o.Amount)
	}},
	{route: "POST /v1/channel/orders/confirm", what: "discounted confirm", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		b := ga(1)
		b["discountCode"] = "MANY"
		o := f.reserve(t, "sf_ga", b)
		return confirmCall(o.OrderID, o.Amount)
	}},
	{route: "POST /v1/channel/orders/status", what: "order status", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		o := f.reserve(t, "sf_ga", ga(1))
		return call{method: "POST", path: "/v1/channel/orders/status", headers: partner(nil), body: map[string]string{"orderId": o.OrderID}}
	}},
	{route: "POST /v1/channel/session", what: "buyer session", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/channel/session", headers: partner(nil), body: map[string]any{"buyerName": "Ada Lovelace", "buyerEmail": "ada@example.com"}}
	}},
	// Storefront.
	{route: "GET /v1/storefront/events/{eventId}", what: "event detail", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/v1/storefront/events/sf_ga", headers: front(nil)}
	}},
	{route: "GET /v1/storefront/events/{eventId}/ticket-key", what: "ticket key", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/v1/storefront/events/sf_ga/ticket-key", headers: front(nil)}
	}},
	{route: "POST /v1/storefront/quote", what: "quote", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/storefront/quote", headers: front(nil), body: map[string]any{"eventId": "sf_ga", "selectedTicketId": "tk_adult", "quantity": 1}}
	}},
	{route: "POST /v1/storefront/register-guest", what: "GA", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/storefront/register-guest", headers: front(nil), body: servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult"})}
	}},
	{route: "POST /v1/storefront/register-guest", what: "limited code", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/storefront/register-guest", headers: front(nil),
			body: servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "discountCode": "MANY"})}
	}},
	{route: "POST /v1/storefront/register-guest", what: "seated", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		tok, l := f.heldToken(t, "storefront", seatSurfaces[0].base, "tb_hall", 2)
		return call{method: "POST", path: "/v1/storefront/register-guest", headers: front(nil),
			body: servertest.Guest("tb_hall", map[string]any{"seatLabels": l, "seatHoldToken": tok})}
	}},
	{route: "POST /v1/storefront/register-guest", what: "with a waiting room's pass", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		email := fmt.Sprintf("room-%d@example.com", budgetSeq.Add(1))
		p := f.joinRoom(t, email)
		return call{method: "POST", path: "/v1/storefront/register-guest", headers: front(map[string]string{"x-queue-pass": p.Pass}),
			body: servertest.Guest("tb_room", map[string]any{"selectedTicketId": "tk_room", "email": email})}
	}},
	{route: "POST /v1/storefront/queue/{eventId}/join", what: "waiting room join (its batch's script; the limit is the node's)", budget: 1, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/storefront/queue/tb_room/join", headers: front(nil),
			body: map[string]any{"email": fmt.Sprintf("room-%d@example.com", budgetSeq.Add(1))}}
	}},
	{route: "POST /v1/storefront/queue/{eventId}/challenge", what: "waiting room proof-of-work challenge (signed, not stored)", budget: 1, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/v1/storefront/queue/tb_room/challenge", headers: front(nil),
			body: map[string]any{"email": "room-challenge@example.com"}}
	}},
	{route: "GET /v1/storefront/queue/{eventId}/status", what: "waiting room status", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		p := f.joinRoom(t, fmt.Sprintf("room-%d@example.com", budgetSeq.Add(1)))
		return call{method: "GET", path: "/v1/storefront/queue/tb_room/status", headers: front(map[string]string{"Authorization": "Bearer " + p.PollToken})}
	}},
	// tb_line's last place is 2 behind the head, far at the test's
	// NearHead: answered, and rate-limited, from the node's memory.
	{route: "GET /v1/storefront/queue/{eventId}/status", what: "waiting room status, a far waiter (the node's memory)", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return f.farPoll(t, "")
	}},
	{route: "GET /v1/storefront/queue/{eventId}/status", what: "waiting room long-poll, a far waiter (the node's memory)", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return f.farPoll(t, "?wait=1")
	}},
	{route: "POST /v1/storefront/queue/{eventId}/leave", what: "waiting room leave", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		p := f.joinRoom(t, fmt.Sprintf("room-%d@example.com", budgetSeq.Add(1)))
		return call{method: "POST", path: "/v1/storefront/queue/tb_room/leave", headers: front(map[string]string{"Authorization": "Bearer " + p.PollToken})}
	}},
	{route: "POST /v1/storefront/card/create-checkout-session", what: "first session", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return call{method: "POST", path: "/v1/storefront/card/create-checkout-session", headers: front(nil), body: cardBody(reg)}
	}},
	{route: "POST /v1/storefront/card/create-checkout-session", what: "replacing a session", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		f.cardSession(t, cardBody(reg))
		return call{method: "POST", path: "/v1/storefront/card/create-checkout-session", headers: front(nil), body: cardBody(reg)}
	}},
	{route: "POST /v1/storefront/wallet/create-payment", what: "wallet payment", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return call{method: "POST", path: "/v1/storefront/wallet/create-payment", headers: front(nil),
			body: map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID, "amount": json.Number(reg.Total.String())}}
	}},
	{route: "GET /v1/storefront/registration/{registrationId}", what: "registration read", budget: 1, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return call{method: "GET", path: "/v1/storefront/registration/" + reg.RegistrationID, headers: front(nil)}
	}},
	{route: "OPTIONS /v1/storefront/{path:*}", what: "CORS preflight", budget: 0, status: 204, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "OPTIONS", path: "/v1/storefront/register-guest", headers: map[string]string{"Origin": servertest.ShopOrigin,
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-service-key, content-type"}}
	}},
	// Webhooks.
	{route: "POST /v1/webhooks/card", what: "GA payment", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return cardWebhook(t, f.cardSession(t, cardBody(reg)), reg)
	}},
	{route: "POST /v1/webhooks/card", what: "seated payment", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		tok, l := f.heldToken(t, "storefront", seatSurfaces[0].base, "tb_hall", 2)
		reg := f.mustRegister(t, servertest.Guest("tb_hall", map[string]any{"seatLabels": l, "seatHoldToken": tok}))
		return cardWebhook(t, f.cardSession(t, cardBody(reg, "seatLabels", l, "selectedTicketAmount", 80)), reg)
	}},
	{route: "POST /v1/webhooks/wallet", what: "wallet payment", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		r := f.s.Do(t, "POST", "/v1/storefront/wallet/create-payment", front(nil),
			map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID, "amount": json.Number(reg.Total.String())})
		var out struct{ SessionID string }
		r.Decode(t, &out)
		b, err := json.Marshal(payments.WalletWebhook{ID: out.SessionID, Status: "COMPLETED", Amount: reg.Total, Currency: "USD", Reference: reg.RegistrationID})
		if err != nil {
			t.Fatal(err)
		}
		return call{method: "POST", path: "/v1/webhooks/wallet", raw: b,
			headers: map[string]string{payments.SignatureHeader: payments.Sign(servertest.WalletWebhookSecret, time.Now(), b), "Content-Type": "application/json"}}
	}},
	{route: "POST /v1/webhooks/stripe", what: "stripe payment", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		sess := "cs_test_" + strings.ReplaceAll(reg.RegistrationID, ".", "_")
		if err := f.s.Registrations.AttachSession(context.Background(), reg.RegistrationID, payments.StripeName, sess); err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"id":"evt_` + sess + `","object":"event","api_version":"2025-01-27.acacia","type":"checkout.session.completed",` +
			`"data":{"object":{"id":"` + sess + `","object":"checkout.session","payment_status":"paid","status":"complete","amount_total":` +
			strconv.FormatInt(int64(reg.Total), 10) + `,"currency":"usd","client_reference_id":"` + reg.RegistrationID +
			`","metadata":{"registration_id":"` + reg.RegistrationID + `"}}}}`)
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: time.Now()})
		return call{method: "POST", path: "/v1/webhooks/stripe", raw: body, headers: map[string]string{"Stripe-Signature": sp.Header, "Content-Type": "application/json"}}
	}},
	{route: "GET /v1/channel/session", what: "buyer session read", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		r := f.s.Do(t, "POST", "/v1/channel/session", partner(nil), map[string]any{"buyerName": "Ada Lovelace", "buyerEmail": "ada@example.com"})
		var out struct{ SessionToken string }
		r.Decode(t, &out)
		return call{method: "GET", path: "/v1/channel/session", headers: map[string]string{"Authorization": "Bearer " + out.SessionToken}}
	}},
	// Pages, probes and the operator's surface.
	{route: "GET /pay/card/{sessionId}", what: "hosted card page", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return call{method: "GET", path: "/pay/card/" + f.cardSession(t, cardBody(reg))}
	}},
	{route: "POST /pay/card/{sessionId}/pay", what: "pay on the card page", budget: 2, status: 303, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return call{method: "POST", path: "/pay/card/" + f.cardSession(t, cardBody(reg)) + "/pay", raw: []byte("card=4242424242424242"),
			headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}
	}},
	{route: "POST /pay/card/{sessionId}/cancel", what: "cancel on the card page", budget: 2, status: 303, prepare: func(t *testing.T, f *fixture) call {
		reg := f.register(t, map[string]any{"selectedTicketId": "tk_adult"})
		return call{method: "POST", path: "/pay/card/" + f.cardSession(t, cardBody(reg)) + "/cancel"}
	}},
	{route: "GET /pay/wallet/{sessionId}", what: "hosted wallet page", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/pay/wallet/" + f.walletSession(t)}
	}},
	{route: "POST /pay/wallet/{sessionId}/pay", what: "pay on the wallet page", budget: 2, status: 303, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/pay/wallet/" + f.walletSession(t) + "/pay", raw: []byte(""),
			headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}
	}},
	{route: "POST /pay/wallet/{sessionId}/cancel", what: "cancel on the wallet page", budget: 2, status: 303, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "POST", path: "/pay/wallet/" + f.walletSession(t) + "/cancel"}
	}},
	{route: "GET /tickets/{orderId}", what: "ticket page", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		id := f.freeOrder(t)
		return call{method: "GET", path: "/tickets/" + id + "?k=" + f.s.Tickets.PageMAC(id)}
	}},
	{route: "GET /tickets/{orderId}/{image}", what: "ticket QR code", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		id := f.freeOrder(t)
		return call{method: "GET", path: "/tickets/" + id + "/1.png?k=" + f.s.Tickets.PageMAC(id)}
	}},
	{route: "GET /assets/pages/pay.css", what: "pay page style", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/assets/pages/pay.css"}
	}},
	{route: "GET /assets/pages/tickets.css", what: "ticket page style", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/assets/pages/tickets.css"}
	}},
	{route: "GET /events/{slug}/{shortId}/seatmap", what: "seat picker page", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/events/budget-hall/tbh1/seatmap", headers: map[string]string{"X-Forwarded-For": freshIP()}}
	}},
	{route: "GET /assets/picker/{file}", what: "seat picker script", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/assets/picker/picker.js"}
	}},
	{route: "GET /healthz", what: "liveness", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/healthz"}
	}},
	{route: "GET /openapi.json", what: "the OpenAPI document", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/openapi.json"}
	}},
	{route: "GET /readyz", what: "readiness", budget: 2, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/readyz"}
	}},
	// The waiting room gauges (tb_room's) are read at the scrape, one
	// round trip per event with a room, by the collector with a context of
	// its own: they count in ticketd_redis_round_trips_total, not here.
	{route: "GET /metrics", what: "metrics", budget: 0, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/metrics"}
	}},
	{route: "GET /v1/admin/events/{eventId}/queue/audit", what: "waiting room audit", budget: 1, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "GET", path: "/v1/admin/events/tb_room/queue/audit?count=10", headers: map[string]string{"Authorization": "Bearer " + servertest.AdminToken}}
	}},
	{route: "GET /v1/admin/events/{eventId}/queue", what: "waiting room read", budget: 1, prepare: func(t *testing.T, f *fixture) call {
		f.joinRoom(t, fmt.Sprintf("room-%d@example.com", budgetSeq.Add(1)))
		return call{method: "GET", path: "/v1/admin/events/tb_room/queue", headers: map[string]string{"Authorization": "Bearer " + servertest.AdminToken}}
	}},
	// The operator's catalog apply is no sale (rule 7 is about sales): it
	// takes the catalog lease and writes each event's capacities, so it
	// grows with the catalog; this one (13 events) takes 36.
	{route: "PUT /v1/admin/catalog", what: "catalog apply", budget: 40, prepare: func(t *testing.T, f *fixture) call {
		return call{method: "PUT", path: "/v1/admin/catalog", raw: []byte(f.doc),
			headers: map[string]string{"Authorization": "Bearer " + servertest.AdminToken, "Content-Type": "application/json"}}
	}},
}

// seatRoutes are the seat endpoints, mounted on the storefront, the
// partner surface and the picker API alike.
var seatRoutes = []struct {
	method, path, what string
	budget, over       int
	// body is the request's body, given the token and the event.
	body func(tok, event string) any
	held bool // the token holds two seats first
}{
	{"GET", "/config", "seat map", 2, 0, nil, false},
	{"GET", "/availability", "availability", 2, 0, nil, false},
	{"GET", "/hold/{token}", "hold read", 2, 0, nil, true},
	{"POST", "/hold-token", "new token", 2, 0, func(string, string) any { return map[string]any{} }, false},
	{"POST", "/hold", "hold", 2, 0, func(tok, ev string) any { return map[string]any{"holdToken": tok, "seatLabels": seats(ev, 2)} }, false},
	{"POST", "/hold/{token}/extend", "extend", 2, 0, func(string, string) any { return map[string]any{} }, true},
	{"POST", "/release", "release", 2, 0, func(tok, _ string) any { return map[string]any{"holdToken": tok} }, true},
	{"POST", "/best-available", "best available", 2, 0, func(tok, _ string) any { return map[string]any{"holdToken": tok, "quantity": 2} }, false},
}

func TestRoundTripBudgets(t *testing.T) {
	// A waiting room's place 2 behind the head is far: its polls are
	// answered from the node's memory (farPoll).
	s := servertest.Start(t, servertest.Options{Trusted: "127.0.0.1/32", StripeWebhookSecret: stripeSecret, RoomNearHead: 2})
	// A limited code with uses enough for every case (SAVE10 has one).
	doc := strings.Replace(servertest.StorefrontCatalog, `{"code": "SAVE10", "percent": 10, "maxUses": 1}`,
		`{"code": "SAVE10", "percent": 10, "maxUses": 1}, {"code": "MANY", "percent": 10, "maxUses": 1000}`, 1)
	// And a hall every surface sells, seats enough for every case.
	doc = strings.Replace(doc, `"events": [`, `"events": [
   {"id": "tb_hall", "shortId": "tbh1", "slug": "budget-hall", "name": "Budget Hall", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_front"], "tickets": [],
    "seatMap": {"categories": [{"id": "std", "name": "Standard", "price": 40}],
     "rows": [{"label": "A", "seats": 20, "category": "std"}, {"label": "B", "seats": 20, "category": "std"}, {"label": "C", "seats": 20, "category": "std"},
      {"label": "D", "seats": 20, "category": "std"}, {"label": "E", "seats": 20, "category": "std"}, {"label": "F", "seats": 20, "category": "std"},
      {"label": "G", "seats": 20, "category": "std"}, {"label": "H", "seats": 20, "category": "std"}]}},
   {"id": "tb_room", "shortId": "tbr1", "slug": "budget-room", "name": "Budget Room", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [{"id": "tk_room", "name": "Entry", "price": 20, "capacity": 1000}],
    "waitingRoom": {"opensAt": "2020-01-01T00:00:00Z", "salesStartAt": "2020-01-02T00:00:00Z", "mode": "fifo"}},
   {"id": "tb_line", "shortId": "tbl1", "slug": "budget-line", "name": "Budget Line", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [{"id": "tk_line", "name": "Entry", "price": 20, "capacity": 1}],
    "waitingRoom": {"opensAt": "2020-01-01T00:00:00Z", "salesStartAt": "2020-01-02T00:00:00Z", "mode": "fifo"}},`, 1)
	if !strings.Contains(doc, "MANY") || !strings.Contains(doc, "tb_hall") {
		t.Fatal("the storefront catalog moved: update the test's additions")
	}
	s.Apply(t, []byte(doc))
	f := &fixture{s: s, doc: doc}
	cases := append([]budget(nil), budgets...)
	for _, sr := range seatRoutes {
		for _, su := range seatSurfaces {
			cases = append(cases, budget{route: sr.method + " " + su.base + sr.path, what: su.name + " " + sr.what, budget: sr.budget, over: sr.over,
				prepare: func(t *testing.T, f *fixture) call {
					n := 0
					if sr.held {
						n = 2
					}
					tok, _ := f.heldToken(t, su.name, su.base, su.event, n)
					path := strings.NewReplacer("{id}", su.event, "{token}", tok).Replace(su.base + sr.path)
					var body any
					if sr.body != nil {
						body = sr.body(tok, su.event)
					}
					return call{method: sr.method, path: path, headers: seatHeaders(su.name), body: body}
				}})
		}
	}
	// Every route the server serves has a case, and every case's route is
	// served: a new route needs its budget here.
	served := map[string]bool{}
	for method, paths := range s.Routes {
		for _, p := range paths {
			served[method+" "+p] = true
		}
	}
	listed := map[string]bool{}
	for _, c := range cases {
		listed[c.route] = true
		if !served[c.route] {
			t.Errorf("%s has a budget but the server has no such route", c.route)
		}
	}
	for r := range served {
		if !listed[r] {
			t.Errorf("route %s is served but has no round-trip budget: add a case", r)
		}
	}
	for _, c := range cases {
		name := c.route + " (" + c.what + ")"
		// Counted on the second request: the first of each kind may load
		// its scripts ("Function not found", the load, the call again),
		// once in a Redis's life.
		send(t, s, c.prepare(t, f))
		status, n, body := send(t, s, c.prepare(t, f))
		want := c.status
		if want == 0 {
			want = 200
		}
		if status != want {
			t.Errorf("%s: answered %d %.300s, want %d", name, status, body, want)
			continue
		}
		t.Logf("%-70s %d (budget %d)", name, n, c.budget)
		switch {
		case c.over == 0 && n > c.budget:
			t.Errorf("%s: %d Redis round trips, budget %d", name, n, c.budget)
		case c.over > 0 && n > c.over:
			t.Errorf("%s: %d Redis round trips, more than the %d known (budget %d)", name, n, c.over, c.budget)
		case c.over > 0 && n < c.over:
			t.Errorf("%s: %d Redis round trips, fewer than the %d listed as over budget: lower or drop its over", name, n, c.over)
		}
	}
}
