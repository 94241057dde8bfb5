package payments

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
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
	// hook, when set, sees each delivery's body before it is answered.
	hook func(body []byte)
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
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(body)
	}
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
		Items:      Items{{Name: "General admission", Quantity: 2, UnitPrice: 2125, Amount: 4250}},
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
	if err != nil || !found || s.Status != StatusOpen || s.Amount != 4250 || s.EventName != "Jazz night" || len(s.Lines) != 1 ||
		len(s.Items) != 1 || s.Items[0].Name != "General admission" || s.Items.Sum() != s.Amount || s.RegistrationID != reg {
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
	// A paid session says so whatever card comes: the declining one, or
	// not a card number at all.
	for _, c := range []string{DecliningCard, "1234"} {
		if s, found, err := card.Pay(f.ctx, sess.ID, c); err != nil || !found || s.Status != StatusPaid || s.Amount != 4250 {
			t.Fatalf("Pay of the paid session with %q = %+v, %v, %v", c, s, found, err)
		}
	}
	// Accepted: nothing owed any more, now or later.
	if n := f.dueCount(t); n != 0 {
		t.Fatalf("due set holds %d after ticketd accepted the webhook", n)
	}
	if len(f.recv.deliveries()) != 1 {
		t.Fatalf("a delivered webhook was sent again (%d deliveries)", len(f.recv.deliveries()))
	}
}

// dueCount is the size of the card processor's due set of ev_jazz's partition.
func (f hostedFixture) dueCount(t *testing.T) int64 {
	t.Helper()
	rc := f.cfg.Redis
	n, err := rc.Do(f.ctx, rc.B().Zcard().Key(f.cfg.Space.PayDue(keys.Partition("ev_jazz"), Card)).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
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
	if n := f.dueCount(t); n != 0 {
		t.Fatalf("due set holds %d after acceptance", n)
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

// sessionOf is the session a card webhook body reports.
func sessionOf(t *testing.T, body []byte) string {
	t.Helper()
	var w CardWebhook
	if err := json.Unmarshal(body, &w); err != nil {
		t.Error(err)
	}
	return w.Data.Object.ID
}

// A batch may take longer than a delivery's lease: a node stuck on one
// delivery must not send the next one of its batch once another node has
// taken and delivered it, so each delivery's lease is taken again right
// before it is sent.
func TestSlowBatchDoesNotSendATakenDeliveryAgain(t *testing.T) {
	f := newHostedFixture(t, 500, 500) // Pay's own deliveries are refused
	node1, node2 := NewCard(f.cfg), NewCard(f.cfg)
	node1.lease = 300 * time.Millisecond
	a, _ := node1.CreateSession(f.ctx, checkout(keys.OrderID("ev_jazz", "slowa")))
	b, _ := node1.CreateSession(f.ctx, checkout(keys.OrderID("ev_jazz", "slowb")))
	for _, s := range []Session{a, b} {
		if _, _, err := node1.Pay(f.ctx, s.ID, "4242424242424242"); err != nil {
			t.Fatal(err)
		}
	}
	rc := f.cfg.Redis
	due := f.cfg.Space.PayDue(keys.Partition("ev_jazz"), Card)
	// Both due now, a first.
	if err := rc.Do(f.ctx, rc.B().Zadd().Key(due).ScoreMember().ScoreMember(1, a.ID).ScoreMember(2, b.ID).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.recv.mu.Lock()
	f.recv.hook = func(body []byte) {
		if sessionOf(t, body) == a.ID {
			once.Do(func() { close(arrived); <-release })
		}
	}
	f.recv.mu.Unlock()
	done := make(chan struct{})
	go func() { defer close(done); node1.DeliverDue(f.ctx) }()
	<-arrived
	// node1 is stuck sending a: hold a's lease for it, and wait until b's
	// lease from node1's claim has run out.
	if err := rc.Do(f.ctx, rc.B().Zadd().Key(due).ScoreMember().ScoreMember(float64(time.Now().Add(time.Hour).UnixMilli()), a.ID).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		score, err := rc.Do(f.ctx, rc.B().Zscore().Key(due).Member(b.ID).Build()).AsFloat64()
		if err != nil {
			t.Fatal(err)
		}
		tm, err := rc.Do(f.ctx, rc.B().Time().Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		sec, _ := strconv.ParseInt(tm[0], 10, 64)
		usec, _ := strconv.ParseInt(tm[1], 10, 64)
		if sec*1000+usec/1000 > int64(score) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b's lease did not run out")
		}
		time.Sleep(20 * time.Millisecond)
	}
	node2.DeliverDue(f.ctx) // takes b and delivers it
	close(release)
	<-done
	nb := 0
	for _, d := range f.recv.deliveries() {
		if sessionOf(t, d.body) == b.ID {
			nb++
		}
	}
	if nb != 2 { // Pay's refused one, and node2's
		t.Fatalf("b was sent %d times, want 2: node1 sent it again after node2 delivered it", nb)
	}
	if n := f.dueCount(t); n != 0 {
		t.Fatalf("due set holds %d", n)
	}
}

// A delivery given up (its session's retention passed before ticketd took
// the webhook) is logged as an error naming the session and registration,
// since the payment may never have been booked.
func TestAbandonedDeliveryIsLoggedAsAnError(t *testing.T) {
	f := newHostedFixture(t, 500)
	var buf bytes.Buffer
	f.cfg.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	card := NewCard(f.cfg)
	reg := keys.OrderID("ev_jazz", "gone1")
	sess, _ := card.CreateSession(f.ctx, checkout(reg))
	if _, _, err := card.Pay(f.ctx, sess.ID, "4242424242424242"); err != nil {
		t.Fatal(err)
	}
	rc := f.cfg.Redis
	key, _ := f.cfg.Space.PaySession(sess.ID)
	due := f.cfg.Space.PayDue(keys.Partition("ev_jazz"), Card)
	if err := rc.Do(f.ctx, rc.B().Del().Key(key).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(f.ctx, rc.B().Zadd().Key(due).ScoreMember().ScoreMember(1, sess.ID).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	card.DeliverDue(f.ctx)
	if n := f.dueCount(t); n != 0 {
		t.Fatalf("due set holds %d", n)
	}
	var found bool
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["level"] == "ERROR" && rec["session"] == sess.ID && rec["registration"] == reg {
			found = true
		}
		if strings.Contains(line, "whsec_test") {
			t.Fatalf("a secret in the log: %s", line)
		}
	}
	if !found {
		t.Fatalf("no error logged for the abandoned delivery:\n%s", buf.String())
	}
}

// The built-in processors keep their sessions in ticketd's Redis: when it
// does not answer in time, opening or closing a session fails with the
// 503 SERVICE_UNAVAILABLE of a Redis outage (the storefront passes it on),
// not as a processor's failure (502 PAYMENT_PROCESSOR_ERROR).
func TestSessionStoreOutageIsServiceUnavailable(t *testing.T) {
	f := newHostedFixture(t)
	card := NewCard(f.cfg)
	ctx, cancel := context.WithCancel(f.ctx)
	cancel() // Redis did not answer within the request's time
	_, err := card.CreateSession(ctx, checkout(keys.OrderID("ev_jazz", "r1")))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("open session without Redis: %v, want SERVICE_UNAVAILABLE", err)
	}
	_, err = card.Expire(ctx, "cs_0123456789abcdef01234567_"+keys.OrderID("ev_jazz", "r1"))
	if !errors.As(err, &ae) || ae.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("close session without Redis: %v, want SERVICE_UNAVAILABLE", err)
	}
}

// scriptCounter is a Redis client that counts the script calls sent
// through it.
type scriptCounter struct {
	rueidis.Client
	scripts atomic.Int64
}

func (c *scriptCounter) count(cmd rueidis.Completed) {
	if cmd.Commands()[0] == "FCALL" {
		c.scripts.Add(1)
	}
}

func (c *scriptCounter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *scriptCounter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		c.count(cmd)
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// A delivery loop that finds nothing due runs no script: each tick reads
// every partition's due set, and claims (a script per partition) only
// where a delivery is due; one that is due is delivered.
func TestDeliveryLoopClaimsOnlyWhereADeliveryIsDue(t *testing.T) {
	f := newHostedFixture(t, 500) // the first delivery is refused: it is owed
	rc := &scriptCounter{Client: f.cfg.Redis}
	f.cfg.Redis = rc
	card := NewCard(f.cfg)
	card.DeliverDue(f.ctx)
	if n := rc.scripts.Load(); n != 0 {
		t.Fatalf("a tick with nothing due ran %d scripts, want none", n)
	}
	sess, err := card.CreateSession(f.ctx, checkout(keys.OrderID("ev_jazz", "due1")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := card.Pay(f.ctx, sess.ID, "4242424242424242"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(f.recv.deliveries()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the owed webhook was not delivered again: %d deliveries", len(f.recv.deliveries()))
		}
		rc.scripts.Store(0)
		card.DeliverDue(f.ctx)
		time.Sleep(100 * time.Millisecond)
	}
	if n := rc.scripts.Load(); n == 0 || n > 4 {
		t.Fatalf("the tick that delivered ran %d scripts, want its partition's claim and lease, not every partition's", n)
	}
}
