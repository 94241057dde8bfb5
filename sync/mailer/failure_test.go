package mailer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/sync/mailer"
)

// A wrong password (AUTH 535) is the configuration's fault, not the
// messages': the row begun is retried after its backoff, the rest of the
// batch is handed back unattempted, nothing is given up, and once the
// password is right every message goes out.
func TestWrongPasswordRetriesLaterAndFailsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := startSMTP(t, "mailer", "s3cret")
	wrong, err := mailer.NewSMTP("smtp://mailer:wrong@" + srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b.pay(t, order("channel", 1))
	}
	n, err := b.mailer(wrong, "m").RunOnce(context.Background())
	if n != 3 || !errors.Is(err, mailer.ErrServer) {
		t.Fatalf("RunOnce = %d, %v; want 3 claimed and ErrServer", n, err)
	}
	var failed, tried, free int
	var lastError string
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE failed_at IS NOT NULL),
		count(*) FILTER (WHERE attempts = 1 AND next_attempt_at > now() + interval '50 minutes'),
		count(*) FILTER (WHERE attempts = 0 AND locked_until IS NULL AND next_attempt_at <= now()),
		coalesce(max(last_error), '') FROM outbox`).Scan(&failed, &tried, &free, &lastError); err != nil {
		t.Fatal(err)
	}
	if failed != 0 || tried != 1 || free != 2 || !strings.Contains(lastError, "535") {
		t.Fatalf("after AUTH 535: %d failed, %d retried in an hour, %d handed back, error %q; want 0, 1, 2, the 535",
			failed, tried, free, lastError)
	}
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	right, err := mailer.NewSMTP("smtp://mailer:s3cret@" + srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	runOnce(t, b.mailer(right, "m"))
	if got := len(srv.messages()); got != 3 {
		t.Fatalf("%d messages once the password is right, want 3", got)
	}
}

// A recipient the server refuses (RCPT 550) gives that row up after one
// attempt, never claimed again; the batch goes on to the next. The log names the stage and the code, not the
// reply's text, which quotes the address.
func TestRefusedRecipientFailsItsRowOnlyAndStaysOutOfTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	refused := order("channel", 1)
	refused.BuyerEmail = "refused@example.com"
	b.pay(t, refused)
	b.pay(t, order("channel", 1))
	var logs bytes.Buffer
	var mu sync.Mutex
	m := b.mailer(s, "m")
	m.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	runOnce(t, m)
	var failed bool
	var attempts int
	var lastError string
	if err := b.pool.QueryRow(context.Background(), `SELECT failed_at IS NOT NULL, attempts, coalesce(last_error, '') FROM outbox
		WHERE recipient = 'refused@example.com'`).Scan(&failed, &attempts, &lastError); err != nil {
		t.Fatal(err)
	}
	if !failed || attempts != 1 || !strings.Contains(lastError, "550") || !strings.Contains(lastError, "refused@example.com") {
		t.Fatalf("refused row: failed %v, attempts %d, error %q; want given up after one attempt, the reply kept", failed, attempts, lastError)
	}
	if n := runOnce(t, b.mailer(s, "m")); n != 0 {
		t.Fatal("a given-up row was claimed again")
	}
	if got := srv.messages(); len(got) != 1 || got[0].to[0] != "ada@example.com" {
		t.Fatalf("received %+v, want the other row's message", got)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if strings.Contains(out, "refused@example.com") || !strings.Contains(out, "RCPT TO: 550") {
		t.Fatalf("log:\n%s\nwant the stage and code, not the address", out)
	}
}

// The mailer greets the server with the app URL's host, or
// TICKETD_SMTP_HELO, not "localhost".
func TestEHLOName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := startSMTP(t, "", "")
	for _, c := range []struct{ helo, want string }{{"", "tickets.example.test"}, {"mx1.example.org", "mx1.example.org"}} {
		env := map[string]string{"TICKETD_SMTP_URL": "smtp://" + srv.addr, "TICKETD_SMTP_HELO": c.helo}
		cfg, err := mailer.ConfigFromEnv(func(k string) string { return env[k] }, appURL)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mailer.New(cfg, b.pool, b.keys, appURL, quiet())
		if err != nil {
			t.Fatal(err)
		}
		b.pay(t, order("channel", 1))
		runOnce(t, m)
		got := srv.messages()
		if len(got) == 0 || got[len(got)-1].helo != c.want {
			t.Fatalf("TICKETD_SMTP_HELO=%q: the server was greeted as %+v, want %q", c.helo, got, c.want)
		}
	}
}

// Names of 200 characters, non-ASCII ones too, give a Subject folded into
// lines far below the 998 characters a line may have, which decodes back.
func TestLongNamesFoldTheSubject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	event := strings.Repeat("Summer Fest ", 16) + "Finale" // 198 ASCII characters
	buyer := string([]rune(strings.Repeat("Zoë Ångström-Łukasiewicz 日本 ", 8))[:200])
	if _, err := b.pool.Exec(context.Background(), `UPDATE events SET doc = jsonb_set(doc, '{name}', to_jsonb($1::text))`, event); err != nil {
		t.Fatal(err)
	}
	rec := order("storefront", 1)
	rec.BuyerName = buyer
	b.pay(t, rec)
	runOnce(t, b.mailer(s, "m"))
	got := srv.messages()
	if len(got) != 2 {
		t.Fatalf("%d messages, want 2", len(got))
	}
	want := map[string]bool{"Your tickets for " + event: true, "New registration for " + event + ": " + buyer: true}
	for _, r := range got {
		head, _, _ := bytes.Cut(r.data, []byte("\r\n\r\n"))
		for _, line := range strings.Split(string(r.data), "\r\n") {
			if utf8.RuneCountInString(line) > 998 || len(line) > 998 {
				t.Fatalf("a line of %d bytes: %.80q…", len(line), line)
			}
		}
		inSubject := false
		for _, line := range strings.Split(string(head), "\r\n") {
			inSubject = strings.HasPrefix(line, "Subject:") || (inSubject && strings.HasPrefix(line, " "))
			if inSubject && len(line) > 78 {
				t.Errorf("a Subject line of %d characters: %q", len(line), line)
			}
		}
		msg, _ := parse(t, r.data)
		if sub := subject(t, msg); !want[sub] {
			t.Errorf("subject decodes to %q", sub)
		}
	}
}

// expiringSender delivers only after the send's context ran out: the
// server accepted the message just as the mailer's time for it was up.
type expiringSender struct{ mailer.Sender }

func (e expiringSender) Send(ctx context.Context, m mailer.Message) error {
	<-ctx.Done()
	return e.Sender.Send(context.Background(), m)
}

// A message the server accepted is marked sent even when the send used up
// its context, so it is not sent a second time after the lease.
func TestAcceptedMessageIsMarkedSentWhenItsTimeRanOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	b.pay(t, order("channel", 1))
	m := b.mailer(expiringSender{s}, "m")
	m.Lease = 2 * time.Second // a send has half of it
	runOnce(t, m)
	if _, _, sent, _, _ := b.outbox(t, "buyer_tickets"); !sent || len(srv.messages()) != 1 {
		t.Fatalf("sent %v with %d messages delivered; want the row marked sent", sent, len(srv.messages()))
	}
}

// panickingSender panics on every send.
type panickingSender struct{}

func (panickingSender) Send(context.Context, mailer.Message) error { panic("boom") }

// A row whose send panics is recorded as failed and retried, the process
// not killed; a row whose attempts ran out with no outcome recorded (its
// mailer died each time) is given up, not claimed forever.
func TestCrashingRowsEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.pay(t, order("channel", 1))
	m := b.mailer(panickingSender{}, "m")
	m.MaxAttempts = 3
	runOnce(t, m)
	attempts, lastError, sent, failed, _ := b.outbox(t, "buyer_tickets")
	if attempts != 1 || sent || failed || !strings.Contains(lastError, "panic") {
		t.Fatalf("after a panic: attempts %d, sent %v, failed %v, error %q; want a retried failure", attempts, sent, failed, lastError)
	}
	// Two more claims whose mailer died mid-send: the lease ran out, no outcome.
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET attempts = 3, next_attempt_at = now(),
		locked_by = 'dead', locked_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	_, s := startSender(t, "", "")
	m2 := b.mailer(s, "m2")
	m2.MaxAttempts = 3
	if n := runOnce(t, m2); n != 0 {
		t.Fatalf("a row with no attempts left was claimed (%d)", n)
	}
	attempts, lastError, sent, failed, _ = b.outbox(t, "buyer_tickets")
	if attempts != 3 || sent || !failed || !strings.Contains(lastError, "no outcome") {
		t.Fatalf("after its attempts ran out: attempts %d, sent %v, failed %v, error %q; want given up", attempts, sent, failed, lastError)
	}
}
