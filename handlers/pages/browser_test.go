package pages_test

import (
	"bytes"
	"context"
	"html"
	"image"
	"image/draw"
	"image/png"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/browsertest"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/inventory/tickets/qrtest"
)

// hostSite is the host's own site the hosted pages send the buyer back
// to: http://localhost:<port> (localhost is on pk_shop's domain list), a
// different origin from ticketd's http://127.0.0.1:<port>, as a real
// host's is. /done shows the session id it was given, /cart the cart.
type hostSite struct{ URL string }

func newHostSite(t *testing.T) hostSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/done":
			_, _ = w.Write([]byte(`<!doctype html><title>Thanks</title><h1>Thank you</h1><p id="session">` +
				html.EscapeString(r.URL.Query().Get("session")) + `</p>`))
		case "/cart":
			_, _ = w.Write([]byte(`<!doctype html><title>Cart</title><h1 id="cart">Your cart</h1>`))
		case "/frame":
			// A page of another site that tries to frame the pay page.
			_, _ = w.Write([]byte(`<!doctype html><title>Framer</title><iframe id="f" src="` +
				html.EscapeString(r.URL.Query().Get("src")) + `" width="600" height="600"></iframe>`))
		default:
			http.NotFound(w, r)
		}
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return hostSite{URL: "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
}

func (h hostSite) urls() map[string]any {
	return map[string]any{"successUrl": h.URL + "/done?session={CHECKOUT_SESSION_ID}", "cancelUrl": h.URL + "/cart"}
}

type checkout struct{ URL, SessionID string }

// cardCheckout opens a hosted card session for reg with the cart fields
// given and the host site's return URLs.
func cardCheckout(t *testing.T, s *servertest.Server, site hostSite, reg servertest.Registered, cart map[string]any) checkout {
	t.Helper()
	body := map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID}
	for k, v := range cart {
		body[k] = v
	}
	for k, v := range site.urls() {
		body[k] = v
	}
	r := s.Front(t, "POST", "/card/create-checkout-session", body)
	servertest.Expect(t, r, 200, "")
	var c checkout
	r.Decode(t, &c)
	if !strings.HasPrefix(c.URL, s.URL+"/pay/card/") || c.SessionID == "" {
		t.Fatalf("checkout %+v is not the hosted card page", c)
	}
	return c
}

// browser is a headless Chromium tab at the viewport given, each step
// bounded.
func browser(t *testing.T, viewport chromedp.Action[chromedp.Void]) context.Context {
	t.Helper()
	ctx := browsertest.Timeout(t, browsertest.New(t, browsertest.Options{}), 90*time.Second)
	do(t, ctx, viewport)
	return ctx
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// confirmed waits for the registration to be confirmed (the card's
// webhook is delivered during the Pay request, so at once as a rule).
func confirmed(t *testing.T, s *servertest.Server, id string) servertest.Registered {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reg := s.Registration(t, id)
		if reg.Status == registrations.StatusConfirmed {
			return reg
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration %s is %s, never confirmed", id, reg.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The card page shows every line of the registration and its total, pays
// with the card it is prefilled with, and sends the browser to the host's
// success URL (another origin: the CSP's form-action lets the redirect
// through) with the real session id; the registration is confirmed.
func TestBrowserCardPageShowsTheOrderAndPays(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{})
	site := newHostSite(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2,
		"extras": []map[string]any{{"extraId": "ex_parking", "quantity": 1}}, "discountCode": "SAVE10", "refundProtectionOptIn": true}))
	co := cardCheckout(t, s, site, reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50})
	ctx := browser(t, browsertest.Desktop)
	do(t, ctx, chromedp.Navigate(co.URL), chromedp.WaitVisible(chromedp.CSS("button.btn")))

	// 50.00 - 5.00 (SAVE10) + 10.00 parking + 3.00 fee + 4.40 refund protection = 62.40
	rows := eval[[][]string](t, ctx, `[...document.querySelectorAll("tbody tr")].map(r => [...r.cells].map(c => c.innerText.trim()))`)
	want := [][]string{{"Adult\n2 × $25.00", "$50.00"}, {"Parking", "$10.00"}, {"Discount (SAVE10)", "-$5.00"},
		{"Service fee", "$3.00"}, {"Refund protection", "$4.40"}}
	if len(rows) != len(want) {
		t.Fatalf("lines shown %q, want %q", rows, want)
	}
	for i := range want {
		if rows[i][0] != want[i][0] || rows[i][1] != want[i][1] {
			t.Errorf("line %d shows %q, want %q", i+1, rows[i], want[i])
		}
	}
	total := eval[string](t, ctx, `document.querySelector("tfoot td.num").innerText`)
	if reg.Amount != 6240 || total != "$"+reg.Amount.String() {
		t.Fatalf("total shown %q, registration's %v", total, reg.Amount)
	}
	for _, text := range []string{"Summer Night", "test mode", "4000 0000 0000 0002"} {
		if !strings.Contains(strings.ToLower(eval[string](t, ctx, `document.body.innerText`)), strings.ToLower(text)) {
			t.Errorf("page does not show %q", text)
		}
	}
	if v := eval[string](t, ctx, `document.getElementById("card").value`); strings.ReplaceAll(v, " ", "") != "4242424242424242" {
		t.Errorf("card input prefilled with %q", v)
	}
	pay := eval[string](t, ctx, `document.querySelector("button.btn").innerText`)
	if pay != "Pay $62.40" {
		t.Errorf("Pay button reads %q", pay)
	}
	// The style sheet applied: the page is not the browser's bare form.
	if bg := eval[string](t, ctx, `getComputedStyle(document.querySelector("button.btn")).backgroundColor`); bg == "rgba(0, 0, 0, 0)" || bg == "rgb(239, 239, 239)" {
		t.Errorf("Pay button unstyled (background %s): the style sheet did not load", bg)
	}
	browsertest.Shot(t, ctx, "1-card-desktop")
	do(t, ctx, browsertest.Phone, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("button.btn")))
	browsertest.Shot(t, ctx, "2-card-phone")
	// On a phone the page fits the screen: nothing scrolls sideways.
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("page is %d px wide on a 390 px phone", w)
	}

	do(t, ctx, chromedp.Click(chromedp.CSS("button.btn")), chromedp.WaitVisible(chromedp.ID("session")))
	if got, want := location(t, ctx), site.URL+"/done?session="+co.SessionID; got != want {
		t.Fatalf("after paying the browser is at %s, want %s", got, want)
	}
	browsertest.Shot(t, ctx, "3-success")
	if got := confirmed(t, s, reg.RegistrationID); got.Payment.Amount != 6240 || len(got.Tickets) != 2 {
		t.Fatalf("confirmed registration %+v, want 62.40 paid and 2 tickets", got)
	}
}

// The declining test card: the page says in words the card was declined
// and that nothing was charged, the card field has the focus for another
// number, nothing is confirmed; another card then pays.
func TestBrowserDeclinedCardThenAnotherPays(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{})
	site := newHostSite(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	co := cardCheckout(t, s, site, reg, map[string]any{"selectedTicketId": "tk_child", "quantity": 1, "selectedTicketAmount": 10})
	ctx := browser(t, browsertest.Phone)
	do(t, ctx, chromedp.Navigate(co.URL), chromedp.WaitVisible(chromedp.ID("card")),
		chromedp.SetValue(chromedp.ID("card"), "4000 0000 0000 0002"),
		chromedp.Click(chromedp.CSS("button.btn")),
		chromedp.WaitVisible(chromedp.ID("status")))
	msg := eval[string](t, ctx, `document.getElementById("status").innerText`)
	if !strings.Contains(msg, "card was declined") || !strings.Contains(msg, "Nothing was charged") || !strings.Contains(msg, "another card") {
		t.Fatalf("after a decline the page says %q", msg)
	}
	if f := eval[string](t, ctx, `document.activeElement.id`); f != "card" {
		t.Errorf("focus on %q after the decline, want the card number", f)
	}
	browsertest.Shot(t, ctx, "1-declined-phone")
	if got := s.Registration(t, reg.RegistrationID); got.Status != registrations.StatusAwaitingPayment {
		t.Fatalf("after a decline the registration is %s", got.Status)
	}
	if sess, _, err := s.Card.Get(context.Background(), co.SessionID); err != nil || sess.Status != payments.StatusOpen {
		t.Fatalf("after a decline the session is %q (%v), want open", sess.Status, err)
	}

	// Another card, by keyboard alone: the focused field, then Enter.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("card").value = ""`), chromedp.SendKeys(chromedp.ID("card"), "4242 4242 4242 4242\n"),
		chromedp.WaitVisible(chromedp.ID("session")))
	if got, want := location(t, ctx), site.URL+"/done?session="+co.SessionID; got != want {
		t.Fatalf("after paying the browser is at %s, want %s", got, want)
	}
	confirmed(t, s, reg.RegistrationID)
}

// Cancel takes the buyer back to the host's cart and closes the session:
// its page says so and paying it is refused.
func TestBrowserCancelReturnsToTheCart(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{})
	site := newHostSite(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	co := cardCheckout(t, s, site, reg, map[string]any{"selectedTicketId": "tk_child", "quantity": 1, "selectedTicketAmount": 10})
	ctx := browser(t, browsertest.Desktop)
	do(t, ctx, chromedp.Navigate(co.URL), chromedp.WaitVisible(chromedp.CSS("button.link")))
	if text := eval[string](t, ctx, `document.querySelector("button.link").innerText`); !strings.HasPrefix(text, "Cancel") {
		t.Fatalf("cancel button reads %q", text)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("button.link")), chromedp.WaitVisible(chromedp.ID("cart")))
	if got := location(t, ctx); got != site.URL+"/cart" {
		t.Fatalf("after Cancel the browser is at %s", got)
	}
	if sess, _, err := s.Card.Get(context.Background(), co.SessionID); err != nil || sess.Status != payments.StatusCancelled {
		t.Fatalf("after Cancel the session is %q (%v)", sess.Status, err)
	}
	// Its page says it was cancelled and offers no Pay button ...
	do(t, ctx, chromedp.Navigate(co.URL), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if h := eval[string](t, ctx, `document.querySelector("main h1").innerText`); !strings.Contains(h, "cancelled") {
		t.Errorf("the cancelled session's page says %q", h)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("form").length`); n != 0 {
		t.Errorf("the cancelled session's page has %d forms", n)
	}
	browsertest.Shot(t, ctx, "1-cancelled")
	// A broken link gets a page that says so, on a phone too.
	do(t, ctx, browsertest.Phone, chromedp.Navigate(s.URL+"/pay/card/cs_nothing"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if h := eval[string](t, ctx, `document.querySelector("main h1").innerText`); !strings.Contains(h, "not valid") {
		t.Errorf("an unknown session's page says %q", h)
	}
	browsertest.Shot(t, ctx, "2-unknown-phone")
	// ... and a Pay posted anyway is refused.
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI(co.URL + "/pay")
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.SetBodyString("card=4242424242424242")
	if err := s.Client.Do(req, resp); err != nil || resp.StatusCode() != 410 {
		t.Fatalf("pay after cancel: %d %v", resp.StatusCode(), err)
	}
	if got := s.Registration(t, reg.RegistrationID); got.Status == registrations.StatusConfirmed {
		t.Fatal("a cancelled checkout confirmed the registration")
	}
}

// The wallet page has no card field; Pay approves and returns to the host.
func TestBrowserWalletPagePays(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{})
	site := newHostSite(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	body := map[string]any{"registrationId": reg.RegistrationID, "amount": 11.5, "selectedTicketId": "tk_child", "quantity": 1}
	for k, v := range site.urls() {
		body[k] = v
	}
	r := s.Front(t, "POST", "/wallet/create-payment", body)
	servertest.Expect(t, r, 200, "")
	var co checkout
	r.Decode(t, &co)
	ctx := browser(t, browsertest.Phone)
	do(t, ctx, chromedp.Navigate(co.URL), chromedp.WaitVisible(chromedp.CSS("button.btn")))
	if n := eval[int](t, ctx, `document.querySelectorAll("#card").length`); n != 0 {
		t.Error("the wallet page asks for a card")
	}
	if text := eval[string](t, ctx, `document.querySelector("button.btn").innerText`); text != "Pay $11.50" {
		t.Errorf("Pay button reads %q", text)
	}
	browsertest.Shot(t, ctx, "1-wallet-phone")
	do(t, ctx, chromedp.Click(chromedp.CSS("button.btn")), chromedp.WaitVisible(chromedp.ID("session")))
	if got, want := location(t, ctx), site.URL+"/done?session="+co.SessionID; got != want {
		t.Fatalf("after paying the browser is at %s, want %s", got, want)
	}
	if got := confirmed(t, s, reg.RegistrationID); got.Payment.Amount != 1150 {
		t.Fatalf("confirmed registration %+v, want 11.50 paid", got)
	}
}

// The pay page refuses to be framed by another site: its CSP says
// frame-ancestors 'none', and Chromium shows nothing of it in a frame.
func TestBrowserPayPageCannotBeFramed(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{})
	site := newHostSite(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	co := cardCheckout(t, s, site, reg, map[string]any{"selectedTicketId": "tk_child", "quantity": 1, "selectedTicketAmount": 10})
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(co.URL)
	if err := s.Client.Do(req, resp); err != nil {
		t.Fatal(err)
	}
	csp, xfo := string(resp.Header.Peek("Content-Security-Policy")), string(resp.Header.Peek("X-Frame-Options"))
	if resp.StatusCode() != 200 || !strings.Contains(csp, "frame-ancestors 'none'") || xfo != "DENY" {
		t.Fatalf("pay page: %d, CSP %q, X-Frame-Options %q", resp.StatusCode(), csp, xfo)
	}
	ctx := browser(t, browsertest.Desktop)
	// The check sees into a frame: the ticketd health answer, which sets
	// no frame-ancestors, shows in one.
	if _, text := framed(t, ctx, site, s.URL+"/healthz"); !strings.Contains(text, "ok") {
		t.Fatalf("a frameable page shows %q in the frame", text)
	}
	url, text := framed(t, ctx, site, co.URL)
	if strings.HasPrefix(url, s.URL) || strings.Contains(text, "Pay") || strings.Contains(text, "Summer Night") {
		t.Fatalf("the pay page rendered inside another site's frame: %s shows %q", url, text)
	}
	browsertest.Shot(t, ctx, "1-framed")
}

// framed opens the host site's page that frames src and returns the
// frame's document URL and text once its navigation has settled (the
// harness turns site isolation off, so the frame's document is reachable
// from the page's).
func framed(t *testing.T, ctx context.Context, site hostSite, src string) (url, text string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(site.URL+"/frame?src="+src), chromedp.WaitReady(chromedp.ID("f")))
	deadline := time.Now().Add(20 * time.Second)
	for {
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.ID("f")))
		if err != nil || len(nodes) != 1 {
			t.Fatalf("iframe: %v", err)
		}
		if doc := nodes[0].ContentDocument; doc != nil && doc.DocumentURL != "" && doc.DocumentURL != "about:blank" {
			text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"), chromedp.FromNode(doc)))
			return doc.DocumentURL, text
		}
		if time.Now().After(deadline) {
			t.Fatal("the frame never loaded")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The ticket page of a paid registration, once written to Postgres, shows
// the event, the buyer and each admission with a QR code that fills a
// phone's width; the codes read back FROM A SCREENSHOT of the page carry
// each ticket's signed code, which verifies. Once loaded it opens again
// without a network.
func TestBrowserTicketPageCodesScanFromAPhone(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{})
	site := newHostSite(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	co := cardCheckout(t, s, site, reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50})
	if status, _ := s.PayOnPage(t, co.URL, "4242424242424242"); status != 303 {
		t.Fatalf("pay: %d", status)
	}
	paid := confirmed(t, s, reg.RegistrationID)
	s.Drain(t)
	if n := s.Count(t, `SELECT count(*) FROM tickets WHERE order_id = $1`, reg.RegistrationID); n != 2 {
		t.Fatalf("%d tickets in Postgres, want 2", n)
	}
	page := s.Tickets.PageURL(s.URL, reg.RegistrationID)

	ctx := browser(t, browsertest.Phone)
	do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("svg.qr")))
	text := eval[string](t, ctx, `document.body.innerText`)
	for _, want := range []string{"Summer Night", "Thursday 1 July 2027, 18:00 UTC", "Grace Hopper", "Show this at the door",
		"Ticket 1 of 2", "Ticket 2 of 2", paid.Tickets[0].Label} {
		if !strings.Contains(text, want) {
			t.Errorf("ticket page does not show %q", want)
		}
	}
	shot := browsertest.Capture(t, ctx, "1-tickets-phone")

	// Where each code is on the page, in CSS pixels, and its size in modules.
	type box struct{ X, Y, W, H, Modules float64 }
	boxes := eval[[]box](t, ctx, `[...document.querySelectorAll("svg.qr")].map(e => { const r = e.getBoundingClientRect();
		return {X: r.left + scrollX, Y: r.top + scrollY, W: r.width, H: r.height, Modules: e.viewBox.baseVal.width} })`)
	codes := eval[[]string](t, ctx, `[...document.querySelectorAll(".code")].map(e => e.textContent)`)
	if len(boxes) != 2 || len(codes) != 2 {
		t.Fatalf("%d codes drawn, %d ticket codes, want 2", len(boxes), len(codes))
	}
	dpr := eval[float64](t, ctx, `devicePixelRatio`)
	img := decodePNG(t, shot)
	pub := s.Tickets.VerifyKey(paid.EventID)
	for i, b := range boxes {
		// At the door: most of a 390 px phone's width, square.
		if b.W < 0.8*390 || b.W != b.H {
			t.Errorf("code %d is %.0f x %.0f CSS px on a 390 px phone, want square and at least 312", i+1, b.W, b.H)
		}
		r := image.Rect(int(b.X*dpr), int(b.Y*dpr), int((b.X+b.W)*dpr), int((b.Y+b.H)*dpr))
		code := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
		draw.Draw(code, code.Bounds(), img, r.Min, draw.Src)
		checkQuietZone(t, code, b.Modules)
		got := qrtest.Read(t, code)
		if got != codes[i] {
			t.Errorf("code %d reads %q, the page's ticket code is %q", i+1, got, codes[i])
		}
		tk, err := tickets.Verify(got, pub)
		if err != nil || tk.ID != paid.Tickets[i].TicketID || tk.Admission != paid.Tickets[i].Label {
			t.Errorf("code %d: %+v, %v; want ticket %s", i+1, tk, err, paid.Tickets[i].TicketID)
		}
	}

	do(t, ctx, browsertest.Desktop, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("svg.qr")))
	browsertest.Shot(t, ctx, "2-tickets-desktop")
	// Printed: the codes, without the parts only a screen needs.
	do(t, ctx, media("print"))
	if d := eval[string](t, ctx, `getComputedStyle(document.querySelector("details")).display`); d != "none" {
		t.Errorf("printed, the ticket code's disclosure shows (display %s)", d)
	}
	browsertest.Shot(t, ctx, "3-tickets-print")
	do(t, ctx, media(""))

	// At the door without signal: the link opens again from the phone's
	// own cache, codes and style included.
	do(t, ctx, chromedp.Navigate("about:blank"), offline(t))
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/healthz")); err == nil {
		t.Fatal("offline, a page never loaded still opens: the tab is not offline")
	}
	do(t, ctx, browsertest.Phone, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("svg.qr")))
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.qr").length`); n != 2 {
		t.Fatalf("offline the page shows %d codes", n)
	}
	if w := eval[float64](t, ctx, `document.querySelector("svg.qr").getBoundingClientRect().width`); w < 0.8*390 {
		t.Errorf("offline the code is %.0f px wide: the style sheet is missing", w)
	}
	browsertest.Shot(t, ctx, "4-tickets-offline")
}

// media emulates a CSS media type ("print"; "" for the screen again).
func media(typ string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: typ})
		return err
	})
}

// offline cuts the tab off the network, as a phone without signal.
func offline(t *testing.T) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}}})
		return err
	})
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// checkQuietZone fails unless the outer three of the four quiet-zone
// modules around the code are white as rendered (a scanner needs the
// margin) and the code itself is black on white.
func checkQuietZone(t *testing.T, img image.Image, modules float64) {
	t.Helper()
	b := img.Bounds()
	band := int(3 * float64(b.Dx()) / modules)
	dark, light := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			lum := (r + g + bl) / 3 >> 8
			edge := x < b.Min.X+band || x >= b.Max.X-band || y < b.Min.Y+band || y >= b.Max.Y-band
			if edge && lum < 0xf0 {
				t.Fatalf("quiet zone not white at (%d, %d): luminance %d", x, y, lum)
			}
			switch {
			case lum < 0x20:
				dark++
			case lum > 0xe0:
				light++
			}
		}
	}
	if total := b.Dx() * b.Dy(); (dark+light)*100 < total*98 {
		t.Errorf("code is not black on white: %d dark, %d light of %d pixels", dark, light, total)
	}
}
