package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments/stripemock"
)

// TestStripeCheckoutThroughTicketd runs a whole ticketd with
// TICKETD_CARD_PROCESSOR=stripe, its Stripe API at a stripe-mock, as an
// operator configures it: the storefront's card checkout opens a Stripe
// Checkout Session (the buyer is sent to Stripe, not to ticketd's test
// card page), and Stripe's signed checkout.session.completed at
// /v1/webhooks/stripe confirms the registration, which the sync worker
// then writes to Postgres and the mailer sends the buyer. A webhook
// signed with another secret is refused.
func TestStripeCheckoutThroughTicketd(t *testing.T) {
	const whsec = "whsec_ticketd_stripe_test"
	t.Setenv("TICKETD_CARD_PROCESSOR", "stripe")
	t.Setenv("STRIPE_SECRET_KEY", "sk_test_ticketd")
	t.Setenv("STRIPE_WEBHOOK_SECRET", whsec)
	t.Setenv("STRIPE_API_BASE", stripemock.Start(t))
	mailDir := t.TempDir()
	t.Setenv("TICKETD_MAIL_DIR", mailDir)
	cfg := localConfig(t) // reads the environment above
	base := startTicketd(t, cfg)

	shop := map[string]string{"x-service-key": "pk_demo", "Origin": "http://localhost:3000", "Content-Type": "application/json"}
	st, body := call(t, "POST", base+"/v1/storefront/register-guest", shop,
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
	id, total := reg.Data.RegistrationID, reg.Data.Total
	if total != 5300 { // 2 x 25.00 + 2 x 1.50 of fees
		t.Fatalf("total %s, want 53.00", total)
	}

	st, body = call(t, "POST", base+"/v1/storefront/card/create-checkout-session", shop, fmt.Sprintf(
		`{"eventId":"ev_demo_ga","registrationId":%q,"selectedTicketId":"tk_general","quantity":2,"selectedTicketAmount":50,`+
			`"successUrl":"http://localhost:3000/thanks?session={CHECKOUT_SESSION_ID}","cancelUrl":"http://localhost:3000/cart"}`, id))
	var sess struct {
		Data struct {
			URL            string `json:"url"`
			SessionID      string `json:"sessionId"`
			RegistrationID string `json:"registrationId"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &sess); st != 200 || err != nil {
		t.Fatalf("create-checkout-session: %d %s (%v)", st, body, err)
	}
	// stripe-mock keeps no state: it answers its fixture's URL (Stripe's
	// checkout host) and a fresh cs_ id; what counts is that the buyer goes
	// to Stripe, not to the test card page ticketd hosts.
	u, err := url.Parse(sess.Data.URL)
	if err != nil || u.Scheme != "https" || u.Host != "checkout.stripe.com" ||
		strings.HasPrefix(sess.Data.URL, cfg.AppURL) || strings.Contains(sess.Data.URL, "/pay/card/") {
		t.Fatalf("checkout url %q: want Stripe's checkout page, not ticketd's", sess.Data.URL)
	}
	if !strings.HasPrefix(sess.Data.SessionID, "cs_") || sess.Data.RegistrationID != id {
		t.Fatalf("create-checkout-session answered %s", body)
	}
	// ticketd's own test card page knows no such session.
	if st, _ := call(t, "GET", base+"/pay/card/"+sess.Data.SessionID, nil, ""); st == 200 {
		t.Fatalf("ticketd's test card page served a Stripe session")
	}

	// Stripe reports the payment of the session ticketd attached.
	event := []byte(fmt.Sprintf(`{"id":"evt_ticketd_1","object":"event","api_version":"2025-01-27.acacia","type":"checkout.session.completed",`+
		`"data":{"object":{"id":%q,"object":"checkout.session","status":"complete","payment_status":"paid","amount_total":%d,"currency":"usd",`+
		`"client_reference_id":%q,"metadata":{"registration_id":%q}}}}`, sess.Data.SessionID, int64(total), id, id))
	hook := func(secret string) (int, string) {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: event, Secret: secret, Timestamp: time.Now()})
		return call(t, "POST", base+"/v1/webhooks/stripe", map[string]string{"Content-Type": "application/json", "Stripe-Signature": sp.Header}, string(event))
	}
	// Another secret first: refused, and nothing is booked.
	if st, body := hook("whsec_someone_else"); st != 401 || !strings.Contains(body, `"code":"INVALID_SIGNATURE"`) {
		t.Fatalf("webhook signed with another secret: %d %s, want 401 INVALID_SIGNATURE", st, body)
	}
	readReg := func() (status, paymentStatus string, paid money.Cents) {
		st, body := call(t, "GET", base+"/v1/storefront/registration/"+id, shop, "")
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
			t.Fatalf("registration: %d %s (%v)", st, body, err)
		}
		return r.Data.Status, r.Data.Payment.PaymentStatus, r.Data.Payment.Amount
	}
	if s, ps, _ := readReg(); s != "awaiting_payment" || ps != "unpaid" {
		t.Fatalf("after a forged webhook the registration is %s, payment %s", s, ps)
	}

	if st, body := hook(whsec); st != 200 || !strings.Contains(body, `"status":"confirmed"`) {
		t.Fatalf("stripe webhook: %d %s, want 200 confirmed", st, body)
	}
	if s, ps, paid := readReg(); s != "confirmed" || ps != "paid" || paid != total {
		t.Fatalf("registration after Stripe's webhook: %s, payment %s of %s; want confirmed, paid %s", s, ps, paid, total)
	}

	// The worker writes it through as a storefront order paid by this
	// Stripe session, and the mailer sends the buyer the tickets.
	ctx := context.Background()
	db, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	var source, ref string
	var cents int64
	for {
		err := db.QueryRow(ctx, `SELECT source, coalesce(partner_reference, ''), total_cents FROM orders WHERE id = $1`, id).Scan(&source, &ref, &cents)
		if err == nil {
			break
		}
		if err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the paid registration %s is not in Postgres after 20s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if source != "storefront" || !strings.Contains(ref, sess.Data.SessionID) || money.Cents(cents) != total {
		t.Fatalf("orders row: source %q, reference %q, total %d; want storefront, the Stripe session %s, %d",
			source, ref, cents, sess.Data.SessionID, int64(total))
	}
	for {
		if mailed(t, mailDir, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no e-mail for %s in the mail folder after 20s", id)
		}
		time.Sleep(50 * time.Millisecond)
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
