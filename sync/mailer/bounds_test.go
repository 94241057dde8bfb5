package mailer_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	smtp "github.com/emersion/go-smtp"

	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/mailer"
)

// ada's mailbox under the spellings a buyer (or an attacker) may type.
var adaSpellings = []string{"ada@example.com", "Ada@Example.COM", "ada+fest@example.com", " ada@example.com ", "ADA+x@example.com",
	"ada@example.com", "ada+2@example.com"}

// rowsOf counts outbox rows of kind by state; waiting: not due for about
// an hour or more, never attempted, not leased (the limit's queue).
func (b *bundle) rowsOf(t *testing.T, kind string) (sent, waiting, failed, attempted int) {
	t.Helper()
	err := b.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE sent_at IS NOT NULL),
		count(*) FILTER (WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at > now() + interval '55 minutes'
			AND attempts = 0 AND (locked_until IS NULL OR locked_until <= now())),
		count(*) FILTER (WHERE failed_at IS NOT NULL), coalesce(sum(attempts), 0)
		FROM outbox WHERE kind = $1`, kind).Scan(&sent, &waiting, &failed, &attempted)
	if err != nil {
		t.Fatal(err)
	}
	return
}

// An address gets at most five messages an hour, however it is spelled
// (case, +tag, spaces); the rest wait, unattempted, until the hour has
// room, and are sent then: none is dropped. Another address and the
// host's notices are not held up.
func TestMailToOneAddressIsFiveAnHourAndTheRestWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	for _, addr := range adaSpellings {
		rec := order("storefront", 1)
		rec.BuyerEmail = addr
		b.pay(t, rec)
	}
	bob := order("channel", 1)
	bob.BuyerEmail = "bob@example.com"
	b.pay(t, bob)
	m := b.mailer(s, "m")
	runOnce(t, m)
	got := byRecipient(srv.messages())
	toAda := 0
	for to, ms := range got {
		if strings.Contains(strings.ToLower(to), "ada") {
			toAda += len(ms)
		}
	}
	if toAda != 5 || len(got["bob@example.com"]) != 1 || len(got["host@acme.test"]) != len(adaSpellings) {
		t.Fatalf("first round: %d messages to ada's mailbox, %d to bob, %d to the host; want 5, 1, %d",
			toAda, len(got["bob@example.com"]), len(got["host@acme.test"]), len(adaSpellings))
	}
	if sent, waiting, failed, _ := b.rowsOf(t, "buyer_tickets"); sent != 6 || waiting != 2 || failed != 0 {
		t.Fatalf("buyer rows: %d sent, %d waiting about an hour unattempted, %d failed; want 6, 2, 0", sent, waiting, failed)
	}
	if n := runOnce(t, m); n != 0 {
		t.Fatalf("a waiting row was claimed within the hour (%d)", n)
	}

	// An hour later.
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET rate_at = rate_at - interval '1 hour',
		next_attempt_at = least(next_attempt_at, now())`); err != nil {
		t.Fatal(err)
	}
	runOnce(t, m)
	if sent, _, failed, attempted := b.rowsOf(t, "buyer_tickets"); sent != 8 || failed != 0 || attempted != 8 {
		t.Fatalf("an hour later: %d of 8 buyer rows sent, %d failed, %d attempts; want 8, 0, 8 (waiting is no attempt)", sent, failed, attempted)
	}
	if n := len(srv.messages()); n != 8+len(adaSpellings) {
		t.Fatalf("%d messages in all, want %d", n, 8+len(adaSpellings))
	}
}

// Mailers sending at once never pass the limit together.
func TestConcurrentMailersShareTheHourlyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	for range 12 {
		b.pay(t, order("channel", 1))
	}
	var wg sync.WaitGroup
	for i := range 4 {
		m := b.mailer(s, "m"+string(rune('a'+i)))
		m.Batch = 3
		wg.Go(func() {
			for {
				n, err := m.RunOnce(context.Background())
				if err != nil {
					t.Error(err)
				}
				if n == 0 || err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(srv.messages()); n != 5 {
		t.Fatalf("4 mailers sent %d messages to one address, want 5", n)
	}
	if sent, waiting, failed, _ := b.rowsOf(t, "buyer_tickets"); sent != 5 || waiting != 7 || failed != 0 {
		t.Fatalf("%d sent, %d waiting, %d failed; want 5, 7, 0", sent, waiting, failed)
	}
}

// A failed send gives its slot back: a recipient whose server refused for
// a while still gets five messages in the hour.
func TestFailedSendDoesNotUseTheHour(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	for range 5 {
		b.pay(t, order("channel", 1))
	}
	srv.setFail(smtp451)
	m := b.mailer(s, "m")
	runOnce(t, m)
	srv.setFail(nil)
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	for runOnce(t, m) > 0 {
	}
	if n := len(srv.messages()); n != 5 {
		t.Fatalf("%d of 5 messages sent after a failed attempt, want 5", n)
	}
}

// messageOf is the one message of the server to addr, parsed: its size,
// text, HTML and number of images.
func messageOf(t *testing.T, srv *smtpServer, addr string) (size int, text, html string, images int) {
	t.Helper()
	ms := byRecipient(srv.messages())[addr]
	if len(ms) != 1 {
		t.Fatalf("%d messages to %s, want 1", len(ms), addr)
	}
	_, parts := parse(t, ms[0].data)
	for _, p := range parts {
		switch p.ctype {
		case "text/plain":
			text = string(p.body)
		case "text/html":
			html = string(p.body)
		case "image/png":
			images++
		}
	}
	return len(ms[0].data), text, html, images
}

// A message's size is bounded. Up to ten tickets come with their QR images
// inline; an order of more lists its tickets and links the ticket page
// (which shows every code); one whose list would pass the size bound (here
// a bound of 32 KB for a thousand tickets) says how many tickets and links
// the page. A name of 60,000 characters, as an attacker sent, is cut.
// Every form names the order and links its page: no ticket is lost. The
// host's notice is bounded too.
// ordersRef is an order's short reference (the tests name a map orders).
var ordersRef = orders.Reference

func TestMessagesAreBoundedAndStillGiveEveryTicket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	attacker := strings.Repeat("Buy cheap watches at example.net! ", 1800)
	cases := []struct {
		addr       string
		tickets    int
		name       string
		images     int
		listed     bool
		maxBytes   int
		wantInText string
	}{
		{"ten@example.com", 10, "Ada Lovelace", 10, true, mailer.DefaultMaxBytes, "Ticket 10: General Admission"},
		{"eleven@example.com", 11, "Ada Lovelace", 0, true, mailer.DefaultMaxBytes, "Your 11 tickets for"},
		{"thousand@example.com", 1000, attacker, 0, true, mailer.DefaultMaxBytes, "Your 1000 tickets for"},
		{"tight@example.com", 1000, attacker, 0, false, 32 << 10, "Your 1000 tickets for"},
	}
	orders := map[string]string{}
	for _, c := range cases {
		rec := order("storefront", c.tickets)
		rec.BuyerEmail, rec.BuyerName = c.addr, c.name
		b.pay(t, rec)
		orders[c.addr] = rec.OrderID
		m := b.mailer(s, "m")
		m.MaxBytes = c.maxBytes
		for runOnce(t, m) > 0 {
		}
	}
	for _, c := range cases {
		size, text, html, images := messageOf(t, srv, c.addr)
		t.Logf("%s, %d tickets: %d bytes, %d images", c.addr, c.tickets, size, images)
		if size > c.maxBytes || images != c.images {
			t.Errorf("%d tickets: %d bytes, %d images; want at most %d bytes and %d images", c.tickets, size, images, c.maxBytes, c.images)
		}
		link := appURL + "/tickets/" + orders[c.addr] + "?k="
		if !strings.Contains(text, link) || !strings.Contains(html, link) || !strings.Contains(text, c.wantInText) || !strings.Contains(text, orders[c.addr]) {
			t.Errorf("%d tickets: the message lacks the order, its page link or %q:\n%.2000s", c.tickets, c.wantInText, text)
		}
		// the short reference the buyer's pages show, with the full id for support
		ref := "Order reference " + ordersRef(orders[c.addr]) + " (order id " + orders[c.addr] + ")"
		if !strings.Contains(text, ref) || !strings.Contains(html, ref) || !strings.Contains(text, "thank you for your order "+ordersRef(orders[c.addr])+".") {
			t.Errorf("%d tickets: the message lacks %q", c.tickets, ref)
		}
		if listed := strings.Contains(text, orders[c.addr]+"-"+"1)"); listed != c.listed {
			t.Errorf("%d tickets: tickets listed %v, want %v", c.tickets, listed, c.listed)
		}
		if strings.Count(text, "Buy cheap watches") > 10 {
			t.Errorf("%d tickets: the buyer's name is not cut", c.tickets)
		}
	}
	hosts := byRecipient(srv.messages())["host@acme.test"]
	if len(hosts) != len(cases) {
		t.Fatalf("%d host notices, want %d", len(hosts), len(cases))
	}
	for _, h := range hosts {
		if len(h.data) > mailer.DefaultMaxBytes {
			t.Errorf("a host notice of %d bytes, over the bound", len(h.data))
		}
	}
	// Everything was sent in one attempt each.
	if _, _, failed, attempted := b.rowsOf(t, "buyer_tickets"); failed != 0 || attempted != len(cases) {
		t.Fatalf("%d failed, %d attempts; want 0 and %d", failed, attempted, len(cases))
	}
}

var smtp451 = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}

// An address with many messages waiting costs the mailer one claim a slot
// and holds nobody else up: another buyer's message, queued after 40 to one
// address, is sent in the first rounds, and once the hour has room the
// waiting messages are taken one a slot, not all claimed and deferred again.
func TestAFullAddressNeitherChurnsNorDelaysOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	const toAda = 40
	for range toAda {
		b.pay(t, order("channel", 1))
	}
	bob := order("channel", 1)
	bob.BuyerEmail = "bob@example.com"
	b.pay(t, bob)
	m := b.mailer(s, "m")
	m.Batch = 10

	claims := 0
	for round := 1; ; round++ {
		claims += runOnce(t, m)
		if len(byRecipient(srv.messages())["bob@example.com"]) == 1 {
			break
		}
		if round == 2 {
			t.Fatalf("bob's message not sent in two rounds of %d (%d rows claimed)", m.Batch, claims)
		}
	}
	for n := runOnce(t, m); n > 0; n = runOnce(t, m) {
		claims += n
	}
	// Each of ada's rows is claimed at most once on the way to its place in
	// the queue: by the first round's batch, or not at all.
	if claims > 5+m.Batch+1 {
		t.Fatalf("%d rows claimed before the queue settled, want at most %d", claims, 5+m.Batch+1)
	}
	if sent, waiting, failed, _ := b.rowsOf(t, "buyer_tickets"); sent != 6 || waiting != toAda-5 || failed != 0 {
		t.Fatalf("%d sent, %d waiting, %d failed; want 6, %d, 0", sent, waiting, failed, toAda-5)
	}

	// An hour later the five slots are free again: five more of ada's
	// messages go, each claimed once, and the rest are not touched.
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET rate_at = rate_at - interval '1 hour',
		next_attempt_at = next_attempt_at - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	claims = 0
	for range 20 {
		claims += runOnce(t, m)
	}
	if sent, _, _, _ := b.rowsOf(t, "buyer_tickets"); sent != 11 || claims != 5 {
		t.Fatalf("an hour later: %d sent with %d rows claimed, want 11 sent with 5 claims (one a slot)", sent, claims)
	}
}
