package webhooks_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/router"
	json "github.com/goccy/go-json"
	"github.com/stripe/stripe-go/v82/webhook"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/webhooks"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/registrations"
)

const (
	cardSecret   = "whsec_card_test"
	walletSecret = "whsec_wallet_test"
	stripeSecret = "whsec_stripe_test"
)

// fakeBooker books payments in memory: each registration is paid once; a
// payment of another amount needs a refund. fail makes the next calls fail.
type fakeBooker struct {
	mu    sync.Mutex
	calls []registrations.Payment
	paid  map[string]registrations.Payment
	total money.Cents
	fail  error
	// hang makes the next calls wait for their context to end (Redis too
	// slow to answer within the webhook's timeout).
	hang bool
}

func (b *fakeBooker) Pay(ctx context.Context, p registrations.Payment) (registrations.Outcome, error) {
	b.mu.Lock()
	hang := b.hang
	b.mu.Unlock()
	if hang {
		<-ctx.Done()
		return registrations.Outcome{}, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, p)
	if b.fail != nil {
		return registrations.Outcome{}, b.fail
	}
	out := registrations.Outcome{Registration: registrations.Registration{ID: p.RegistrationID, Total: b.total, Paid: p.Amount, Processor: p.Processor, SessionID: p.PaymentID}}
	if p.Amount != b.total {
		out.Status, out.Reason, out.RefundReason = registrations.StatusRefundRequired, "amount_mismatch", "amount_mismatch"
		return out, nil
	}
	out.Status = registrations.StatusConfirmed
	if first, ok := b.paid[p.RegistrationID]; ok {
		// Paid before: the same payment is a duplicate; another one is a
		// second charge, to be refunded (the registration stays confirmed).
		out.Duplicate = first.PaymentID == p.PaymentID
		if !out.Duplicate {
			out.RefundReason = "already_paid"
		}
		return out, nil
	}
	b.paid[p.RegistrationID] = p
	return out, nil
}

func (b *fakeBooker) payments() []registrations.Payment {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]registrations.Payment(nil), b.calls...)
}

type fakeRefunds struct {
	mu       sync.Mutex
	got      []registrations.Outcome
	payments []registrations.Payment
	fail     error
}

func (r *fakeRefunds) Refund(_ context.Context, o registrations.Outcome, p registrations.Payment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.got = append(r.got, o)
	r.payments = append(r.payments, p)
	return nil
}

type fixture struct {
	h       fasthttp.RequestHandler
	booker  *fakeBooker
	refunds *fakeRefunds
	now     time.Time
	api     *webhooks.API
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rc, space := redistest.New(t)
	f := &fixture{booker: &fakeBooker{paid: map[string]registrations.Payment{}, total: 4250}, refunds: &fakeRefunds{}, now: time.Now()}
	api := &webhooks.API{
		Booker: f.booker, Refunds: f.refunds, Redis: rc, Space: space,
		CardSecret: cardSecret, WalletSecret: walletSecret, StripeSecret: stripeSecret,
		Now: func() time.Time { return f.now },
	}
	r := router.New()
	api.Register(r)
	f.h = r.Handler
	f.api = api
	return f
}

type answer struct {
	status int
	env    struct {
		Success bool   `json:"success"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Duplicate      bool   `json:"duplicate"`
			Ignored        bool   `json:"ignored"`
			RegistrationID string `json:"registrationId"`
			Status         string `json:"status"`
		} `json:"data"`
	}
	raw string
}

func (f *fixture) post(t *testing.T, path, header, sig string, body []byte) answer {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetContentType("application/json")
	if sig != "" {
		ctx.Request.Header.Set(header, sig)
	}
	ctx.Request.SetBody(body)
	f.h(&ctx)
	a := answer{status: ctx.Response.StatusCode(), raw: string(ctx.Response.Body())}
	if err := json.Unmarshal(ctx.Response.Body(), &a.env); err != nil {
		t.Fatalf("%s answered %d with a body that is not the envelope: %s", path, a.status, a.raw)
	}
	if a.status >= 500 && a.status != 503 {
		t.Fatalf("%s answered %d: %s", path, a.status, a.raw)
	}
	return a
}

func (f *fixture) card(t *testing.T, body []byte) answer {
	return f.post(t, "/v1/webhooks/card", payments.SignatureHeader, payments.Sign(cardSecret, f.now, body), body)
}

var reg = keys.OrderID("ev_jazz", "r1")

func cardBody(eventID, regID string, cents int64) []byte {
	return []byte(`{"id":"` + eventID + `","type":"checkout.session.completed","data":{"object":{"id":"cs_x_` + regID +
		`","payment_status":"paid","amount_total":` + strconv.FormatInt(cents, 10) + `,"currency":"usd","client_reference_id":"` + regID + `"}}}`)
}

func TestCardWebhookBooksThePayment(t *testing.T) {
	f := newFixture(t)
	a := f.card(t, cardBody("evt_1", reg, 4250))
	if a.status != 200 || !a.env.Success || a.env.Data.Status != registrations.StatusConfirmed || a.env.Data.Duplicate {
		t.Fatalf("answer %d %s", a.status, a.raw)
	}
	got := f.booker.payments()
	want := registrations.Payment{RegistrationID: reg, Processor: "card", PaymentID: "cs_x_" + reg, Amount: 4250, Currency: "usd"}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("booked %+v, want %+v", got, want)
	}
}

// A webhook delivered twice (the same event, each delivery signed anew as a
// processor's retry is) is booked once; the second is answered 200
// duplicate so the processor stops. The very same signed request again
// (captured and replayed within its 5 minutes) is refused.
func TestWebhookDeliveredTwiceBooksOnce(t *testing.T) {
	f := newFixture(t)
	body := cardBody("evt_twice", reg, 4250)
	if a := f.card(t, body); a.status != 200 || a.env.Data.Duplicate {
		t.Fatalf("first delivery: %d %s", a.status, a.raw)
	}
	// The same bytes and signature replayed, then a retry signed a few
	// seconds later.
	replay := f.post(t, "/v1/webhooks/card", payments.SignatureHeader, payments.Sign(cardSecret, f.now, body), body)
	if replay.status != 409 || replay.env.Code != "WEBHOOK_REPLAYED" {
		t.Fatalf("replayed delivery: %d %s", replay.status, replay.raw)
	}
	f.now = f.now.Add(3 * time.Second)
	if retry := f.card(t, body); retry.status != 200 || !retry.env.Data.Duplicate {
		t.Fatalf("second delivery: %d %s", retry.status, retry.raw)
	}
	if n := len(f.booker.payments()); n != 1 {
		t.Fatalf("booked %d times, want once", n)
	}
}

// The signature vector is computed outside Go, by openssl, over the exact
// bytes sent.
func TestWebhookSignedByOpenSSLIsAccepted(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not installed: the signature vector is computed with it")
	}
	f := newFixture(t)
	body := `{"id":"wp_ossl","status":"COMPLETED","amount":42.5,"currency":"USD","reference":"` + reg + `"}`
	ts := strconv.FormatInt(f.now.Unix(), 10)
	cmd := exec.Command("openssl", "dgst", "-sha256", "-hmac", walletSecret)
	cmd.Stdin = strings.NewReader(ts + "." + body)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out))
	a := f.post(t, "/v1/webhooks/wallet", payments.SignatureHeader, "t="+ts+",v1="+fields[len(fields)-1], []byte(body))
	if a.status != 200 {
		t.Fatalf("openssl-signed wallet webhook: %d %s", a.status, a.raw)
	}
	got := f.booker.payments()
	if len(got) != 1 || got[0].Amount != 4250 || got[0].Processor != "wallet" || got[0].PaymentID != "wp_ossl" || got[0].RegistrationID != reg {
		t.Fatalf("booked %+v", got)
	}
}

func TestBadSignaturesAreRefusedAndBookNothing(t *testing.T) {
	f := newFixture(t)
	body := cardBody("evt_bad", reg, 4250)
	cases := []struct {
		name, path, sig, code string
	}{
		{"none", "/v1/webhooks/card", "", "INVALID_SIGNATURE"},
		{"wrong secret", "/v1/webhooks/card", payments.Sign("guess", f.now, body), "INVALID_SIGNATURE"},
		{"wallet secret on card", "/v1/webhooks/card", payments.Sign(walletSecret, f.now, body), "INVALID_SIGNATURE"},
		{"stale", "/v1/webhooks/card", payments.Sign(cardSecret, f.now.Add(-6*time.Minute), body), "WEBHOOK_STALE"},
		{"future", "/v1/webhooks/card", payments.Sign(cardSecret, f.now.Add(6*time.Minute), body), "WEBHOOK_STALE"},
		{"card secret on wallet", "/v1/webhooks/wallet", payments.Sign(cardSecret, f.now, body), "INVALID_SIGNATURE"},
	}
	for _, tc := range cases {
		a := f.post(t, tc.path, payments.SignatureHeader, tc.sig, body)
		if a.status != 401 || a.env.Code != tc.code {
			t.Errorf("%s: %d %s, want 401 %s", tc.name, a.status, a.raw, tc.code)
		}
	}
	// A body changed after signing.
	sig := payments.Sign(cardSecret, f.now, body)
	if a := f.post(t, "/v1/webhooks/card", payments.SignatureHeader, sig, cardBody("evt_bad", reg, 1)); a.env.Code != "INVALID_SIGNATURE" {
		t.Errorf("tampered body: %d %s", a.status, a.raw)
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("refused webhooks booked %d payments", n)
	}
}

// Signed but malformed bodies are 400 INVALID_REQUEST, never a 500.
func TestMalformedBodiesAreInvalidRequests(t *testing.T) {
	f := newFixture(t)
	cards := []string{
		``, `[]`, `{`, `null`, `{"id":"e"}`,
		`{"id":"e","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"paid","amount_total":"4250","currency":"usd","client_reference_id":"` + reg + `"}}}`,
		`{"id":"e","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"paid","amount_total":42.5,"currency":"usd","client_reference_id":"` + reg + `"}}}`,
		`{"id":"e","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"paid","amount_total":-1,"currency":"usd","client_reference_id":"` + reg + `"}}}`,
		`{"id":"e","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"paid","amount_total":100,"currency":"usd","client_reference_id":"not-a-registration"}}}`,
		`{"id":"e","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"paid","amount_total":100,"currency":"usd"}}}`,
		`{"id":"e","type":"checkout.session.completed","extra":1,"data":{"object":{}}}`,
		`{"id":"e","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"paid","amount_total":100,"currency":"usd","client_reference_id":"` + reg + `","nested_extra":true}}}`,
		`{"id":"","type":"checkout.session.completed","data":{"object":{}}}`,
		`{"id":"e","type":"x","data":{"object":{}}} {}`,
	}
	for _, b := range cards {
		if a := f.card(t, []byte(b)); a.status != 400 || a.env.Code != "INVALID_REQUEST" {
			t.Errorf("card body %s: %d %s", b, a.status, a.raw)
		}
	}
	wallets := []string{
		`{"id":"w","status":"COMPLETED","amount":"42.50","currency":"USD","reference":"` + reg + `"}`,
		`{"id":"w","status":"COMPLETED","amount":42.505,"currency":"USD","reference":"` + reg + `"}`,
		`{"id":"w","status":"COMPLETED","amount":-1,"currency":"USD","reference":"` + reg + `"}`,
		`{"id":"w","status":"COMPLETED","amount":null,"currency":"USD","reference":"` + reg + `"}`,
		`{"id":"w","status":"COMPLETED","currency":"USD","reference":"` + reg + `"}`,
		`{"id":"w","status":"COMPLETED","amount":1,"currency":"USD","reference":"oNOPE"}`,
	}
	for _, b := range wallets {
		a := f.post(t, "/v1/webhooks/wallet", payments.SignatureHeader, payments.Sign(walletSecret, f.now, []byte(b)), []byte(b))
		if a.status != 400 || a.env.Code != "INVALID_REQUEST" {
			t.Errorf("wallet body %s: %d %s", b, a.status, a.raw)
		}
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("malformed webhooks booked %d payments", n)
	}
}

func TestEventsOtherThanAPaymentAreAcknowledgedAndIgnored(t *testing.T) {
	f := newFixture(t)
	for _, b := range []string{
		`{"id":"evt_o1","type":"checkout.session.expired","data":{"object":{"id":"cs"}}}`,
		`{"id":"evt_o2","type":"checkout.session.completed","data":{"object":{"id":"cs","payment_status":"unpaid","amount_total":4250,"currency":"usd","client_reference_id":"` + reg + `"}}}`,
	} {
		if a := f.card(t, []byte(b)); a.status != 200 || !a.env.Data.Ignored {
			t.Errorf("%s: %d %s", b, a.status, a.raw)
		}
	}
	b := []byte(`{"id":"w_o","status":"FAILED"}`)
	if a := f.post(t, "/v1/webhooks/wallet", payments.SignatureHeader, payments.Sign(walletSecret, f.now, b), b); a.status != 200 || !a.env.Data.Ignored {
		t.Errorf("wallet FAILED: %d %s", a.status, a.raw)
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("ignored events booked %d payments", n)
	}
}

// Postgres or Redis trouble while booking is a 503 the processor retries,
// and the retry is booked: the failed attempt is not remembered as done.
func TestFailedBookingIsRetriedByTheProcessor(t *testing.T) {
	f := newFixture(t)
	body := cardBody("evt_retry", reg, 4250)
	f.booker.fail = errors.New("redis: connection refused")
	if a := f.card(t, body); a.status != 503 || a.env.Code != "SERVICE_UNAVAILABLE" || strings.Contains(a.raw, "redis") {
		t.Fatalf("failed booking: %d %s", a.status, a.raw)
	}
	f.booker.fail = nil
	if a := f.card(t, body); a.status != 200 || a.env.Data.Duplicate || a.env.Data.Status != registrations.StatusConfirmed {
		t.Fatalf("retry: %d %s", a.status, a.raw)
	}
	// A client error of the booker (an apierr) leaves as itself.
	f.booker.fail = apierr.Of("NOT_FOUND", "no such registration")
	if a := f.card(t, cardBody("evt_unknown", keys.OrderID("ev_jazz", "zz"), 4250)); a.status != 404 || a.env.Code != "NOT_FOUND" {
		t.Fatalf("booker apierr: %d %s", a.status, a.raw)
	}
}

// A booking that ran out of time (Redis too slow) is answered 503 and
// forgotten all the same, although its context has ended: the processor's
// retry books the payment instead of being refused WEBHOOK_IN_PROGRESS
// until the pending mark expires.
func TestTimedOutBookingIsRetriedByTheProcessor(t *testing.T) {
	f := newFixture(t)
	f.api.Timeout = 200 * time.Millisecond
	body := cardBody("evt_slow", reg, 4250)
	f.booker.hang = true
	if a := f.card(t, body); a.status != 503 || a.env.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("timed-out booking: %d %s", a.status, a.raw)
	}
	f.booker.hang = false
	if a := f.card(t, body); a.status != 200 || a.env.Data.Status != registrations.StatusConfirmed {
		t.Fatalf("retry after a timed-out booking: %d %s", a.status, a.raw)
	}
}

// A payment that cannot be booked (here: the wrong amount) is recorded
// for the host's refund; a refund that cannot be recorded is a 503 and the
// retry records it.
func TestRefundRequiredIsRecordedForTheHost(t *testing.T) {
	f := newFixture(t)
	body := cardBody("evt_short", reg, 4000)
	f.refunds.fail = errors.New("postgres: connection refused")
	if a := f.card(t, body); a.status != 503 {
		t.Fatalf("refund not recorded: %d %s", a.status, a.raw)
	}
	f.refunds.fail = nil
	a := f.card(t, body)
	if a.status != 200 || a.env.Data.Status != registrations.StatusRefundRequired {
		t.Fatalf("refund: %d %s", a.status, a.raw)
	}
	if len(f.refunds.got) != 1 || f.refunds.got[0].ID != reg || f.refunds.got[0].Reason != "amount_mismatch" || f.refunds.got[0].Paid != 4000 {
		t.Fatalf("refunds recorded: %+v", f.refunds.got)
	}
}

// A second, different payment of a registration already confirmed leaves
// it confirmed, and its money is recorded for the host to refund: never
// kept silently.
func TestSecondPaymentOfAConfirmedRegistrationIsRecordedForRefund(t *testing.T) {
	f := newFixture(t)
	if a := f.card(t, cardBody("evt_first", reg, 4250)); a.status != 200 || a.env.Data.Status != registrations.StatusConfirmed {
		t.Fatalf("first payment: %d %s", a.status, a.raw)
	}
	second := []byte(strings.Replace(string(cardBody("evt_second", reg, 4250)), `"cs_x_`, `"cs_y_`, 1))
	a := f.card(t, second)
	if a.status != 200 || a.env.Data.Status != registrations.StatusConfirmed || a.env.Data.Duplicate {
		t.Fatalf("second payment: %d %s", a.status, a.raw)
	}
	if len(f.refunds.got) != 1 || f.refunds.got[0].RefundReason != "already_paid" || f.refunds.payments[0].PaymentID != "cs_y_"+reg {
		t.Fatalf("refunds recorded: %+v %+v", f.refunds.got, f.refunds.payments)
	}
}

func stripeEvent(id, typ, status string, cents int64, regID string) []byte {
	return []byte(`{"id":"` + id + `","object":"event","api_version":"2025-01-27.acacia","type":"` + typ +
		`","data":{"object":{"id":"cs_test_1","object":"checkout.session","payment_status":"` + status +
		`","status":"complete","amount_total":` + strconv.FormatInt(cents, 10) + `,"currency":"usd","client_reference_id":"` + regID +
		`","metadata":{"registration_id":"` + regID + `"}}}}`)
}

func TestStripeWebhookSignedByStripeGoIsBooked(t *testing.T) {
	f := newFixture(t)
	body := stripeEvent("evt_s1", "checkout.session.completed", "paid", 4250, reg)
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: f.now})
	a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", sp.Header, body)
	if a.status != 200 || a.env.Data.Status != registrations.StatusConfirmed {
		t.Fatalf("stripe webhook: %d %s", a.status, a.raw)
	}
	want := registrations.Payment{RegistrationID: reg, Processor: "stripe", PaymentID: "cs_test_1", Amount: 4250, Currency: "usd"}
	if got := f.booker.payments(); len(got) != 1 || got[0] != want {
		t.Fatalf("booked %+v", got)
	}
	// Replayed as it was: refused; delivered again, signed anew: booked once.
	if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", sp.Header, body); a.status != 409 || a.env.Code != "WEBHOOK_REPLAYED" {
		t.Fatalf("stripe replay: %d %s", a.status, a.raw)
	}
	again := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: f.now.Add(time.Second)})
	if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", again.Header, body); a.status != 200 || !a.env.Data.Duplicate {
		t.Fatalf("stripe redelivery: %d %s", a.status, a.raw)
	}

	wrong := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_other", Timestamp: f.now})
	stale := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: time.Now().Add(-10 * time.Minute)})
	future := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: f.now.Add(10 * time.Minute)})
	forgedFuture := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_forger", Timestamp: f.now.Add(10 * time.Minute)})
	forgedStale := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_forger", Timestamp: f.now.Add(-10 * time.Minute)})
	for _, c := range []struct{ name, header, code string }{
		{"wrong secret", wrong.Header, "INVALID_SIGNATURE"},
		{"unsigned", "", "INVALID_SIGNATURE"},
		{"stale", stale.Header, "WEBHOOK_STALE"},
		{"future", future.Header, "WEBHOOK_STALE"},
		// A forger learns nothing of the timestamp: wrong secret is
		// INVALID_SIGNATURE whether it is dated now, later or earlier.
		{"forged future", forgedFuture.Header, "INVALID_SIGNATURE"},
		{"forged stale", forgedStale.Header, "INVALID_SIGNATURE"},
	} {
		if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", c.header, body); a.status != 401 || a.env.Code != c.code {
			t.Errorf("%s: %d %s", c.name, a.status, a.raw)
		}
	}
	// Other event types, and a completed session not paid yet, are
	// acknowledged and ignored.
	for _, b := range [][]byte{
		stripeEvent("evt_s2", "payment_intent.created", "paid", 4250, reg),
		stripeEvent("evt_s3", "checkout.session.completed", "unpaid", 4250, reg),
	} {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: b, Secret: stripeSecret, Timestamp: f.now})
		if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", sp.Header, b); a.status != 200 || !a.env.Data.Ignored {
			t.Errorf("ignored event: %d %s", a.status, a.raw)
		}
	}
	if n := len(f.booker.payments()); n != 1 {
		t.Fatalf("booked %d payments, want 1", n)
	}
}

func signedStripe(f *fixture, body []byte) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: stripeSecret, Timestamp: f.now}).Header
}

// A checkout session another integration on the same Stripe account
// created (no metadata.registration_id) is acknowledged, or Stripe would
// retry it for days and disable the endpoint; one with ticketd's marker
// that is malformed is still refused.
func TestStripeSessionNotCreatedByTicketdIsAcknowledged(t *testing.T) {
	f := newFixture(t)
	foreign := []byte(`{"id":"evt_f1","object":"event","type":"checkout.session.completed","data":{"object":{"id":"cs_other","object":"checkout.session",` +
		`"payment_status":"paid","amount_total":990,"currency":"eur","client_reference_id":"cart-77","metadata":{"shop":"other"}}}}`)
	a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", signedStripe(f, foreign), foreign)
	if a.status != 200 || !a.env.Data.Ignored {
		t.Fatalf("foreign session: %d %s", a.status, a.raw)
	}
	bad := []byte(`{"id":"evt_f2","object":"event","type":"checkout.session.completed","data":{"object":{"id":"cs_ours","object":"checkout.session",` +
		`"payment_status":"paid","amount_total":4250,"currency":"usd","client_reference_id":"cart-77","metadata":{"registration_id":"cart-77"}}}}`)
	if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", signedStripe(f, bad), bad); a.status != 400 {
		t.Fatalf("malformed session of ticketd: %d %s", a.status, a.raw)
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("booked %d payments, want none", n)
	}
}

// While Redis is not current the Gate's 503 is the answer and nothing is
// booked; the processor's retry books it once Redis is back.
func TestGateRefusesWebhooksWhileRedisIsNotCurrent(t *testing.T) {
	f := newFixture(t)
	gate := apierr.Of("NOT_READY", "redis is being rebuilt")
	f.api.Gate = func() *apierr.Error { return gate }
	body := cardBody("evt_gated", reg, 4250)
	if a := f.card(t, body); a.status != 503 || a.env.Code != "NOT_READY" {
		t.Fatalf("gated: %d %s", a.status, a.raw)
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("booked %d payments behind the gate", n)
	}
	gate = nil
	if a := f.card(t, body); a.status != 200 || a.env.Data.Status != registrations.StatusConfirmed {
		t.Fatalf("after the gate opened: %d %s", a.status, a.raw)
	}
}

// Without a RefundRecorder no webhook is booked at all (a payment needing
// a refund would otherwise be booked and its refund lost).
func TestWithoutRefundRecorderEveryWebhookIs503(t *testing.T) {
	f := newFixture(t)
	f.api.Refunds = nil
	for _, body := range [][]byte{cardBody("evt_ok", reg, 4250), cardBody("evt_short", reg, 4000)} {
		if a := f.card(t, body); a.status != 503 {
			t.Fatalf("without refunds: %d %s", a.status, a.raw)
		}
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("booked %d payments without a RefundRecorder", n)
	}
}

// A Stripe event of the other mode than the deployment's payments is
// refused (409 PAYMENT_MISMATCH, reason livemode) and books nothing: a
// test-mode event in a live deployment paid no money (Stripe's test cards),
// a live one in a test deployment took real money while its pages say TEST
// MODE. The same event of the deployment's mode is booked.
func TestStripeEventOfTheOtherModeIsRefused(t *testing.T) {
	f := newFixture(t)
	live := func(b []byte) []byte {
		return []byte(strings.Replace(string(b), `"object":"event",`, `"object":"event","livemode":true,`, 1))
	}
	for _, c := range []struct {
		name       string
		deployment bool // StripeLive
		body       []byte
	}{
		{"a test event in a live deployment", true, stripeEvent("evt_m1", "checkout.session.completed", "paid", 4250, reg)},
		{"a live event in a test deployment", false, live(stripeEvent("evt_m2", "checkout.session.completed", "paid", 4250, reg))},
	} {
		f.api.StripeLive = c.deployment
		a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", signedStripe(f, c.body), c.body)
		if a.status != 409 || a.env.Code != "PAYMENT_MISMATCH" || !strings.Contains(a.raw, `"reason":"livemode"`) {
			t.Fatalf("%s: %d %s, want 409 PAYMENT_MISMATCH (livemode)", c.name, a.status, a.raw)
		}
	}
	if n := len(f.booker.payments()); n != 0 {
		t.Fatalf("booked %d payments of the other mode", n)
	}
	// Events that are not ticketd's paid sessions are acknowledged in
	// either mode (a Connect platform's live endpoint also gets its
	// accounts' test events): refused, Stripe would retry them for days.
	f.api.StripeLive = true
	foreign := []byte(`{"id":"evt_m4","object":"event","type":"checkout.session.completed","data":{"object":{"id":"cs_other",` +
		`"object":"checkout.session","payment_status":"paid","amount_total":100,"currency":"usd"}}}`)
	for _, b := range [][]byte{foreign, stripeEvent("evt_m5", "payment_intent.created", "paid", 4250, reg)} {
		if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", signedStripe(f, b), b); a.status != 200 || !a.env.Data.Ignored {
			t.Fatalf("a test-mode event not ticketd's paid session, in a live deployment: %d %s, want 200 ignored", a.status, a.raw)
		}
	}
	body := live(stripeEvent("evt_m3", "checkout.session.completed", "paid", 4250, reg))
	if a := f.post(t, "/v1/webhooks/stripe", "Stripe-Signature", signedStripe(f, body), body); a.status != 200 {
		t.Fatalf("a live event in a live deployment: %d %s", a.status, a.raw)
	}
	if n := len(f.booker.payments()); n != 1 {
		t.Fatalf("booked %d payments, want the live one", n)
	}
}
