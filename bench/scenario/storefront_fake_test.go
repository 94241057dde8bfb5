package scenario

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/bench/api"
)

// fakeShop answers the storefront calls and the card webhook of one GA
// event and one seated event as the contract says (interface.md,
// decisions.md section 4), and refuses whatever breaks it: a missing key or
// Origin, a bad signature, a wrong amount. It checks the scenarios' side
// of the contract until they run against ticketd's own storefront.
type fakeShop struct {
	key, origin    string
	secret         string
	capacity       int
	mu             sync.Mutex
	sold           int
	regs           map[string]*fakeReg
	sessions       map[string]string // session -> registration
	events         map[string]bool   // webhook event ids seen
	seats          map[string]string // label -> hold token or registration
	ips            map[string]int    // X-Forwarded-For -> registrations
	n              int
	redeliveries   int
	mismatchedPays int
}

type fakeReg struct {
	total, tickets int
	paid           bool
	seats          []string
}

func newFakeShop(s *shop, capacity int) *fakeShop {
	return &fakeShop{key: s.key, origin: s.origin, secret: s.secret, capacity: capacity, regs: map[string]*fakeReg{},
		sessions: map[string]string{}, events: map[string]bool{}, seats: map[string]string{}, ips: map[string]int{}}
}

func reply(w http.ResponseWriter, status int, code string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if code != "" {
		_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "code": code, "message": code})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "data": data})
}

func (f *fakeShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		EventID, Name, Email, SelectedTicketID, RegistrationID, HoldToken, SeatHoldToken string
		Quantity                                                                         int
		SeatLabels                                                                       []string
		SelectedTicketAmount                                                             json.Number
		SuccessURL, CancelURL                                                            string
	}
	if len(raw) > 0 && json.Unmarshal(raw, &body) != nil {
		reply(w, 400, "INVALID_JSON", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/v1/webhooks/card" {
		f.webhook(w, r, raw)
		return
	}
	switch {
	case r.Header.Get("x-service-key") != f.key:
		reply(w, 401, "INVALID_KEY", nil)
		return
	case r.Header.Get("Origin") != f.origin:
		reply(w, 403, "ORIGIN_NOT_ALLOWED", nil)
		return
	case !strings.HasPrefix(r.Header.Get("X-Forwarded-For"), "10."):
		reply(w, 400, "NO_CLIENT_ADDRESS", nil)
		return
	}
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/hold-token"):
		f.n++
		reply(w, 200, "", map[string]any{"holdToken": fmt.Sprintf("ht%d", f.n), "expiresAt": "2030-01-01T00:00:00Z"})
	case strings.HasSuffix(p, "/hold"):
		for _, l := range body.SeatLabels {
			if h, ok := f.seats[l]; ok && h != body.HoldToken {
				reply(w, 409, "SEAT_CONFLICT", nil)
				return
			}
		}
		for _, l := range body.SeatLabels {
			f.seats[l] = body.HoldToken
		}
		reply(w, 200, "", map[string]any{"holdToken": body.HoldToken, "seatLabels": body.SeatLabels})
	case p == "/v1/storefront/register-guest":
		reg := &fakeReg{tickets: body.Quantity, total: body.Quantity * int(ticketPrice+ticketFee), seats: body.SeatLabels}
		if len(body.SeatLabels) > 0 {
			for _, l := range body.SeatLabels {
				if f.seats[l] != body.SeatHoldToken {
					reply(w, 409, "SEAT_CONFLICT", nil)
					return
				}
			}
			reg.tickets, reg.total = len(body.SeatLabels), len(body.SeatLabels)*int(seatPrice+seatFee)
		} else if f.sold+body.Quantity > f.capacity {
			reply(w, 409, "TICKET_SOLD_OUT", nil)
			return
		}
		if !strings.HasSuffix(body.Email, "@bench.example.com") || body.Name == "" {
			reply(w, 400, "INVALID_BUYER", nil)
			return
		}
		f.sold += reg.tickets
		f.n++
		id := fmt.Sprintf("o%d.%s", f.n, body.EventID)
		for _, l := range body.SeatLabels {
			f.seats[l] = id
		}
		f.regs[id] = reg
		f.ips[r.Header.Get("X-Forwarded-For")]++
		reply(w, 200, "", map[string]any{"registrationId": id, "status": "awaiting_payment",
			"payment": map[string]any{"paymentStatus": "unpaid", "amount": 0}, "total": float64(reg.total) / 100})
	case p == "/v1/storefront/card/create-checkout-session":
		reg := f.regs[body.RegistrationID]
		unit := int(ticketPrice)
		if len(body.SeatLabels) > 0 {
			unit = int(seatPrice)
		}
		if reg == nil || body.SelectedTicketAmount.String() != fmt.Sprintf("%d.00", unit*body.Quantity/100) ||
			!strings.Contains(body.SuccessURL, "{CHECKOUT_SESSION_ID}") || body.CancelURL == "" {
			reply(w, 400, "AMOUNT_MISMATCH", nil)
			return
		}
		f.n++
		sess := fmt.Sprintf("cs_%d", f.n)
		f.sessions[sess] = body.RegistrationID
		reply(w, 200, "", map[string]any{"url": "http://localhost:8080/pay/card/" + sess})
	case strings.HasPrefix(p, "/v1/storefront/registration/"):
		reg := f.regs[strings.TrimPrefix(p, "/v1/storefront/registration/")]
		if reg == nil {
			reply(w, 404, "NOT_FOUND", nil)
			return
		}
		st, pay := "awaiting_payment", "unpaid"
		if reg.paid {
			st, pay = "confirmed", "paid"
		}
		reply(w, 200, "", map[string]any{"status": st, "payment": map[string]any{"paymentStatus": pay, "amount": float64(reg.total) / 100}})
	default:
		reply(w, 404, "NOT_FOUND", nil)
	}
}

// webhook verifies the signature as ticketd does and books a payment once.
func (f *fakeShop) webhook(w http.ResponseWriter, r *http.Request, raw []byte) {
	var ts, v1 string
	for _, part := range strings.Split(r.Header.Get("Payment-Signature"), ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == "t" {
			ts = v
		} else if ok && k == "v1" {
			v1 = v
		}
	}
	mac := hmac.New(sha256.New, []byte(f.secret))
	mac.Write([]byte(ts + "." + string(raw)))
	if got, _ := hex.DecodeString(v1); ts == "" || !hmac.Equal(got, mac.Sum(nil)) {
		reply(w, 400, "INVALID_SIGNATURE", nil)
		return
	}
	var ev struct {
		ID   string
		Type string
		Data struct {
			Object struct {
				ID                string `json:"id"`
				PaymentStatus     string `json:"payment_status"`
				AmountTotal       int    `json:"amount_total"`
				Currency          string `json:"currency"`
				ClientReferenceID string `json:"client_reference_id"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		reply(w, 400, "INVALID_JSON", nil)
		return
	}
	if f.events[ev.ID] {
		f.redeliveries++
		reply(w, 200, "", map[string]any{"duplicate": true})
		return
	}
	f.events[ev.ID] = true
	o := ev.Data.Object
	reg := f.regs[o.ClientReferenceID]
	if ev.Type != "checkout.session.completed" || f.sessions[o.ID] != o.ClientReferenceID || reg == nil || o.Currency != "usd" {
		reply(w, 400, "UNKNOWN_SESSION", nil)
		return
	}
	if o.AmountTotal != reg.total {
		f.mismatchedPays++
		reply(w, 200, "", nil)
		return
	}
	reg.paid = true
	reply(w, 200, "", map[string]any{"received": true})
}

// TestStorefrontFlashAgainstTheContract sells 60 tickets to 150 buyers of
// a shop that holds the scenario to the contract: it sells out exactly,
// every payment is signed and of the right amount, every buyer comes from
// its own address, and the redelivered webhooks book nothing twice.
func TestStorefrontFlashAgainstTheContract(t *testing.T) {
	f := &storefrontFlash{capacity: 60}
	out, fake := runFake(t, "storefront-flash", "registrations", 150, f, func() *shop { return f.shop }, 60)
	res := out.Result
	if res.Units != 60 || len(res.Errors) > 0 || res.Rejections["TICKET_SOLD_OUT"] != 90 {
		t.Fatalf("%d confirmed (want 60), errors %v, rejections %v", res.Units, res.Errors, res.Rejections)
	}
	if fake.mismatchedPays > 0 || fake.redeliveries == 0 || len(fake.ips) != 60 {
		t.Fatalf("payments of a wrong amount %d, redeliveries %d, client addresses %d for 60 registrations",
			fake.mismatchedPays, fake.redeliveries, len(fake.ips))
	}
	if rate, ok := out.Figure(FigRegistrationRate); !ok || rate <= 0 {
		t.Fatalf("no registration rate over the sale: %+v", out.Figures)
	}
	// Without Redis and Postgres only the buyers' side is checked, and
	// nothing fails for what could not be read.
	if !out.Checks.OK() {
		t.Fatalf("checks failed: %v", failedChecks(out.Checks))
	}
}

// TestStorefrontSeatsAgainstTheContract races 80 buyers for 24 seats of a
// shop that refuses a hold on a taken seat: some hold and pay, the others
// are told SEAT_CONFLICT and pick again, and no error occurs.
func TestStorefrontSeatsAgainstTheContract(t *testing.T) {
	s := &storefrontSeats{rows: 2, seats: 12}
	out, fake := runFake(t, "storefront-seats", "buyers", 80, s, func() *shop { return s.shop }, 0)
	res := out.Result
	if res.Units == 0 || len(res.Errors) > 0 || res.Rejections["SEAT_CONFLICT"] == 0 {
		t.Fatalf("%d buyers confirmed, errors %v, rejections %v", res.Units, res.Errors, res.Rejections)
	}
	paid := 0
	for _, r := range fake.regs {
		if r.paid {
			paid++
		}
	}
	if int64(paid) != res.Units || fake.mismatchedPays > 0 {
		t.Fatalf("the shop booked %d, the buyers saw %d; %d payments of a wrong amount", paid, res.Units, fake.mismatchedPays)
	}
	if !out.Checks.OK() {
		t.Fatalf("checks failed: %v", failedChecks(out.Checks))
	}
}

// runFake provisions p (without applying its catalog: a fake shop has no
// admin surface) and runs its load of arrivals buyers on 8 workers against
// a fake shop of shop() with the GA capacity given, and its checks.
func runFake(t *testing.T, name, unit string, arrivals int64, p part, shop func() *shop, capacity int) (*Outcome, *fakeShop) {
	t.Helper()
	env := &Env{Run: "t" + strings.ReplaceAll(name, "-", ""), CardWebhookSecret: "whsec_fake", RecordWhy: "a fake shop"}
	p.provision(env, &docBuilder{})
	fake := newFakeShop(shop(), capacity)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	env.Addr, env.API = strings.TrimPrefix(srv.URL, "http://"), &api.Client{Base: srv.URL}
	ops := &opSet{}
	p.register(ops)
	out, err := runLoadedParts(t.Context(), env, name, unit, "buyer", Options{Arrivals: arrivals, Workers: 8}, ops, []weighted{{p: p, weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return out, fake
}
