package payments

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments/stripemock"
)

func TestStripeCreateAndExpireAgainstStripeMock(t *testing.T) {
	base := stripemock.Start(t)
	s := NewStripe(StripeConfig{SecretKey: "sk_test_123", APIBase: base})
	ctx := context.Background()
	if s.Name() != "stripe" {
		t.Fatalf("Name = %s", s.Name())
	}
	req := checkout(keys.OrderID("ev_jazz", "str1"))
	sess, err := s.CreateSession(ctx, req)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if sess.ID == "" || sess.URL == "" {
		t.Fatalf("session %+v", sess)
	}
	if _, err := s.Expire(ctx, sess.ID); err != nil {
		t.Fatalf("Expire: %v", err)
	}
}

// What ticketd sends Stripe, seen by a recording stand-in for its API, and
// how Expire reads a session Stripe no longer lets it expire.
func TestStripeRequestsAndExpireOfACompletedSession(t *testing.T) {
	var mu sync.Mutex
	forms := map[string]url.Values{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		v, _ := url.ParseQuery(string(b))
		mu.Lock()
		forms[r.Method+" "+r.URL.Path] = v
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/checkout/sessions":
			_, _ = io.WriteString(w, `{"id":"cs_test_a","object":"checkout.session","url":"https://checkout.stripe.com/c/pay/cs_test_a","status":"open"}`)
		case "POST /v1/checkout/sessions/cs_done/expire":
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"Only Checkout Sessions with a status in [\"open\"] can be expired."}}`)
		case "GET /v1/checkout/sessions/cs_done":
			_, _ = io.WriteString(w, `{"id":"cs_done","object":"checkout.session","status":"complete","payment_status":"paid"}`)
		case "POST /v1/checkout/sessions/cs_open/expire":
			_, _ = io.WriteString(w, `{"id":"cs_open","object":"checkout.session","status":"expired","payment_status":"unpaid"}`)
		default:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"no such thing"}}`)
		}
	}))
	defer srv.Close()
	s := NewStripe(StripeConfig{SecretKey: "sk_test_123", APIBase: srv.URL})
	ctx := context.Background()

	req := checkout(keys.OrderID("ev_jazz", "str2"))
	req.Amount = 4750 // 2 x 21.25 + 3.00 of fees + 2.00 of VAT
	req.Items = append(req.Items, Item{Name: "Service fee", Quantity: 1, UnitPrice: 300, Amount: 300},
		Item{Name: "VAT", Quantity: 1, UnitPrice: 200, Amount: 200})
	req.ExpiresAt = time.Now().Add(10 * time.Minute)
	sess, err := s.CreateSession(ctx, req)
	if err != nil || sess.ID != "cs_test_a" || sess.URL != "https://checkout.stripe.com/c/pay/cs_test_a" {
		t.Fatalf("CreateSession = %+v, %v", sess, err)
	}
	f := forms["POST /v1/checkout/sessions"]
	want := map[string]string{
		"mode":                                          "payment",
		"client_reference_id":                           req.RegistrationID,
		"metadata[registration_id]":                     req.RegistrationID,
		"success_url":                                   req.SuccessURL,
		"cancel_url":                                    req.CancelURL,
		"line_items[0][quantity]":                       "2",
		"line_items[0][price_data][unit_amount]":        "2125",
		"line_items[0][price_data][currency]":           "usd",
		"line_items[0][price_data][product_data][name]": "General admission",
		"line_items[1][quantity]":                       "1",
		"line_items[1][price_data][unit_amount]":        "300",
		"line_items[1][price_data][product_data][name]": "Service fee",
		"line_items[2][quantity]":                       "1",
		"line_items[2][price_data][unit_amount]":        "200",
		"line_items[2][price_data][product_data][name]": "VAT",
	}
	for k, v := range want {
		if f.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, f.Get(k), v)
		}
	}
	// What Stripe charges is what the registration costs.
	var charged int64
	for i := 0; f.Has("line_items[" + strconv.Itoa(i) + "][quantity]"); i++ {
		q, _ := strconv.ParseInt(f.Get("line_items["+strconv.Itoa(i)+"][quantity]"), 10, 64)
		u, _ := strconv.ParseInt(f.Get("line_items["+strconv.Itoa(i)+"][price_data][unit_amount]"), 10, 64)
		charged += q * u
	}
	if charged != int64(req.Amount) {
		t.Errorf("line items charge %d, want the amount %d", charged, req.Amount)
	}
	// Stripe wants at least 30 minutes, even for a shorter checkout window.
	if exp, _ := strconv.ParseInt(f.Get("expires_at"), 10, 64); exp < time.Now().Add(30*time.Minute).Unix() {
		t.Errorf("expires_at = %d, want at least 30 minutes ahead", exp)
	}

	if paid, err := s.Expire(ctx, "cs_done"); err != nil || !paid {
		t.Fatalf("Expire(completed) = %v, %v; want paid", paid, err)
	}
	if paid, err := s.Expire(ctx, "cs_open"); err != nil || paid {
		t.Fatalf("Expire(open) = %v, %v; want not paid", paid, err)
	}
	if _, err := s.Expire(ctx, "cs_missing"); err == nil {
		t.Fatal("Expire of an unknown session succeeded")
	}
}

// A 4xx from the expire call is not proof the session is closed: one still
// open (the call was rate limited) keeps its hold, and a complete session
// whose payment has not settled yet counts as paid.
func TestStripeExpireReadsTheSessionAfterARefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		id := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/checkout/sessions/"), "/")[0]
		if r.Method == "POST" {
			// Stripe-Should-Retry false: stripe-go retries no further.
			w.Header().Set("Stripe-Should-Retry", "false")
			if id == "cs_limited" {
				w.WriteHeader(429)
				_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}`)
				return
			}
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"Only Checkout Sessions with a status in [\"open\"] can be expired."}}`)
			return
		}
		status := map[string]string{"cs_limited": "open", "cs_async": "complete", "cs_gone": "expired"}[id]
		_, _ = io.WriteString(w, `{"id":"`+id+`","object":"checkout.session","status":"`+status+`","payment_status":"unpaid"}`)
	}))
	defer srv.Close()
	s := NewStripe(StripeConfig{SecretKey: "sk_test_123", APIBase: srv.URL})
	ctx := context.Background()
	if paid, err := s.Expire(ctx, "cs_limited"); err == nil {
		t.Fatalf("Expire(429, still open) = %v, nil; want an error so the hold stays", paid)
	}
	if paid, err := s.Expire(ctx, "cs_async"); err != nil || !paid {
		t.Fatalf("Expire(complete, unpaid) = %v, %v; want paid", paid, err)
	}
	if paid, err := s.Expire(ctx, "cs_gone"); err != nil || paid {
		t.Fatalf("Expire(expired) = %v, %v; want not paid", paid, err)
	}
}

// A discount (a negative item Stripe cannot take), or items that do not
// sum to the amount, is charged as one line of the total.
func TestStripeLinesChargeExactlyTheTotal(t *testing.T) {
	req := CheckoutRequest{RegistrationID: "oa.ev", EventName: "Gala", Amount: 3000,
		Lines: []orders.Line{{Kind: orders.LineTicket, RefID: "vip", Quantity: 2, UnitPrice: 2000, Amount: 4000}},
		Items: Items{{Name: "VIP", Quantity: 2, UnitPrice: 2000, Amount: 4000}, {Name: "Discount (HALF)", Quantity: 1, UnitPrice: -1000, Amount: -1000}}}
	for _, items := range []Items{req.Items, req.Items[:1], nil} {
		req.Items = items
		ls := stripeLines(req)
		if len(ls) != 1 || *ls[0].PriceData.UnitAmount != 3000 || *ls[0].Quantity != 1 || !strings.Contains(*ls[0].PriceData.ProductData.Name, "Gala") {
			t.Fatalf("items %+v: lines %+v", items, ls)
		}
	}
}

func TestOpenChoosesTheCardProcessor(t *testing.T) {
	secrets := Config{CardSecret: "whsec_c", WalletSecret: "whsec_w"}
	cfg := secrets
	cfg.CardProcessor, cfg.Stripe = "stripe", StripeConfig{SecretKey: "sk_test_1"}
	ps, err := Open(cfg)
	if err != nil || ps.Card.Name() != "stripe" || ps.TestCard != nil || ps.Set["stripe"] == nil || ps.Set["wallet"] == nil || ps.Set["card"] != nil {
		t.Fatalf("stripe: %+v, %v", ps, err)
	}
	cfg.Stripe = StripeConfig{}
	if _, err := Open(cfg); err == nil {
		t.Fatal("stripe without a secret key opened")
	}
	cfg.CardProcessor = "paypal"
	if _, err := Open(cfg); err == nil {
		t.Fatal("an unknown processor opened")
	}
	ps, err = Open(secrets)
	if err != nil || ps.Card.Name() != "card" || ps.TestCard == nil || ps.Set["stripe"] != nil {
		t.Fatalf("default: %+v, %v", ps, err)
	}
}

// A built-in processor without its webhook secret would sign with "" and
// have every webhook refused: Open says so instead.
func TestOpenRefusesABuiltInProcessorWithoutItsSecret(t *testing.T) {
	if _, err := Open(Config{WalletSecret: "whsec_w"}); err == nil {
		t.Fatal("the test card processor opened without TICKETD_CARD_WEBHOOK_SECRET")
	}
	if _, err := Open(Config{CardSecret: "whsec_c"}); err == nil {
		t.Fatal("the wallet opened without TICKETD_WALLET_WEBHOOK_SECRET")
	}
	if _, err := Open(Config{CardProcessor: "stripe", WalletSecret: "whsec_w", Stripe: StripeConfig{SecretKey: "sk_test_1"}}); err != nil {
		t.Fatalf("stripe takes cards, so no card secret is needed: %v", err)
	}
}

// Switched back from Stripe to the test card processor, ticketd can still
// close the Stripe sessions it opened before: the sweeper's Set.Expire
// reaches Stripe while STRIPE_SECRET_KEY is set.
func TestSetExpiresStripeSessionsAfterASwitchAway(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == "POST" && r.URL.Path == "/v1/checkout/sessions/cs_before/expire" {
			_, _ = io.WriteString(w, `{"id":"cs_before","object":"checkout.session","status":"expired","payment_status":"unpaid"}`)
			return
		}
		w.WriteHeader(404)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"no such thing"}}`)
	}))
	defer srv.Close()
	ps, err := Open(Config{CardSecret: "whsec_c", WalletSecret: "whsec_w", Stripe: StripeConfig{SecretKey: "sk_test_1", APIBase: srv.URL}})
	if err != nil || ps.Card.Name() != Card {
		t.Fatalf("Open: %+v, %v", ps, err)
	}
	if paid, err := ps.Set.Expire(context.Background(), StripeName, "cs_before"); err != nil || paid {
		t.Fatalf("Set.Expire(stripe) after the switch = %v, %v; want closed, not paid", paid, err)
	}
}
