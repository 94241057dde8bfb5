package payments

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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

func TestOpenChoosesTheProcessors(t *testing.T) {
	test := Config{CardSecret: "whsec_c", WalletSecret: "whsec_w", TestPayments: true}
	cfg := test
	cfg.CardProcessor, cfg.WalletProcessor, cfg.Stripe = "stripe", Wallet, StripeConfig{SecretKey: "sk_test_1"}
	ps, err := Open(cfg)
	if err != nil || ps.Card.Name() != "stripe" || ps.Wallet.Name() != Wallet || ps.TestCard == nil ||
		ps.Set["stripe"] == nil || ps.Set["wallet"] == nil || ps.Set["card"] == nil {
		t.Fatalf("stripe cards, test wallet: %+v, %v", ps, err)
	}
	cfg.Stripe = StripeConfig{}
	if _, err := Open(cfg); err == nil {
		t.Fatal("stripe without a secret key opened")
	}
	cfg.CardProcessor = "paypal"
	if _, err := Open(cfg); err == nil {
		t.Fatal("an unknown processor opened")
	}
	cfg = test
	cfg.CardProcessor, cfg.WalletProcessor = Card, Wallet
	ps, err = Open(cfg)
	if err != nil || ps.Card != Processor(ps.TestCard) || ps.Wallet != Processor(ps.TestWallet) || ps.Set["stripe"] != nil {
		t.Fatalf("test processors: %+v, %v", ps, err)
	}

	// Production without a processor: none takes payments, and the
	// built-in ones do not exist at all.
	ps, err = Open(Config{})
	if err != nil || ps.Card != nil || ps.Wallet != nil || ps.TestCard != nil || ps.TestWallet != nil || len(ps.Set) != 0 {
		t.Fatalf("no processor: %+v, %v", ps, err)
	}
	// The built-in ones cannot be chosen without test payments.
	for _, c := range []Config{{CardProcessor: Card, CardSecret: "whsec_c", WalletSecret: "whsec_w"},
		{WalletProcessor: Wallet, CardSecret: "whsec_c", WalletSecret: "whsec_w"}} {
		if ps, err := Open(c); err == nil {
			t.Fatalf("%+v opened a test processor without test payments: %+v", c, ps)
		}
	}
	// Stripe for both: one name, the wallet's sessions limited to wallets.
	ps, err = Open(Config{CardProcessor: "stripe", WalletProcessor: "stripe", Stripe: StripeConfig{SecretKey: "sk_test_1"}})
	if err != nil || ps.Card.Name() != "stripe" || ps.Wallet.Name() != "stripe" || ps.TestCard != nil || ps.Set["stripe"] == nil {
		t.Fatalf("stripe for both: %+v, %v", ps, err)
	}
	if w := ps.Wallet.(*Stripe); !slices.Equal(w.methods, DefaultStripeWalletMethods) || ps.Card.(*Stripe).methods != nil {
		t.Fatalf("wallet methods %v, card methods %v", w.methods, ps.Card.(*Stripe).methods)
	}
}

// A built-in processor without its webhook secret would sign with "" and
// have every webhook refused: Open says so instead.
func TestOpenRefusesABuiltInProcessorWithoutItsSecret(t *testing.T) {
	if _, err := Open(Config{TestPayments: true, WalletSecret: "whsec_w"}); err == nil {
		t.Fatal("the test card processor opened without TICKETD_CARD_WEBHOOK_SECRET")
	}
	if _, err := Open(Config{TestPayments: true, CardSecret: "whsec_c"}); err == nil {
		t.Fatal("the wallet opened without TICKETD_WALLET_WEBHOOK_SECRET")
	}
	if _, err := Open(Config{CardProcessor: "stripe", Stripe: StripeConfig{SecretKey: "sk_test_1"}}); err != nil {
		t.Fatalf("stripe takes cards and no test processor runs, so no webhook secret is needed: %v", err)
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
	ps, err := Open(Config{CardProcessor: Card, TestPayments: true, CardSecret: "whsec_c", WalletSecret: "whsec_w",
		Stripe: StripeConfig{SecretKey: "sk_test_1", APIBase: srv.URL}})
	if err != nil || ps.Card.Name() != Card {
		t.Fatalf("Open: %+v, %v", ps, err)
	}
	if paid, err := ps.Set.Expire(context.Background(), StripeName, "cs_before"); err != nil || paid {
		t.Fatalf("Set.Expire(stripe) after the switch = %v, %v; want closed, not paid", paid, err)
	}
}

// The Stripe wallet opens Checkout Sessions limited to the wallet payment
// method types configured, in the order given; the card's sessions name
// none (the Dashboard's methods, Apple Pay and Google Pay among them).
// stripe-mock, which checks each parameter against Stripe's API, accepts
// every type the wallet may name.
func TestStripeWalletSessionsOfferOnlyWallets(t *testing.T) {
	var mu sync.Mutex
	var forms []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		v, _ := url.ParseQuery(string(b))
		mu.Lock()
		forms = append(forms, v)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"cs_test_w","object":"checkout.session","url":"https://checkout.stripe.com/c/pay/cs_test_w","status":"open"}`)
	}))
	defer srv.Close()
	ctx := context.Background()
	req := checkout(keys.OrderID("ev_jazz", "wal1"))
	methods := []string{"link", "cashapp", "amazon_pay"}
	if _, err := NewStripeWallet(StripeConfig{SecretKey: "sk_test_123", APIBase: srv.URL}, methods).CreateSession(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := NewStripe(StripeConfig{SecretKey: "sk_test_123", APIBase: srv.URL}).CreateSession(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(forms) != 2 {
		t.Fatalf("%d session requests, want 2", len(forms))
	}
	wallet, card := forms[0], forms[1]
	for i, m := range methods {
		if got := wallet.Get("payment_method_types[" + strconv.Itoa(i) + "]"); got != m {
			t.Errorf("wallet session's payment_method_types[%d] = %q, want %q", i, got, m)
		}
	}
	if wallet.Has("payment_method_types[3]") || wallet.Get("client_reference_id") != req.RegistrationID ||
		wallet.Get("metadata[registration_id]") != req.RegistrationID {
		t.Errorf("wallet session form %v", wallet)
	}
	for k := range card {
		if strings.HasPrefix(k, "payment_method_types") {
			t.Errorf("card session names %s = %q: the Dashboard's methods (Apple Pay, Google Pay) would be lost", k, card.Get(k))
		}
	}

	base := stripemock.Start(t)
	s := NewStripeWallet(StripeConfig{SecretKey: "sk_test_123", APIBase: base}, StripeWalletMethods)
	sess, err := s.CreateSession(ctx, req)
	if err != nil || !strings.HasPrefix(sess.ID, "cs_") || sess.URL == "" {
		t.Fatalf("stripe-mock refused a wallet session of %v: %+v, %v", StripeWalletMethods, sess, err)
	}
	if _, err := s.Expire(ctx, sess.ID); err != nil {
		t.Fatalf("Expire: %v", err)
	}
}

// TICKETD_STRIPE_WALLET_METHODS takes Stripe's wallet types only: card
// (Apple Pay, Google Pay) belongs to the card processor, and a bank debit
// is no wallet.
func TestParseStripeWalletMethods(t *testing.T) {
	for in, want := range map[string][]string{
		"link": {"link"}, " link , paypal ": {"link", "paypal"}, "revolut_pay,amazon_pay,cashapp": {"revolut_pay", "amazon_pay", "cashapp"},
	} {
		if got, err := ParseStripeWalletMethods(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", " , ", "card", "link,card", "sepa_debit", "link,link", "apple_pay"} {
		if got, err := ParseStripeWalletMethods(in); err == nil {
			t.Errorf("%q accepted: %v", in, got)
		}
	}
}

// A Stripe refusal that repeats the buyer's e-mail is logged without it;
// what Stripe said stays.
func TestStripeErrorsLeaveTheBuyersEmailOut(t *testing.T) {
	refusal := fmt.Errorf(`{"code":"email_invalid","message":"Invalid email address: ann@x.test","param":"customer_email"}`)
	err := withoutEmail(refusal, "ann@x.test")
	if msg := err.Error(); strings.Contains(msg, "ann@x.test") || !strings.Contains(msg, "Invalid email address") || !strings.Contains(msg, "customer_email") {
		t.Fatalf("logged as %q: want Stripe's message without the e-mail", msg)
	}
	if other := fmt.Errorf("no such price"); withoutEmail(other, "ann@x.test") != other {
		t.Fatal("an error without the e-mail must stay as it is")
	}
}
