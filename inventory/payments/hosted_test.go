package payments

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// receiver is ticketd's webhook endpoint as the test processor sees it: it
// verifies each delivery and answers with the next status of a script.
type receiver struct {
	mu       sync.Mutex
	secret   string
	statuses []int // answers in turn; 200 once used up
	got      []delivery
}

type delivery struct {
	path, header string
	body         []byte
	verifyErr    error
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	h := req.Header.Get(SignatureHeader)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, delivery{path: req.URL.Path, header: h, body: body, verifyErr: Verify(r.secret, h, body, time.Now())})
	status := 200
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	w.WriteHeader(status)
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

type hostedFixture struct {
	cfg  HostedConfig
	recv *receiver
	ctx  context.Context
}

func newHostedFixture(t *testing.T, statuses ...int) hostedFixture {
	t.Helper()
	rc, space := redistest.New(t)
	recv := &receiver{secret: "whsec_test", statuses: statuses}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	return hostedFixture{
		cfg:  HostedConfig{Redis: rc, Space: space, AppURL: "https://tickets.example.test", WebhookBase: srv.URL, Secret: "whsec_test"},
		recv: recv,
		ctx:  context.Background(),
	}
}

func checkout(regID string) CheckoutRequest {
	return CheckoutRequest{
		RegistrationID: regID, EventID: "ev_jazz", EventName: "Jazz night",
		Amount: 4250, Currency: "USD",
		Lines:      []orders.Line{{Kind: orders.LineTicket, RefID: "ga", Quantity: 2, UnitPrice: 2125, Amount: 4250}},
		SuccessURL: "https://host.example/thanks?session={CHECKOUT_SESSION_ID}",
		CancelURL:  "https://host.example/cart",
		ExpiresAt:  time.Now().Add(15 * time.Minute),
	}
}

func TestCardPayDeliversASignedWebhook(t *testing.T) {
	f := newHostedFixture(t)
	card := NewCard(f.cfg)
	reg := keys.OrderID("ev_jazz", "abc123")
	sess, err := card.CreateSession(f.ctx, checkout(reg))
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://tickets.example.test/pay/card/" + sess.ID; sess.URL != want {
		t.Fatalf("URL = %s, want %s", sess.URL, want)
	}
	s, found, err := card.Get(f.ctx, sess.ID)
	if err != nil || !found || s.Status != StatusOpen || s.Amount != 4250 || s.EventName != "Jazz night" || len(s.Lines) != 1 || s.RegistrationID != reg {
		t.Fatalf("Get = %+v, %v, %v", s, found, err)
	}

	s, _, err = card.Pay(f.ctx, sess.ID, "4242 4242 4242 4242")
	if err != nil || s.Status != StatusPaid {
		t.Fatalf("Pay = %+v, %v", s, err)
	}
	if want := "https://host.example/thanks?session=" + sess.ID; s.ReturnURL() != want {
		t.Fatalf("ReturnURL = %s, want %s", s.ReturnURL(), want)
	}
	got := f.recv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	d := got[0]
	if d.path != "/v1/webhooks/card" || d.verifyErr != nil {
		t.Fatalf("delivery to %s, verify: %v", d.path, d.verifyErr)
	}
	var w CardWebhook
	if err := json.Unmarshal(d.body, &w); err != nil {
		t.Fatal(err)
	}
	o := w.Data.Object
	if !strings.HasPrefix(w.ID, "evt_") || w.Type != "checkout.session.completed" || o.ID != sess.ID || o.PaymentStatus != "paid" ||
		o.AmountTotal != 4250 || o.Currency != "usd" || o.ClientReferenceID != reg {
		t.Fatalf("webhook body %s", d.body)
	}

	// Paying again (a double click) changes nothing and sends nothing.
	if s, _, err := card.Pay(f.ctx, sess.ID, "4242424242424242"); err != nil || s.Status != StatusPaid {
		t.Fatalf("second Pay = %+v, %v", s, err)
	}
	if n := card.DeliverDue(f.ctx); n != 0 || len(f.recv.deliveries()) != 1 {
		t.Fatalf("a delivered webhook was sent again (%d due, %d deliveries)", n, len(f.recv.deliveries()))
	}
}

// A failed delivery is retried, by another process too (the owed delivery
// lives in Redis), with the same event id and body and a fresh signature.
func TestFailedDeliveryIsRetriedUntilAccepted(t *testing.T) {
	f := newHostedFixture(t, 500, 503)
	reg := keys.OrderID("ev_jazz", "retry1")
	first := NewCard(f.cfg)
	sess, err := first.CreateSession(f.ctx, checkout(reg))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := first.Pay(f.ctx, sess.ID, "4242424242424242"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.recv.deliveries()); n != 1 {
		t.Fatalf("%d deliveries after Pay, want 1 (refused)", n)
	}

	// A restarted node: a new processor on the same Redis.
	restarted := NewCard(f.cfg)
	deadline := time.Now().Add(30 * time.Second)
	for len(f.recv.deliveries()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("owed webhook not retried: %d deliveries", len(f.recv.deliveries()))
		}
		restarted.DeliverDue(f.ctx)
		time.Sleep(100 * time.Millisecond)
	}
	got := f.recv.deliveries()
	if len(got) != 3 {
		t.Fatalf("%d deliveries, want 3 (two refused, one accepted)", len(got))
	}
	for i, d := range got {
		if d.verifyErr != nil {
			t.Fatalf("delivery %d: %v", i, d.verifyErr)
		}
		if string(d.body) != string(got[0].body) {
			t.Fatalf("delivery %d body %s differs from the first %s", i, d.body, got[0].body)
		}
	}
	// Accepted: no more deliveries owed.
	rc := f.cfg.Redis
	n, err := rc.Do(f.ctx, rc.B().Zcard().Key(f.cfg.Space.PayDue(keys.Partition("ev_jazz"), Card)).Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("due set holds %d after acceptance (%v)", n, err)
	}
}

func TestDecliningCardPaysNothing(t *testing.T) {
	f := newHostedFixture(t)
	card := NewCard(f.cfg)
	sess, err := card.CreateSession(f.ctx, checkout(keys.OrderID("ev_jazz", "decl")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := card.Pay(f.ctx, sess.ID, "4000 0000 0000 0002"); !errors.Is(err, ErrCardDeclined) {
		t.Fatalf("declining card: %v", err)
	}
	if _, _, err := card.Pay(f.ctx, sess.ID, "1234"); !errors.Is(err, ErrCardInvalid) {
		t.Fatalf("invalid card: %v", err)
	}
	s, _, _ := card.Get(f.ctx, sess.ID)
	if s.Status != StatusOpen || len(f.recv.deliveries()) != 0 {
		t.Fatalf("after declines: status %s, %d webhooks", s.Status, len(f.recv.deliveries()))
	}
	if paid, err := card.Expire(f.ctx, sess.ID); err != nil || paid {
		t.Fatalf("Expire = %v, %v", paid, err)
	}
}

func TestExpireOpenAndPaidSessions(t *testing.T) {
	f := newHostedFixture(t)
	card := NewCard(f.cfg)
	open, _ := card.CreateSession(f.ctx, checkout(keys.OrderID("ev_jazz", "open1")))
	paid, _ := card.CreateSession(f.ctx, checkout(keys.OrderID("ev_jazz", "paid1")))
	if _, _, err := card.Pay(f.ctx, paid.ID, "4242424242424242"); err != nil {
		t.Fatal(err)
	}

	if p, err := card.Expire(f.ctx, open.ID); err != nil || p {
		t.Fatalf("Expire(open) = %v, %v; want false", p, err)
	}
	s, _, err := card.Pay(f.ctx, open.ID, "4242424242424242")
	if !errors.Is(err, ErrNotOpen) || s.Status != StatusExpired {
		t.Fatalf("Pay after expiry = %s, %v", s.Status, err)
	}
	if p, err := card.Expire(f.ctx, paid.ID); err != nil || !p {
		t.Fatalf("Expire(paid) = %v, %v; want true", p, err)
	}
	if s, _, _ := card.Get(f.ctx, paid.ID); s.Status != StatusPaid {
		t.Fatalf("paid session became %s", s.Status)
	}
	// Unknown sessions were never paid.
	for _, id := range []string{"cs_nope", "cs_0123_" + keys.OrderID("ev_jazz", "never"), "../x"} {
		if p, err := card.Expire(f.ctx, id); err != nil || p {
			t.Fatalf("Expire(%q) = %v, %v", id, p, err)
		}
		if _, found, err := card.Get(f.ctx, id); err != nil || found {
			t.Fatalf("Get(%q) found=%v err=%v", id, found, err)
		}
	}
}

// A session whose checkout window has passed cannot be paid, even before
// the sweeper expired it.
func TestSessionPastItsWindowCannotBePaid(t *testing.T) {
	f := newHostedFixture(t)
	card := NewCard(f.cfg)
	req := checkout(keys.OrderID("ev_jazz", "late"))
	req.ExpiresAt = time.Now().Add(-time.Second)
	sess, err := card.CreateSession(f.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err := card.Pay(f.ctx, sess.ID, "4242424242424242"); !errors.Is(err, ErrNotOpen) || s.Status != StatusExpired {
		t.Fatalf("Pay = %s, %v", s.Status, err)
	}
}

func TestWalletPayDeliversItsCallback(t *testing.T) {
	f := newHostedFixture(t)
	wallet := NewWallet(f.cfg)
	reg := keys.OrderID("ev_jazz", "wal1")
	req := checkout(reg)
	req.Amount = 4205
	sess, err := wallet.CreateSession(f.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sess.URL, "https://tickets.example.test/pay/wallet/") {
		t.Fatalf("URL %s", sess.URL)
	}
	// The card processor does not know the wallet's sessions.
	if _, found, _ := NewCard(f.cfg).Get(f.ctx, sess.ID); found {
		t.Fatal("card processor found a wallet session")
	}
	if _, _, err := wallet.Pay(f.ctx, sess.ID, ""); err != nil {
		t.Fatal(err)
	}
	got := f.recv.deliveries()
	if len(got) != 1 || got[0].path != "/v1/webhooks/wallet" || got[0].verifyErr != nil {
		t.Fatalf("deliveries %+v", got)
	}
	var raw map[string]any
	dec := json.NewDecoder(strings.NewReader(string(got[0].body)))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if raw["id"] != sess.ID || raw["status"] != "COMPLETED" || raw["amount"].(json.Number).String() != "42.05" || raw["currency"] != "USD" || raw["reference"] != reg {
		t.Fatalf("wallet body %s", got[0].body)
	}
	var w WalletWebhook
	if err := json.Unmarshal(got[0].body, &w); err != nil || w.Amount != money.Cents(4205) {
		t.Fatalf("amount %v, %v", w.Amount, err)
	}
}
