package mailer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	smtp "github.com/emersion/go-smtp"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/inventory/tickets/qrtest"
	"github.com/ticketd/ticketd/sync/mailer"
	"github.com/ticketd/ticketd/sync/pgtest"
	"github.com/ticketd/ticketd/sync/refunddb"
	"github.com/ticketd/ticketd/sync/worker"
)

const appURL = "https://tickets.example.test"

type bundle struct {
	rc    rueidis.Client
	space keys.Space
	pool  *pgxpool.Pool
	keys  *tickets.Keys
	w     *worker.Worker
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rc, space := redistest.New(t)
	b := &bundle{rc: rc, space: space, pool: pgtest.New(t), keys: tickets.NewKeys("mailer test secret")}
	b.w = &worker.Worker{Redis: rc, Space: space, Pool: b.pool, Consumer: "w", ClaimIdle: time.Hour, Logger: quiet()}
	ctx := context.Background()
	if err := b.w.EnsureGroups(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO tenants (id, doc) VALUES ('t_acme', '{"name": "Acme Live", "notifyEmail": "host@acme.test"}');
		INSERT INTO events (id, tenant_id, doc) VALUES ('ev_fest', 't_acme', '{"name": "Summer Fest", "startsAt": "2027-07-01T18:00:00Z"}')`); err != nil {
		t.Fatal(err)
	}
	return b
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (b *bundle) mailer(s mailer.Sender, name string) *mailer.Mailer {
	return &mailer.Mailer{Pool: b.pool, Sender: s, Keys: b.keys, AppURL: appURL, From: "Acme tickets <tickets@example.test>",
		Name: name, Backoff: time.Hour, MaxBackoff: 4 * time.Hour, Logger: quiet()}
}

// pay queues a paid order of source with n tickets on its paid stream, as
// the confirm script does, and has the worker write it to Postgres.
func (b *bundle) pay(t *testing.T, rec orders.Record) {
	t.Helper()
	js, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cmd := b.rc.B().Xadd().Key(b.space.Paid(keys.Partition(rec.EventID))).Id("*").FieldValue().
		FieldValue("order", rec.OrderID).FieldValue("rec", string(js)).FieldValue("ref", "").FieldValue("paidAt", "1700000000000").Build()
	if err := b.rc.Do(ctx, cmd).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.w.DrainOnce(ctx); err != nil {
		t.Fatal(err)
	}
}

func order(source string, n int) orders.Record {
	id := orders.NewOrderID("ev_fest")
	rec := orders.Record{OrderID: id, EventID: "ev_fest", TenantID: "t_acme", Source: source,
		BuyerName: "Ada Lovelace", BuyerEmail: "ada@example.com", Currency: "USD",
		Subtotal: 2500 * 2, Total: 2500 * 2,
		Lines:       []orders.Line{{Kind: orders.LineTicket, RefID: "tk_ga", Quantity: int64(n), UnitPrice: 2500, Amount: 2500 * 2}},
		CreatedAtMs: 1_700_000_000_000}
	if source == "channel" {
		rec.ChannelID = "ch_1"
	}
	for i := range n {
		rec.Tickets = append(rec.Tickets, orders.Ticket{TicketID: id + "-" + strconv.Itoa(i+1), Label: "General Admission"})
	}
	return rec
}

func runOnce(t *testing.T, m *mailer.Mailer) int {
	t.Helper()
	n, err := m.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return n
}

// part is one leaf of a parsed MIME message.
type part struct {
	ctype, cid string
	body       []byte
}

// parse reads a message into its headers and leaf parts, decoding
// transfer encodings as a mail client would.
func parse(t *testing.T, data []byte) (*mail.Message, []part) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a message: %v", err)
	}
	var parts []part
	var walk func(ctype string, r io.Reader)
	walk = func(ctype string, r io.Reader) {
		mt, params, err := mime.ParseMediaType(ctype)
		if err != nil {
			t.Fatalf("content type %q: %v", ctype, err)
		}
		if !strings.HasPrefix(mt, "multipart/") {
			b, _ := io.ReadAll(r)
			parts = append(parts, part{ctype: mt, body: b})
			return
		}
		mr := multipart.NewReader(r, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var body io.Reader = p
			switch p.Header.Get("Content-Transfer-Encoding") {
			case "quoted-printable":
				body = quotedPrintable(p)
			case "base64":
				body = base64Reader(p)
			}
			n := len(parts)
			walk(p.Header.Get("Content-Type"), body)
			if len(parts) > n {
				parts[len(parts)-1].cid = strings.Trim(p.Header.Get("Content-ID"), "<>")
			}
		}
	}
	walk(msg.Header.Get("Content-Type"), msg.Body)
	return msg, parts
}

func subject(t *testing.T, m *mail.Message) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func byRecipient(got []received) map[string][]received {
	out := map[string][]received{}
	for _, r := range got {
		for _, to := range r.to {
			out[to] = append(out[to], r)
		}
	}
	return out
}

// The buyer's e-mail of a paid storefront order arrives once however often
// the order is written and the row offered, even with two mailers at once;
// each QR image decodes to a ticket that verifies with the event's public
// key; the link opens the ticket page. The host is told once.
func TestBuyerAndHostMailArriveOnceWithVerifiableTickets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, smtpSender := startSender(t, "", "")
	rec := order("storefront", 2)
	b.pay(t, rec)
	b.pay(t, rec) // the paid entry written again (a redelivered webhook, a retried round)
	// The row offered again: its writer's insert does nothing.
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox (order_id, kind, recipient, payload)
		VALUES ($1, 'buyer_tickets', 'ada@example.com', '{}') ON CONFLICT (order_id, kind, ref) DO NOTHING`, rec.OrderID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, err := b.mailer(smtpSender, "m"+strconv.Itoa(i)).RunOnce(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	runOnce(t, b.mailer(smtpSender, "late")) // nothing is left to send

	got := byRecipient(srv.messages())
	if len(srv.messages()) != 2 || len(got["ada@example.com"]) != 1 || len(got["host@acme.test"]) != 1 {
		t.Fatalf("SMTP received %d messages: %d to the buyer, %d to the host; want one each",
			len(srv.messages()), len(got["ada@example.com"]), len(got["host@acme.test"]))
	}

	msg, parts := parse(t, got["ada@example.com"][0].data)
	if s := subject(t, msg); !strings.Contains(s, "Summer Fest") {
		t.Errorf("buyer subject %q does not name the event", s)
	}
	var text, html string
	pngs := map[string][]byte{}
	for _, p := range parts {
		switch p.ctype {
		case "text/plain":
			text = string(p.body)
		case "text/html":
			html = string(p.body)
		case "image/png":
			pngs[p.cid] = p.body
		}
	}
	if text == "" || html == "" || len(pngs) != 2 {
		t.Fatalf("buyer message: text %v, html %v, %d images; want both parts and 2 images", text != "", html != "", len(pngs))
	}
	pub, err := tickets.ParsePublicKey(b.keys.PublicKey("ev_fest"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for cid, png := range pngs {
		if !strings.Contains(html, `src="cid:`+cid+`"`) {
			t.Errorf("the HTML part does not show image %s", cid)
		}
		tk, err := tickets.Verify(qrtest.Decode(t, png), pub)
		if err != nil {
			t.Fatalf("QR of %s: %v", cid, err)
		}
		if tk.EventID != "ev_fest" || tk.Admission != "General Admission" {
			t.Errorf("QR of %s carries %+v", cid, tk)
		}
		seen[tk.ID] = true
	}
	if !seen[rec.Tickets[0].TicketID] || !seen[rec.Tickets[1].TicketID] {
		t.Errorf("QR codes carry tickets %v, want %s and %s", seen, rec.Tickets[0].TicketID, rec.Tickets[1].TicketID)
	}
	link := appURL + "/tickets/" + rec.OrderID + "?k="
	i := strings.Index(text, link)
	if i < 0 {
		t.Fatalf("the text part has no ticket page link %s...:\n%s", link, text)
	}
	u, err := url.Parse(strings.Fields(text[i:])[0])
	if err != nil || !b.keys.CheckPageMAC(rec.OrderID, u.Query().Get("k")) {
		t.Errorf("ticket page link %q does not carry the order's MAC", text[i:])
	}

	msg, parts = parse(t, got["host@acme.test"][0].data)
	if s := subject(t, msg); !strings.Contains(s, "Summer Fest") || !strings.Contains(s, "Ada Lovelace") {
		t.Errorf("host subject %q", s)
	}
	for _, want := range []string{"Ada Lovelace", "ada@example.com", "USD 50.00", rec.OrderID, "Tickets: 2"} {
		if !strings.Contains(string(parts[0].body), want) {
			t.Errorf("host message lacks %q:\n%s", want, parts[0].body)
		}
	}
	var sent int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL AND attempts = 1`).Scan(&sent); err != nil || sent != 2 {
		t.Fatalf("%d rows sent at the first attempt (err %v), want 2", sent, err)
	}
}

// A partner order's buyer gets the tickets e-mail too (interface.md,
// partner rule 5); its host is not notified.
func TestPartnerOrderMailsTheBuyerOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "mailer", "s3cret")
	b.pay(t, order("channel", 1))
	if n := runOnce(t, b.mailer(s, "m")); n != 1 {
		t.Fatalf("claimed %d rows, want 1", n)
	}
	got := srv.messages()
	if len(got) != 1 || got[0].to[0] != "ada@example.com" || got[0].from != "tickets@example.test" {
		t.Fatalf("received %+v, want one message to the buyer", got)
	}
}

func (b *bundle) outbox(t *testing.T, kind string) (attempts int, lastError string, sent, failed bool, waitHours float64) {
	t.Helper()
	err := b.pool.QueryRow(context.Background(), `SELECT attempts, coalesce(last_error, ''), sent_at IS NOT NULL, failed_at IS NOT NULL,
		extract(epoch FROM next_attempt_at - now()) / 3600 FROM outbox WHERE kind = $1`, kind).Scan(&attempts, &lastError, &sent, &failed, &waitHours)
	if err != nil {
		t.Fatal(err)
	}
	return
}

// A server that answers with a temporary failure is tried again after a
// backoff that doubles; the error is kept; once it accepts, the message is
// sent (once).
func TestFailingServerIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	srv.setFail(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"})
	m := b.mailer(s, "m") // Backoff 1h, doubling
	b.pay(t, order("channel", 1))

	runOnce(t, m)
	attempts, lastError, sent, failed, wait := b.outbox(t, "buyer_tickets")
	if attempts != 1 || !strings.Contains(lastError, "451") || sent || failed || wait < 0.9 || wait > 1.01 {
		t.Fatalf("after a 451: attempts %d, error %q, sent %v, failed %v, due in %.2fh; want 1, the reply, due in 1h",
			attempts, lastError, sent, failed, wait)
	}
	if n := runOnce(t, m); n != 0 {
		t.Fatalf("a row in backoff was claimed (%d)", n)
	}
	elapse := func() {
		if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET next_attempt_at = now()`); err != nil {
			t.Fatal(err)
		}
	}
	elapse()
	runOnce(t, m)
	if attempts, _, _, _, wait = b.outbox(t, "buyer_tickets"); attempts != 2 || wait < 1.9 || wait > 2.01 {
		t.Fatalf("after a second 451: attempts %d, due in %.2fh; want 2, 2h", attempts, wait)
	}
	srv.setFail(nil)
	elapse()
	runOnce(t, m)
	attempts, lastError, sent, _, _ = b.outbox(t, "buyer_tickets")
	if attempts != 3 || !sent || lastError != "" || len(srv.messages()) != 1 {
		t.Fatalf("after the server recovered: attempts %d, sent %v, error %q, %d messages", attempts, sent, lastError, len(srv.messages()))
	}
}

// Without SMTP each message is written into the folder as an .eml file and
// logged in one line that names the order, not the buyer.
func TestFolderModeWritesFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := filepath.Join(t.TempDir(), "mail")
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	cfg, err := mailer.ConfigFromEnv(func(k string) string { return map[string]string{"TICKETD_MAIL_DIR": dir}[k] }, appURL)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mailer.New(cfg, b.pool, b.keys, appURL, logger)
	if err != nil {
		t.Fatal(err)
	}
	rec := order("storefront", 1)
	b.pay(t, rec)
	runOnce(t, m)
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(files) != 2 {
		t.Fatalf("%d .eml files in %s, want 2 (buyer, host)", len(files), dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := parse(t, data)
		if from, err := mail.ParseAddress(msg.Header.Get("From")); err != nil || from.Address != "tickets@tickets.example.test" {
			t.Errorf("From %q, want the default sender of the app URL's host", msg.Header.Get("From"))
		}
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if strings.Count(out, "mail written to folder") != 2 || !strings.Contains(out, rec.OrderID) ||
		strings.Contains(out, "ada@example.com") || strings.Contains(out, "Ada") {
		t.Fatalf("log:\n%s\nwant one line per file, with the order id and without buyer data", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A refund notice names the registration, amount and reason from the
// refunds table; without a row there it says what the outbox row's
// payload does.
func TestHostRefundNotice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	ctx := context.Background()
	withTable, withoutRow := orders.NewOrderID("ev_fest"), orders.NewOrderID("ev_fest")
	if _, err := b.pool.Exec(ctx, `INSERT INTO outbox (order_id, kind, recipient, payload) VALUES
		($1, 'host_refund', 'host@acme.test', '{}'),
		($2, 'host_refund', 'host@acme.test', '{"amountCents": 1234, "currency": "usd", "reason": "amount_mismatch"}')`,
		withTable, withoutRow); err != nil {
		t.Fatal(err)
	}
	m := b.mailer(s, "m")
	runOnce(t, m) // no refunds rows yet: the payload speaks
	if _, err := b.pool.Exec(ctx, `INSERT INTO refunds (registration_id, event_id, tenant_id, processor, payment_id,
		amount_cents, total_cents, currency, reason, buyer_name, buyer_email)
		VALUES ($1, 'ev_fest', 't_acme', 'card', 'cs_42', 5000, 5000, 'USD', 'sold_out', 'Ada', 'ada@example.com')`, withTable); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE outbox SET next_attempt_at = now(), sent_at = NULL WHERE order_id = $1`, withTable); err != nil {
		t.Fatal(err)
	}
	runOnce(t, m)
	var fromTable, fromPayload string
	for _, r := range srv.messages() {
		msg, parts := parse(t, r.data)
		body := subject(t, msg) + "\n" + string(parts[0].body)
		if strings.Contains(body, withTable) && strings.Contains(body, "USD 50.00") {
			fromTable = body
		}
		if strings.Contains(body, withoutRow) {
			fromPayload = body
		}
	}
	for _, want := range []string{"Summer Fest", "card", "cs_42", "sold out"} {
		if !strings.Contains(fromTable, want) {
			t.Errorf("refund notice from the table lacks %q:\n%s", want, fromTable)
		}
	}
	for _, want := range []string{"USD 12.34", "differs from the registration's total", "Summer Fest"} {
		if !strings.Contains(fromPayload, want) {
			t.Errorf("refund notice from the payload lacks %q:\n%s", want, fromPayload)
		}
	}
}

// A row leased by a live mailer is not taken by another; once the lease
// has run out (its holder died mid-send), it is.
func TestLeaseKeepsMailersApartUntilItRunsOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	b.pay(t, order("channel", 1))
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET locked_by = 'dead', locked_until = now() + interval '1 hour', attempts = 1`); err != nil {
		t.Fatal(err)
	}
	if n := runOnce(t, b.mailer(s, "m")); n != 0 {
		t.Fatal("a leased row was claimed")
	}
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET locked_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if n := runOnce(t, b.mailer(s, "m")); n != 1 || len(srv.messages()) != 1 {
		t.Fatalf("claimed %d, sent %d after the lease ran out; want 1, 1", n, len(srv.messages()))
	}
}

// A mailer whose lease ran out before it got to a row (a slow batch), and
// another mailer took the row meanwhile, leaves it to that one.
func TestRowTakenOverAfterTheLeaseIsNotSentByItsFormerHolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	b.pay(t, order("channel", 1))
	slow := b.mailer(s, "slow")
	slow.Lease = time.Hour
	hold := &holdingSender{Sender: s, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	// A second row, so "slow" claims two and is held on the first.
	b.pay(t, order("channel", 1))
	slow.Sender = hold
	done := make(chan error, 1)
	go func() { _, err := slow.RunOnce(context.Background()); done <- err }()
	<-hold.entered
	// Meanwhile both leases run out and "fast" takes what "slow" has not sent.
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET locked_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	fast := b.mailer(s, "fast")
	if n := runOnce(t, fast); n != 2 {
		t.Fatalf("fast claimed %d rows, want both", n)
	}
	close(hold.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// slow finished the send it had begun (the documented duplicate of a
	// lease that ran out mid-send), and skipped the row it had not begun.
	if got := len(srv.messages()); got != 3 {
		t.Fatalf("%d messages, want 3: two by fast, one by slow's send in flight", got)
	}
}

// holdingSender blocks its first send until release is closed.
type holdingSender struct {
	mailer.Sender
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (h *holdingSender) Send(ctx context.Context, m mailer.Message) error {
	first := false
	h.once.Do(func() { first = true })
	if first {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Sender.Send(ctx, m)
}

// A server that offers STARTTLS gets the message (and the credentials)
// over TLS only, its certificate verified: one the sender does not trust
// is refused, and the row retried.
func TestSTARTTLSWhenOffered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	serverTLS, clientTLS := selfSigned(t)
	srv := startSMTPWith(t, "mailer", "s3cret", serverTLS)
	s, err := mailer.NewSMTP("smtp://mailer:s3cret@" + srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	b.pay(t, order("channel", 1))
	// The system's roots do not know the certificate: the server's fault.
	if _, err := b.mailer(s, "m").RunOnce(context.Background()); !errors.Is(err, mailer.ErrServer) {
		t.Fatalf("RunOnce with an untrusted certificate: %v, want ErrServer", err)
	}
	if attempts, lastError, sent, failed, _ := b.outbox(t, "buyer_tickets"); sent || failed || attempts != 1 || !strings.Contains(lastError, "STARTTLS") {
		t.Fatalf("untrusted certificate: sent %v, failed %v, attempts %d, error %q; want a retried STARTTLS failure", sent, failed, attempts, lastError)
	}
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	s.TLS = clientTLS
	runOnce(t, b.mailer(s, "m"))
	got := srv.messages()
	if len(got) != 1 || !got[0].tls {
		t.Fatalf("received %d messages (tls %v), want one over TLS", len(got), len(got) == 1 && got[0].tls)
	}
}

// A mailer stopped mid-batch finishes the send it began and hands the
// rows it had not begun back at once, not counted as attempts.
func TestStoppedMailerHandsBackRowsNotBegun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	for range 3 {
		b.pay(t, order("channel", 1))
	}
	ctx, stop := context.WithCancel(context.Background())
	hold := &holdingSender{Sender: s, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	m := b.mailer(hold, "stopping")
	done := make(chan error, 1)
	go func() { _, err := m.RunOnce(ctx); done <- err }()
	<-hold.entered
	stop()
	close(hold.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := len(srv.messages()); got != 1 {
		t.Fatalf("%d messages sent, want the one begun", got)
	}
	var free int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox
		WHERE sent_at IS NULL AND locked_until IS NULL AND attempts = 0`).Scan(&free); err != nil || free != 2 {
		t.Fatalf("%d rows handed back unattempted (err %v), want 2", free, err)
	}
	if n := runOnce(t, b.mailer(s, "next")); n != 2 {
		t.Fatalf("the next mailer claimed %d rows, want 2", n)
	}
}

// A registration charged twice has two refunds; the host's two notices
// each name their own payment and amount, not the newest one twice.
func TestEachRefundNoticeNamesItsPayment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	ctx := context.Background()
	reg := orders.NewOrderID("ev_fest")
	st := refunddb.Store{Pool: b.pool}
	o := registrations.Outcome{RefundReason: "sold_out", Registration: registrations.Registration{
		ID: reg, EventID: "ev_fest", TenantID: "t_acme", Total: 4250, Currency: "USD", BuyerName: "Ada", BuyerEmail: "ada@example.com"}}
	if err := st.Refund(ctx, o, registrations.Payment{RegistrationID: reg, Processor: "card", PaymentID: "cs_first", Amount: 4250, Currency: "usd"}); err != nil {
		t.Fatal(err)
	}
	o.RefundReason = "already_paid"
	if err := st.Refund(ctx, o, registrations.Payment{RegistrationID: reg, Processor: "card", PaymentID: "cs_second", Amount: 1000, Currency: "usd"}); err != nil {
		t.Fatal(err)
	}
	if n := runOnce(t, b.mailer(s, "m")); n != 2 {
		t.Fatalf("claimed %d rows, want 2 notices", n)
	}
	got := map[string]string{}
	for _, r := range srv.messages() {
		msg, parts := parse(t, r.data)
		body := subject(t, msg) + "\n" + string(parts[0].body)
		for _, pay := range []string{"cs_first", "cs_second"} {
			if strings.Contains(body, pay) {
				got[pay] += body
			}
		}
	}
	if !strings.Contains(got["cs_first"], "USD 42.50") || strings.Contains(got["cs_first"], "cs_second") {
		t.Errorf("notice of cs_first:\n%s", got["cs_first"])
	}
	if !strings.Contains(got["cs_second"], "USD 10.00") || strings.Contains(got["cs_second"], "cs_first") {
		t.Errorf("notice of cs_second:\n%s", got["cs_second"])
	}
	// Each says why in words, the second charge of a paid registration too.
	if !strings.Contains(got["cs_first"], "the event had sold out meanwhile") {
		t.Errorf("notice of cs_first does not say why:\n%s", got["cs_first"])
	}
	if !strings.Contains(got["cs_second"], "paid already by another payment") || strings.Contains(got["cs_second"], "already_paid") {
		t.Errorf("notice of cs_second does not say why in words:\n%s", got["cs_second"])
	}
}
