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
)

func TestStripeCreateAndExpireAgainstStripeMock(t *testing.T) {
	base := startStripeMock(t)
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
	req.Amount = 4750 // 2 x 21.25 + 5.00 of fees
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
		"line_items[0][price_data][product_data][name]": "Jazz night: Ticket ga",
		"line_items[1][quantity]":                       "1",
		"line_items[1][price_data][unit_amount]":        "500",
	}
	for k, v := range want {
		if f.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, f.Get(k), v)
		}
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

// A discount (total below the lines) is charged as one line of the total.
func TestStripeLinesChargeExactlyTheTotal(t *testing.T) {
	req := CheckoutRequest{RegistrationID: "oa.ev", EventName: "Gala", Amount: 3000,
		Lines: []orders.Line{{Kind: orders.LineTicket, RefID: "vip", Quantity: 2, UnitPrice: 2000, Amount: 4000}}}
	ls := stripeLines(req)
	if len(ls) != 1 || *ls[0].PriceData.UnitAmount != 3000 || *ls[0].Quantity != 1 || !strings.Contains(*ls[0].PriceData.ProductData.Name, "Gala") {
		t.Fatalf("lines %+v", ls)
	}
}

func TestOpenChoosesTheCardProcessor(t *testing.T) {
	ps, err := Open(Config{CardProcessor: "stripe", Stripe: StripeConfig{SecretKey: "sk_test_1"}})
	if err != nil || ps.Card.Name() != "stripe" || ps.TestCard != nil || ps.Set["stripe"] == nil || ps.Set["wallet"] == nil || ps.Set["card"] != nil {
		t.Fatalf("stripe: %+v, %v", ps, err)
	}
	if _, err := Open(Config{CardProcessor: "stripe"}); err == nil {
		t.Fatal("stripe without a secret key opened")
	}
	if _, err := Open(Config{CardProcessor: "paypal"}); err == nil {
		t.Fatal("an unknown processor opened")
	}
	ps, err = Open(Config{})
	if err != nil || ps.Card.Name() != "card" || ps.TestCard == nil {
		t.Fatalf("default: %+v, %v", ps, err)
	}
}
