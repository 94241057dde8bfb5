package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments/stripemock"
)

// stripeWebhookSecret is STRIPE_WEBHOOK_SECRET in these tests.
const stripeWebhookSecret = "whsec_ticketd_stripe_test"

// shopHeaders are a page's on the demo's publishable key's domain.
var shopHeaders = map[string]string{"x-service-key": "pk_demo", "Origin": "http://localhost:3000", "Content-Type": "application/json"}

// startStripeTicketd runs ticketd with the demo catalog and
// TICKETD_CARD_PROCESSOR=stripe, its Stripe API a stripe-mock of the
// test's own, configured through the environment as an operator does
// (extra: more variables). It returns the config and the base URL.
func startStripeTicketd(t *testing.T, extra map[string]string) (config, string) {
	t.Helper()
	t.Setenv("TICKETD_CARD_PROCESSOR", "stripe")
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_ticketd")
	t.Setenv("STRIPE_WEBHOOK_SECRET", stripeWebhookSecret)
	if _, ok := extra["STRIPE_API_BASE"]; !ok {
		t.Setenv("STRIPE_API_BASE", stripemock.Start(t))
	}
	for k, v := range extra {
		t.Setenv(k, v)
	}
	cfg := localConfig(t) // loadConfig reads the variables above
	return cfg, startTicketd(t, cfg)
}

// stripeSession is create-checkout-session's data.
type stripeSession struct {
	URL            string `json:"url"`
	SessionID      string `json:"sessionId"`
	RegistrationID string `json:"registrationId"`
}

// registerAndCheckout registers a guest for two general tickets of
// ev_demo_ga and opens a card checkout for the registration: its id,
// total and session.
func registerAndCheckout(t *testing.T, base string) (id string, total money.Cents, sess stripeSession) {
	t.Helper()
	st, body := call(t, "POST", base+"/v1/storefront/register-guest", shopHeaders,
		`{"eventId":"ev_demo_ga","name":"Ada Lovelace","email":"ada@example.com","selectedTicketId":"tk_general","quantity":2}`)
	var reg struct {
		Data struct {
			RegistrationID string      `json:"registrationId"`
			Status         string      `json:"status"`
			Total          money.Cents `json:"total"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &reg); st != 200 || err != nil || reg.Data.RegistrationID == "" || reg.Data.Status != "awaiting_payment" {
		t.Fatalf("register-guest: %d %s (%v)", st, body, err)
	}
	if reg.Data.Total != 5300 { // 2 x 25.00 + 2 x 1.50 of fees
		t.Fatalf("total %s, want 53.00", reg.Data.Total)
	}
	st, body = call(t, "POST", base+"/v1/storefront/card/create-checkout-session", shopHeaders, fmt.Sprintf(
		`{"eventId":"ev_demo_ga","registrationId":%q,"selectedTicketId":"tk_general","quantity":2,"selectedTicketAmount":50,`+
			`"successUrl":"http://localhost:3000/thanks?session={CHECKOUT_SESSION_ID}","cancelUrl":"http://localhost:3000/cart"}`,
		reg.Data.RegistrationID))
	var s struct{ Data stripeSession }
	if err := json.Unmarshal([]byte(body), &s); st != 200 || err != nil {
		t.Fatalf("create-checkout-session: %d %s (%v)", st, body, err)
	}
	if !strings.HasPrefix(s.Data.SessionID, "cs_") || s.Data.RegistrationID != reg.Data.RegistrationID {
		t.Fatalf("create-checkout-session answered %s", body)
	}
	return reg.Data.RegistrationID, reg.Data.Total, s.Data
}

// stripeCompleted posts to /v1/webhooks/stripe Stripe's
// checkout.session.completed event evt of session sessionID, paid
// amount of registration id, signed by stripe-go with secret.
func stripeCompleted(t *testing.T, base, secret, evt, sessionID, id string, amount money.Cents) (int, string) {
	t.Helper()
	event := fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2025-01-27.acacia","type":"checkout.session.completed",`+
		`"data":{"object":{"id":%q,"object":"checkout.session","status":"complete","payment_status":"paid","amount_total":%d,"currency":"usd",`+
		`"client_reference_id":%q,"metadata":{"registration_id":%q}}}}`, evt, sessionID, int64(amount), id, id)
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(event), Secret: secret, Timestamp: time.Now()})
	return call(t, "POST", base+"/v1/webhooks/stripe",
		map[string]string{"Content-Type": "application/json", "Stripe-Signature": sp.Header}, event)
}

// registrationState is what GET /v1/storefront/registration/<id> says of
// the registration and its payment.
func registrationState(t *testing.T, base, id string) (status, paymentStatus string, paid money.Cents) {
	t.Helper()
	st, body := call(t, "GET", base+"/v1/storefront/registration/"+id, shopHeaders, "")
	var r struct {
		Data struct {
			Status  string `json:"status"`
			Payment struct {
				PaymentStatus string      `json:"paymentStatus"`
				Amount        money.Cents `json:"amount"`
			} `json:"payment"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); st != 200 || err != nil {
		t.Fatalf("registration %s: %d %s (%v)", id, st, body, err)
	}
	return r.Data.Status, r.Data.Payment.PaymentStatus, r.Data.Payment.Amount
}

// TestStripeCheckoutThroughTicketd: the storefront's card checkout opens
// a Stripe Checkout Session (the buyer is sent to Stripe, not to
// ticketd's test card page), and Stripe's signed
// checkout.session.completed at /v1/webhooks/stripe confirms the
// registration, which the sync worker writes to Postgres and the mailer
// sends the buyer. A webhook signed with another secret is refused.
func TestStripeCheckoutThroughTicketd(t *testing.T) {
	mailDir := t.TempDir()
	cfg, base := startStripeTicketd(t, map[string]string{"TICKETD_MAIL_DIR": mailDir})
	id, total, sess := registerAndCheckout(t, base)
	// stripe-mock keeps no state: it answers its fixture's URL (Stripe's
	// checkout host) and a fresh cs_ id; what counts is that the buyer goes
	// to Stripe, not to the test card page ticketd hosts.
	u, err := url.Parse(sess.URL)
	if err != nil || u.Scheme != "https" || u.Host != "checkout.stripe.com" ||
		strings.HasPrefix(sess.URL, cfg.AppURL) || strings.Contains(sess.URL, "/pay/card/") {
		t.Fatalf("checkout url %q: want Stripe's checkout page, not ticketd's", sess.URL)
	}
	// Stripe takes cards: ticketd hosts no test card page at all.
	if st, body := call(t, "GET", base+"/pay/card/"+sess.SessionID, nil, ""); st != 404 {
		t.Fatalf("ticketd's test card page for a Stripe session: %d %s, want 404", st, body)
	}

	// Signed with another secret: refused, and nothing is booked.
	if st, body := stripeCompleted(t, base, "whsec_someone_else", "evt_ticketd_1", sess.SessionID, id, total); st != 401 ||
		!strings.Contains(body, `"code":"INVALID_SIGNATURE"`) {
		t.Fatalf("webhook signed with another secret: %d %s, want 401 INVALID_SIGNATURE", st, body)
	}
	if s, ps, _ := registrationState(t, base, id); s != "awaiting_payment" || ps != "unpaid" {
		t.Fatalf("after a forged webhook the registration is %s, payment %s", s, ps)
	}
	// Stripe reports the payment of the session ticketd attached.
	if st, body := stripeCompleted(t, base, stripeWebhookSecret, "evt_ticketd_1", sess.SessionID, id, total); st != 200 ||
		!strings.Contains(body, `"status":"confirmed"`) {
		t.Fatalf("stripe webhook: %d %s, want 200 confirmed", st, body)
	}
	if s, ps, paid := registrationState(t, base, id); s != "confirmed" || ps != "paid" || paid != total {
		t.Fatalf("registration after Stripe's webhook: %s, payment %s of %s; want confirmed, paid %s", s, ps, paid, total)
	}

	// The worker writes it through as a storefront order paid by this
	// Stripe session, and the mailer sends the buyer the tickets.
	db, err := pgxpool.New(context.Background(), cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var source, ref string
	var cents int64
	waitFor(t, 20*time.Second, "the paid registration in Postgres", func() bool {
		err := db.QueryRow(context.Background(), `SELECT source, coalesce(partner_reference, ''), total_cents FROM orders WHERE id = $1`,
			id).Scan(&source, &ref, &cents)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return err == nil
	})
	if source != "storefront" || !strings.Contains(ref, sess.SessionID) || money.Cents(cents) != total {
		t.Fatalf("orders row: source %q, reference %q, total %d; want storefront, the Stripe session %s, %d",
			source, ref, cents, sess.SessionID, int64(total))
	}
	waitFor(t, 20*time.Second, "the buyer's e-mail in the mail folder", func() bool { return mailed(t, mailDir, id) })
}

// TestStripeSessionClosedWhenTheHoldEnds: when the checkout window ends,
// ticketd's sweep closes the registration's Stripe session through
// Stripe (here stripe-mock, which expires any session) before it gives
// the tickets back; a processor it could not reach would keep them held
// for the 10-minute grace. Stripe's payment arriving after that books the
// registration anew while the tickets are still there.
func TestStripeSessionClosedWhenTheHoldEnds(t *testing.T) {
	_, base := startStripeTicketd(t, map[string]string{"TICKETD_CHECKOUT_TTL": "2s", "TICKETD_MAIL": "off"})
	// remaining is tk_general's count left; ok false when the read was
	// rate limited (reads are 120 a minute per client IP).
	remaining := func() (n int64, ok bool) {
		t.Helper()
		st, body := call(t, "GET", base+"/v1/storefront/events/ev_demo_ga", shopHeaders, "")
		if st == 429 {
			return 0, false
		}
		var ev struct {
			Data struct {
				Tickets []struct {
					ID        string `json:"id"`
					Remaining *int64 `json:"remaining"`
				} `json:"tickets"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &ev); st != 200 || err != nil {
			t.Fatalf("event: %d %s (%v)", st, body, err)
		}
		for _, tk := range ev.Data.Tickets {
			if tk.ID == "tk_general" && tk.Remaining != nil {
				return *tk.Remaining, true
			}
		}
		t.Fatalf("event answered no remaining count of tk_general: %s", body)
		return 0, false
	}
	mustRemaining := func() int64 {
		t.Helper()
		n, ok := remaining()
		if !ok {
			t.Fatal("event read rate limited")
		}
		return n
	}
	before := mustRemaining()
	id, total, sess := registerAndCheckout(t, base)
	if n := mustRemaining(); n != before-2 {
		t.Fatalf("remaining %d after registering 2, want %d", n, before-2)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, ok := remaining(); ok && n == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tickets of a registration with a Stripe session were not given back after its window")
		}
		time.Sleep(500 * time.Millisecond)
	}
	if s, _, _ := registrationState(t, base, id); s != "expired" {
		t.Fatalf("registration %s after its window, want expired", s)
	}
	st, body := stripeCompleted(t, base, stripeWebhookSecret, "evt_ticketd_late", sess.SessionID, id, total)
	if st != 200 || !strings.Contains(body, `"status":"confirmed"`) || !strings.Contains(body, `"reclaimed":true`) {
		t.Fatalf("late stripe webhook: %d %s, want 200 confirmed, reclaimed", st, body)
	}
	if s, ps, paid := registrationState(t, base, id); s != "confirmed" || ps != "paid" || paid != total {
		t.Fatalf("registration after the late payment: %s, payment %s of %s", s, ps, paid)
	}
	if n := mustRemaining(); n != before-2 {
		t.Fatalf("remaining %d after the late payment, want %d", n, before-2)
	}
}

// TestStripeWalletThroughTicketd: with TICKETD_WALLET_PROCESSOR=stripe
// the storefront's wallet/create-payment opens a Stripe Checkout Session
// limited to the wallet payment method types (Link by default; Apple Pay
// and Google Pay ride on the card type), the buyer goes to Stripe, and
// Stripe's signed checkout.session.completed at /v1/webhooks/stripe, the
// card's endpoint, confirms the registration. The event detail lists both
// methods; a Stripe webhook of a session ticketd never opened is refused.
// stripe-mock answers behind a recorder of what ticketd asked Stripe.
func TestStripeWalletThroughTicketd(t *testing.T) {
	mock := stripemock.Start(t)
	target, err := url.Parse(mock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var created []url.Values
	proxy := httputil.NewSingleHostReverseProxy(target)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.URL.Path == "/v1/checkout/sessions" {
			b, _ := io.ReadAll(r.Body)
			f, _ := url.ParseQuery(string(b))
			mu.Lock()
			created = append(created, f)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	_, base := startStripeTicketd(t, map[string]string{"TICKETD_WALLET_PROCESSOR": "stripe", "STRIPE_API_BASE": rec.URL, "TICKETD_MAIL": "off"})

	if methods, _ := eventPayments(t, base, "ev_demo_ga"); strings.Join(methods, ",") != "card,wallet" {
		t.Fatalf("event detail paymentMethods %v, want card and wallet", methods)
	}
	id, total, _ := registerGA(t, base, 2)
	c := payCalls(id, 2, total)[1]
	st, body := call(t, "POST", base+c[0], shopHeaders, c[1])
	var s struct{ Data stripeSession }
	if err := json.Unmarshal([]byte(body), &s); st != 200 || err != nil || !strings.HasPrefix(s.Data.SessionID, "cs_") {
		t.Fatalf("wallet/create-payment: %d %s (%v)", st, body, err)
	}
	if u, err := url.Parse(s.Data.URL); err != nil || u.Host != "checkout.stripe.com" {
		t.Fatalf("wallet payment url %q: want Stripe's checkout", s.Data.URL)
	}
	mu.Lock()
	if len(created) != 1 || created[0].Get("payment_method_types[0]") != "link" || created[0].Has("payment_method_types[1]") ||
		created[0].Get("client_reference_id") != id || created[0].Get("line_items[0][price_data][currency]") != "usd" ||
		created[0].Get("adaptive_pricing[enabled]") != "false" {
		t.Fatalf("ticketd asked Stripe for %v, want one session limited to link, in usd only (no Adaptive Pricing)", created)
	}
	mu.Unlock()
	// The test wallet has no page for it: Stripe hosts the payment.
	if st, _ := call(t, "GET", base+"/pay/wallet/"+s.Data.SessionID, nil, ""); st != 404 {
		t.Fatalf("ticketd's wallet page for a Stripe session: %d, want 404", st)
	}

	if st, body := stripeCompleted(t, base, stripeWebhookSecret, "evt_wallet_forged", "cs_test_never_opened", id, total); st != 409 ||
		!strings.Contains(body, `"code":"PAYMENT_MISMATCH"`) {
		t.Fatalf("stripe webhook of a session ticketd never opened: %d %s, want 409 PAYMENT_MISMATCH", st, body)
	}
	if st, body := stripeCompleted(t, base, stripeWebhookSecret, "evt_wallet_1", s.Data.SessionID, id, total); st != 200 ||
		!strings.Contains(body, `"status":"confirmed"`) {
		t.Fatalf("stripe webhook of the wallet session: %d %s, want 200 confirmed", st, body)
	}
	if s, ps, paid := registrationState(t, base, id); s != "confirmed" || ps != "paid" || paid != total {
		t.Fatalf("registration after Stripe's webhook: %s, payment %s of %s", s, ps, paid)
	}
}

// mailed says whether a message in the mail folder names the registration.
func mailed(t *testing.T, dir, id string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), id) {
			return true
		}
	}
	return false
}
