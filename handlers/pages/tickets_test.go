package pages_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/pages"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/inventory/tickets/qrtest"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/pgtest"
)

const orderID = "oshop.ev_fest"

func setup(t *testing.T) (fasthttp.RequestHandler, *tickets.Keys) {
	t.Helper()
	pool := pgtest.New(t)
	_, err := pool.Exec(context.Background(), `
		INSERT INTO tenants (id, doc) VALUES ('t_1', '{"name": "Acme Live"}');
		INSERT INTO events (id, tenant_id, doc) VALUES ('ev_fest', 't_1', '{"name": "Summer <Fest>", "startsAt": "2027-07-01T18:00:00Z"}');
		INSERT INTO orders (id, event_id, tenant_id, source, status, buyer_name, buyer_email, currency,
			subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
			created_at, paid_at, stream_id) VALUES
			('oshop.ev_fest', 'ev_fest', 't_1', 'storefront', 'paid', 'Bea', 'b@example.com', 'USD', 2000, 0, 0, 0, 0, 0, 2000, now(), now(), '1-1'),
			('o72atessijrh77igh2o24foeg.ev_fest', 'ev_fest', 't_1', 'storefront', 'paid', 'Cy', 'c@example.com', 'USD', 1000, 0, 0, 0, 0, 0, 1000, now(), now(), '1-2');
		INSERT INTO tickets (id, order_id, event_id, label, issued_at) VALUES
			('oshop.ev_fest-001', 'oshop.ev_fest', 'ev_fest', 'General Admission', now()),
			('oshop.ev_fest-002', 'oshop.ev_fest', 'ev_fest', 'Row A, Seat 2', now()),
			('o72atessijrh77igh2o24foeg.ev_fest-1', 'o72atessijrh77igh2o24foeg.ev_fest', 'ev_fest', 'General Admission', now())`)
	if err != nil {
		t.Fatal(err)
	}
	keys := tickets.NewKeys("pages test secret")
	h := &pages.Tickets{Orders: orderdb.Store{Pool: pool}, Keys: keys}
	r := router.New()
	h.Register(r)
	return r.Handler, keys
}

func get(h fasthttp.RequestHandler, uri string) *fasthttp.Response {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	h(&ctx)
	resp := &fasthttp.Response{}
	ctx.Response.CopyTo(resp)
	return resp
}

func TestTicketPageShowsEachTicketWithItsQR(t *testing.T) {
	t.Parallel()
	h, keys := setup(t)
	resp := get(h, "/tickets/"+orderID+"?k="+keys.PageMAC(orderID))
	body := string(resp.Body())
	if resp.StatusCode() != 200 || !strings.HasPrefix(string(resp.Header.ContentType()), "text/html") {
		t.Fatalf("status %d, type %s", resp.StatusCode(), resp.Header.ContentType())
	}
	for _, want := range []string{"Summer &lt;Fest&gt;", "Thursday 1 July 2027, 18:00 UTC", "oshop.ev_fest-001", "Row A, Seat 2",
		`aria-label="QR code of ticket 2, Row A, Seat 2"`, "Show this at the door", "For Bea", `lang="en"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if string(resp.Header.Peek("Referrer-Policy")) != "no-referrer" {
		t.Error("the page's link could leak through Referer")
	}
	// Style only from the page's own sheet; nothing loads from elsewhere.
	csp := string(resp.Header.Peek("Content-Security-Policy"))
	for _, want := range []string{"default-src 'none'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	sheet := regexp.MustCompile(`<link rel="stylesheet" href="(/assets/pages/tickets\.css\?v=[0-9a-f]+)">`).FindStringSubmatch(body)
	if sheet == nil || strings.Contains(body, "<style") || strings.Contains(body, "style=") || strings.Contains(body, "<script") ||
		strings.Contains(body, "http") {
		t.Fatalf("the page has an inline style or script, or loads external assets")
	}
	if css := get(h, sheet[1]); css.StatusCode() != 200 || !strings.Contains(string(css.Body()), "@media print") {
		t.Errorf("style sheet %s: %d", sheet[1], css.StatusCode())
	}
	// The buyer's browser may keep the page for the door, until the day
	// after the event (2027-07-01 18:00 UTC), as the page tells them; no
	// shared cache may.
	cc := string(resp.Header.Peek("Cache-Control"))
	age, err := strconv.Atoi(strings.TrimPrefix(cc, "private, max-age="))
	// (a minute of slack above: the server counted from when it answered,
	// a moment before this line, and a loaded machine can stretch that.)
	if until := max(time.Until(time.Date(2027, 7, 2, 18, 0, 0, 0, time.UTC)), 24*time.Hour); err != nil ||
		time.Duration(age)*time.Second > until+time.Minute || time.Duration(age)*time.Second < until-time.Hour {
		t.Errorf("Cache-Control %q, want private until %v from now", cc, until)
	}
	if !strings.Contains(body, "opens again without a connection until the day after the event") {
		t.Error("the page does not tell the buyer it opens offline until after the event")
	}

	codes := regexp.MustCompile(`<p class="code">(TD1[^<]+)</p>`).FindAllStringSubmatch(body, -1)
	if len(codes) != 2 {
		t.Fatalf("%d ticket codes on the page, want 2", len(codes))
	}
	if tk, err := tickets.Verify(codes[1][1], keys.VerifyKey("ev_fest")); err != nil || tk.ID != "oshop.ev_fest-002" {
		t.Fatalf("the second ticket code: %+v, %v", tk, err)
	}

	// Each code is drawn inline, labelled for a screen reader; the
	// browser test reads them off a screenshot. The PNG of each ticket
	// (linked nowhere on the page, kept for links to it) carries the
	// same code.
	if n := strings.Count(body, `<svg class="qr" role="img" aria-label="QR code of ticket`); n != 2 {
		t.Fatalf("%d QR codes drawn, want 2", n)
	}
	pub := keys.VerifyKey("ev_fest")
	for i := range 2 {
		src := "/tickets/" + orderID + "/" + strconv.Itoa(i+1) + ".png?k=" + keys.PageMAC(orderID)
		img := get(h, src)
		if img.StatusCode() != 200 || string(img.Header.ContentType()) != "image/png" {
			t.Fatalf("%s: status %d type %s", src, img.StatusCode(), img.Header.ContentType())
		}
		tk, err := tickets.Verify(qrtest.Decode(t, img.Body()), pub)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if want := []string{"oshop.ev_fest-001", "oshop.ev_fest-002"}[i]; tk.ID != want || tk.EventID != "ev_fest" {
			t.Errorf("image %d carries %+v, want ticket %s", i+1, tk, want)
		}
	}
}

// The page names the order by the short reference the success page and
// the e-mails give the buyer, with the full id beside it for support; an
// id of another shape is its own reference, named once.
func TestTicketPageNamesTheOrdersReference(t *testing.T) {
	t.Parallel()
	h, keys := setup(t)
	const id = "o72atessijrh77igh2o24foeg.ev_fest"
	body := string(get(h, "/tickets/"+id+"?k="+keys.PageMAC(id)).Body())
	// The header names it too: a printed page (which leaves the order's
	// line out) still has it.
	if !strings.Contains(body, "For Cy · 1 ticket · order 72ATE-SSIJR</p>") ||
		!strings.Contains(body, "Order reference <strong>72ATE-SSIJR</strong> for Cy (order id "+id+")") {
		t.Fatalf("the page does not name the order by its reference and id:\n%s", body)
	}
	body = string(get(h, "/tickets/"+orderID+"?k="+keys.PageMAC(orderID)).Body())
	if !strings.Contains(body, "Order reference <strong>"+orderID+"</strong> for Bea.") {
		t.Fatalf("an id of another shape: the page lacks it as its own reference:\n%s", body)
	}
}

func TestTicketPageWithoutTheRightMACIsNotFound(t *testing.T) {
	t.Parallel()
	h, keys := setup(t)
	other := tickets.NewKeys("another deployment")
	for _, uri := range []string{
		"/tickets/" + orderID,
		"/tickets/" + orderID + "?k=",
		"/tickets/" + orderID + "?k=" + other.PageMAC(orderID),
		"/tickets/" + orderID + "?k=" + keys.PageMAC("oother.ev_fest"),
		"/tickets/oother.ev_fest?k=" + keys.PageMAC("oother.ev_fest"), // a right MAC of an order that does not exist
		"/tickets/" + orderID + "/1.png?k=" + other.PageMAC(orderID),
		"/tickets/" + orderID + "/3.png?k=" + keys.PageMAC(orderID),
		"/tickets/" + orderID + "/0.png?k=" + keys.PageMAC(orderID),
		"/tickets/" + orderID + "/01.png?k=" + keys.PageMAC(orderID),
		"/tickets/" + orderID + "/1.gif?k=" + keys.PageMAC(orderID),
	} {
		resp := get(h, uri)
		if resp.StatusCode() != 404 || !strings.Contains(string(resp.Body()), "Tickets not found") || strings.Contains(string(resp.Body()), "Summer") {
			t.Errorf("%s: status %d, body %.80q; want the 404 page", uri, resp.StatusCode(), resp.Body())
		}
	}
}

func TestTicketPageWhenPostgresIsDownIsUnavailable(t *testing.T) {
	t.Parallel()
	keys := tickets.NewKeys("pages test secret")
	pool := pgtest.New(t)
	pool.Close()
	down := &pages.Tickets{Orders: orderdb.Store{Pool: pool}, Keys: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := router.New()
	down.Register(r)
	resp := get(r.Handler, "/tickets/"+orderID+"?k="+keys.PageMAC(orderID))
	if resp.StatusCode() != 503 {
		t.Fatalf("status %d, want 503", resp.StatusCode())
	}
}
