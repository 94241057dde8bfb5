package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/browsertest"
	"github.com/ticketd/ticketd/handlers/demosite"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// The browser tests buy through the demo shop (handlers/demosite) in
// headless Chromium, as a buyer would after `make run`: the shop on
// http://localhost:<port>, ticketd's API, hosted pages and seat picker on
// http://127.0.0.1:<port>, two origins, so CORS, the Origin check and the
// picker's messages work as on a real host's site. ticketd runs with its
// sync worker and the test card processor, whose webhook confirms a
// payment. Screenshots of each step are in screenshots/.

// shopRun is a ticketd serving the demo catalog and the demo shop.
type shopRun struct {
	api, shop string
}

func startShop(t *testing.T) shopRun {
	t.Helper()
	return startShopWith(t, nil)
}

// startShopWith is startShop with tweak's changes to the config.
func startShopWith(t *testing.T, tweak func(*config)) shopRun {
	t.Helper()
	// The hosted pages' links and the processor's webhook go to
	// TICKETD_APP_URL: it must be this ticketd's own address.
	addr := freeAddr(t)
	cfg := localConfig(t)
	cfg.Addr, cfg.AppURL, cfg.DemoAddr = addr, "http://"+addr, "127.0.0.1:0"
	if tweak != nil {
		tweak(&cfg)
	}
	t.Setenv("TICKETD_MAIL_DIR", t.TempDir())
	shopAddr := make(chan string, 1)
	api := runTicketd(t, cfg, options{API: true, Worker: true, Demo: true, DemoSite: true, DemoReady: shopAddr})
	select {
	case a := <-shopAddr:
		_, port, _ := net.SplitHostPort(a)
		return shopRun{api: api, shop: "http://localhost:" + port}
	case <-time.After(10 * time.Second):
		t.Fatal("the demo shop did not listen")
	}
	return shopRun{}
}

// registration reads a registration through the storefront API, as the
// shop's success page does.
func (s shopRun) registration(t *testing.T, id string) (status, paymentStatus string) {
	t.Helper()
	st, body := call(t, "GET", s.api+"/v1/storefront/registration/"+url.PathEscape(id),
		map[string]string{"x-service-key": "pk_demo", "Origin": s.shop}, "")
	var r struct {
		Data struct {
			Status  string `json:"status"`
			Payment struct {
				PaymentStatus string `json:"paymentStatus"`
			} `json:"payment"`
		} `json:"data"`
	}
	if st != 200 || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("registration %s: %d %s", id, st, body)
	}
	return r.Data.Status, r.Data.Payment.PaymentStatus
}

// browser starts Chromium at phone size; each test's steps together must
// end well within the bound.
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx := browsertest.Timeout(t, browsertest.New(t, browsertest.Options{}), 45*time.Second)
	do(t, ctx, browsertest.Phone)
	return ctx
}

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('.alert, #totals, #pay-card')].map(e => e.textContent).join(' | ')`))
		browsertest.Shot(t, ctx, "failed")
		t.Fatalf("%v\nat %s, alerts: %q", err, loc, msg)
	}
}

// shot saves the page at phone size and, for the main pages, at desktop
// size too.
func shot(t *testing.T, ctx context.Context, name string, desktop bool) {
	t.Helper()
	// From the top: a full-page shot of a scrolled page draws sticky
	// elements where the viewport was.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	browsertest.Shot(t, ctx, name+"-phone")
	if desktop {
		do(t, ctx, browsertest.Desktop)
		browsertest.Shot(t, ctx, name+"-desktop")
		do(t, ctx, browsertest.Phone)
	}
}

// viewShot saves what the screen shows (not the whole page), as
// screenshots/<Test>-<name>.png.
func viewShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(browsertest.Dir(t), t.Name()+"-"+name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openEvent opens the shop's events list and clicks ev's card, once the
// card's text includes says when says is given; then come the actions.
func openEvent(shop, ev, says string, then ...chromedp.Action[chromedp.Void]) []chromedp.Action[chromedp.Void] {
	card := `[data-event="` + ev + `"]`
	out := []chromedp.Action[chromedp.Void]{chromedp.Navigate(shop + "/"), chromedp.WaitVisible(chromedp.CSS(card + ` a`))}
	if says != "" {
		out = append(out, until(`document.querySelector('`+card+`').textContent.includes('`+says+`')`))
	}
	return append(append(out, chromedp.Click(chromedp.CSS(card+` a`))), then...)
}

// until waits for a JavaScript condition of the page to hold, across
// navigations (an evaluation during one fails and is retried).
func until(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		// Within the test's bound, so that a failure still has time for
		// its screenshot.
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for {
			ok, err := chromedp.Evaluate[bool](`!!(`+js+`)`)(ctx, t)
			if err == nil && ok {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s: %w (last error %v)", js, ctx.Err(), err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// The hosted card page's Pay button (its text begins with "Pay").
const payButton = `//button[starts-with(normalize-space(.), "Pay")]`

// buyer fills the buyer form of the shop.
func buyer(name, email string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.SendKeys(chromedp.ID("name"), name),
		chromedp.SendKeys(chromedp.ID("email"), email),
	}
}

// payOnHostedPage goes from the shop's order button to the hosted card
// page and pays there; it returns the success page's URL.
func payOnHostedPage(t *testing.T, ctx context.Context, shop string) string {
	t.Helper()
	do(t, ctx, chromedp.Click(chromedp.ID("pay-card")), until(`location.pathname.startsWith('/pay/card/')`),
		chromedp.WaitVisible(chromedp.ID("card")))
	shot(t, ctx, "4-hosted-card-page", true)
	do(t, ctx, chromedp.Click(payButton), until(`location.pathname === '/success.html'`),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-status="confirmed"]`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc, shop+"/success.html?") {
		t.Fatalf("paid, the buyer is at %s, not on the shop's success page", loc)
	}
	return loc
}

// checkSuccess: the success page names the session in its URL (the
// placeholder replaced) and shows the registration confirmed, as the API
// says it is.
func checkSuccess(t *testing.T, ctx context.Context, s shopRun, loc string) {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	reg, sess := u.Query().Get("registration"), u.Query().Get("session")
	if reg == "" || sess == "" || strings.Contains(loc, "{") || strings.Contains(loc, "%7B") {
		t.Fatalf("success URL %s lacks the registration or the session id", loc)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("result")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "registration is confirmed") || !strings.Contains(text, orderRef(reg)) {
		t.Fatalf("success page says %q, want the order reference %s", text, orderRef(reg))
	}
	checkOrderRef(t, ctx, "#facts", reg)
	shot(t, ctx, "5-success", true)
	if st, pay := s.registration(t, reg); st != "confirmed" || pay != "paid" {
		t.Fatalf("the API says registration %s is %s / %s, want confirmed / paid", reg, st, pay)
	}
}

// orderRef is the short order reference the shop shows for an order id
// (js/common.js, Shop.orderRef; docs/decisions.md): the first ten
// characters after the id's leading "o", in capitals, in two groups of five.
func orderRef(id string) string {
	return strings.ToUpper(id[1:6] + "-" + id[6:11])
}

// checkOrderRef: the page shows order id by its short reference, whole (no
// line breaks it), with the full id in its data-order-id and, folded away,
// in the "Full order id" details for support; the raw id is not in view.
func checkOrderRef(t *testing.T, ctx context.Context, in, id string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const r = document.querySelector(`+"`"+in+` .ref`+"`"+`);
		const d = document.querySelector('details.order-id');
		return { ref: r.textContent, id: r.dataset.orderId, lines: r.getClientRects().length, full: d.textContent,
			open: d.open, shown: document.body.innerText.includes(r.dataset.orderId) };
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ref": orderRef(id), "id": id, "lines": 1.0, "full": "Full order id" + id, "open": false, "shown": false}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("the order reference: %v, want %v", got, want)
		}
	}
}

// GA: two General tickets through the shop's event page, paid on the
// hosted card page, end on the shop's success page, confirmed.
func TestBrowserDemoShopGA(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	// The count is said once every event has loaded, the seated one too
	// (not waited for here otherwise): wait for the sentence.
	do(t, ctx, chromedp.Navigate(s.shop+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-event="ev_demo_ga"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-event="ev_demo_free"] a`)),
		until(`document.getElementById('status').textContent === '7 events on sale.'`))
	shot(t, ctx, "1-events", true)
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-event="ev_demo_ga"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_general"] .plus`)))
	shot(t, ctx, "2-event", true)
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)))
	// On a phone the summary is below the fold: a bar at the bottom of the
	// screen shows the quoted total, 2 x 25.00 and a fee of 1.50 a ticket.
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("bar")), until(`document.getElementById('bar-total').textContent === '$53.00'`))
	viewShot(t, ctx, "2-event-bar-phone")
	// With the keyboard up the bar would cover the field being typed in:
	// it hides while a field has the focus.
	do(t, ctx, chromedp.Focus(chromedp.ID("q-ticket-tk_general")), until(`document.getElementById('bar').hidden`))
	viewShot(t, ctx, "2-event-typing-phone")
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`),
		chromedp.WaitVisible(chromedp.ID("bar")),
		// "Review order" takes the focus to the summary's heading.
		chromedp.Click(chromedp.ID("bar-go")), until(`document.activeElement.id === 'summary-h'`))
	do(t, ctx, buyer("Ada Lovelace", "ada@example.com")...)
	// 2 x 25.00 and a fee of 1.50 a ticket, quoted by the API.
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $53.00 by card' && !document.getElementById('pay-card').disabled`))
	shot(t, ctx, "3-order", true)
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)
}

// The shop offers only the payment methods ticketd takes, as the event
// detail's paymentMethods says: without a wallet processor
// (TICKETD_WALLET_PROCESSOR=none) the wallet button is not shown, on the GA
// and the seated page, and the card still pays.
func TestBrowserDemoShopOffersOnlyTheMethodsTicketdTakes(t *testing.T) {
	s := startShopWith(t, func(c *config) { c.WalletProcessor = "" })
	ctx := browser(t)
	do(t, ctx, openEvent(s.shop, "ev_demo_ga", "",
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)))...)
	do(t, ctx, buyer("Ada Lovelace", "ada@example.com")...)
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $26.50 by card' && !document.getElementById('pay-card').disabled`),
		until(`document.getElementById('pay-wallet').hidden && !document.getElementById('pay-card').hidden`))
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_seated"), chromedp.WaitVisible(chromedp.ID("pay-card")),
		until(`document.getElementById('pay-wallet').hidden`))
}

// A free event: from the start the page offers free tickets, with no
// payment choice, wallet or discount code; registering confirms at once,
// with no payment page.
func TestBrowserDemoShopFree(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, openEvent(s.shop, "ev_demo_free", "", chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_free"] .plus`)))...)
	// before a ticket is chosen: no "Continue to payment", no wallet, no
	// discount code, no checkout-page note
	free := `(() => { const v = (id) => { const e = document.getElementById(id); return !e.hidden && e.getClientRects().length > 0; };
		return document.getElementById('pay-card').textContent + '|' + ['pay-card', 'pay-wallet', 'discount-box', 'secure'].filter(v).join(','); })()`
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](free)); err != nil || got != "Get free tickets|pay-card" {
		t.Fatalf("the free event's page before a ticket is chosen: %q (%v), want the button \"Get free tickets\" and no wallet, discount code or payment note", got, err)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-ticket="tk_free"] .plus`)))
	do(t, ctx, buyer("Grace Hopper", "grace@example.com")...)
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Get free tickets' && !document.getElementById('pay-card').disabled`))
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](free)); err != nil || got != "Get free tickets|pay-card" {
		t.Fatalf("the free event's page with a ticket chosen: %q (%v), want the button \"Get free tickets\" alone", got, err)
	}
	shot(t, ctx, "1-order", true)
	do(t, ctx, chromedp.Click(chromedp.ID("pay-card")), chromedp.WaitVisible(chromedp.CSS(`#done[data-status="confirmed"]`)))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.HasPrefix(loc, s.shop+"/event.html") {
		t.Fatalf("a free registration left the shop for %s", loc)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "registration is confirmed") || !strings.Contains(text, "grace@example.com") {
		t.Fatalf("confirmation says %q", text)
	}
	shot(t, ctx, "2-confirmed", true)
	a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#done .ref`), "data-order-id"))
	if err != nil {
		t.Fatal(err)
	}
	id := a.Value
	checkOrderRef(t, ctx, "#done", id)
	if st, _ := s.registration(t, id); st != "confirmed" {
		t.Fatalf("the API says free registration %s is %s", id, st)
	}
}

// A declined card: the hosted page says so in words, the buyer stays on
// it, and the registration stays unpaid.
func TestBrowserDemoShopDecline(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_ga"),
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_vip"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_vip"] .plus`)))
	do(t, ctx, buyer("Alan Turing", "alan@example.com")...)
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $61.50 by card' && !document.getElementById('pay-card').disabled`),
		chromedp.Click(chromedp.ID("pay-card")), until(`location.pathname.startsWith('/pay/card/')`),
		chromedp.WaitVisible(chromedp.ID("card")),
		chromedp.SetValue(chromedp.ID("card"), "4000 0000 0000 0002"))
	shot(t, ctx, "1-declining-card", false)
	do(t, ctx, chromedp.Click(payButton), until(`/declined/i.test(document.body.innerText)`))
	shot(t, ctx, "2-declined", true)
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.Contains(loc, "/pay/card/") {
		t.Fatalf("after the decline the buyer is at %s, not on the card page", loc)
	}
	text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if !strings.Contains(strings.ToLower(text), "card was declined") {
		t.Fatalf("the card page says %q", text)
	}
	// Cancel goes back to the shop's cancel page, which names the
	// registration: still awaiting payment, nothing paid.
	do(t, ctx, chromedp.Click(`//button[starts-with(normalize-space(.), "Cancel")]`), until(`location.pathname === '/cancel.html'`),
		until(`/reserved until/.test(document.getElementById('status').textContent)`))
	shot(t, ctx, "3-cancelled", true)
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	u, _ := url.Parse(loc)
	id := u.Query().Get("registration")
	if id == "" || strings.Contains(id, "{") {
		t.Fatalf("cancel URL %s does not name the registration", loc)
	}
	if st, pay := s.registration(t, id); st != "awaiting_payment" || pay != "unpaid" {
		t.Fatalf("after a decline registration %s is %s / %s, want awaiting_payment / unpaid", id, st, pay)
	}
	// Its success page, opened now, says the payment is being confirmed.
	do(t, ctx, chromedp.Navigate(s.shop+"/success.html?registration="+url.QueryEscape(id)),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-status="pending"]`)))
	if text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("result"))); !strings.Contains(text, "being confirmed") {
		t.Fatalf("the success page of an unpaid registration says %q", text)
	}
	shot(t, ctx, "4-success-page-while-unpaid", false)
	// The buyer changes their mind: back on the cancel page, the same
	// registration is paid with the test card the hosted page offers.
	do(t, ctx, chromedp.Navigate(loc), until(`!document.getElementById('again').hidden`),
		chromedp.Click(chromedp.ID("again")), until(`location.pathname.startsWith('/pay/card/')`),
		chromedp.WaitVisible(chromedp.ID("card")), chromedp.Click(payButton), until(`location.pathname === '/success.html'`),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-status="confirmed"]`)))
	loc, _ = chromedp.Run(ctx, chromedp.Location())
	if !strings.Contains(loc, "registration="+url.QueryEscape(id)) {
		t.Fatalf("paid again, the success page %s is not registration %s's", loc, id)
	}
	shot(t, ctx, "5-paid-after-all", false)
	if st, pay := s.registration(t, id); st != "confirmed" || pay != "paid" {
		t.Fatalf("paid after a decline, registration %s is %s / %s", id, st, pay)
	}
}

// inPicker waits until the seat picker in the shop's iframe shows seat
// label, and returns the iframe's node, to query inside it (browsertest
// keeps the cross-origin frame in the page's process).
func inPicker(t *testing.T, ctx context.Context, label string) *chromedp.Node {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#picker")))
		if err == nil && len(nodes) == 1 {
			try, cancel := context.WithTimeout(ctx, time.Second)
			err = chromedp.Do(try, chromedp.WaitVisible(chromedp.CSS(`[data-seat-label="`+label+`"]`), chromedp.FromNode(nodes[0])))
			cancel()
			if err == nil {
				return nodes[0]
			}
		}
		if time.Now().After(deadline) {
			browsertest.Shot(t, ctx, "failed")
			t.Fatalf("the seat picker never showed seat %s in the shop's page (%v)", label, err)
		}
	}
}

// waitSeat waits until seat label is in state in the picker, settled: no
// hold or release call about it out (the picker marks such a seat
// aria-busy, in the state it had).
func waitSeat(t *testing.T, ctx context.Context, frame *chromedp.Node, label, state string) {
	t.Helper()
	sel := `[data-seat-label="` + label + `"][data-state="` + state + `"]:not([aria-busy="true"])`
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel), chromedp.FromNode(frame))); err != nil {
		a, _ := chromedp.Run(ctx, chromedp.Attributes(chromedp.CSS(`[data-seat-label="`+label+`"]`), chromedp.FromNode(frame)))
		t.Fatalf("seat %s in the picker: %v, want %s and settled (%v)", label, a, state, err)
	}
}

// Seats: the shop embeds ticketd's seat picker; two seats picked in it
// (one by mouse, one by keyboard) reach the shop's page as the picker's
// held message, are quoted, registered with their hold token, paid on the
// hosted card page and confirmed.
func TestBrowserDemoShopSeated(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, openEvent(s.shop, "ev_demo_seated", "", until(`location.pathname === '/seated.html'`))...)
	checkSeatedPage(t, ctx, inPicker(t, ctx, "A-1"))
	shot(t, ctx, "1-seat-map", true)
	frame := inPicker(t, ctx, "A-1") // the desktop shot may have redrawn the map
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="A-1"]`), chromedp.FromNode(frame)),
		chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-1"]`)))
	do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-seat-label="A-2"]`), chromedp.FromNode(frame)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-2"]`)))
	for _, l := range []string{"A-1", "A-2"} {
		waitSeat(t, ctx, frame, l, "mine")
	}
	// On a phone the hold's time and the picker's messages sit above the
	// map, out of view while the buyer taps seats: the summary under the
	// map shows them again (for the eye; the live region is read out).
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="X-1"]`), chromedp.FromNode(frame)))
	echo := inFrame[string](t, ctx, frame, `(() => { const n = document.getElementById('summary-note');
		return getComputedStyle(n).display !== 'none' && n.textContent.endsWith('Seat X-1 is not for sale.') &&
			document.getElementById('live').textContent.startsWith('Seat X-1 is not for sale.') && n.textContent; })()`)
	if !regexp.MustCompile(`^Held \d+:\d\d · Seat X-1 is not for sale\.$`).MatchString(echo) {
		t.Fatalf("under the map the picker says %q, want the hold's time and its last message", echo)
	}
	shot(t, ctx, "2-summary-echo", false)
	// The shop says the total with fees, once: which seats, and their
	// subtotal, the picker says in its own live region.
	do(t, ctx, until(`document.getElementById('status').textContent === 'Your order total, with fees: $84.00.'`))
	do(t, ctx, buyer("Katherine Johnson", "katherine@example.com")...)
	// Two Stalls seats at 40.00 and a fee of 2.00 a seat.
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $84.00 by card' && !document.getElementById('pay-card').disabled`))
	shot(t, ctx, "3-order", true)
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)
}

// inFrame evaluates js in the picker's frame until it is truthy, and
// returns it.
func inFrame[T any](t *testing.T, ctx context.Context, frame *chromedp.Node, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](js, chromedp.WithPollingInFrame(frame), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		browsertest.Shot(t, ctx, "failed")
		t.Fatalf("in the picker's frame, %s: %v", js, err)
	}
	return v
}

// checkSeatedPage checks the seated page on a phone (issue 21): one
// title, the shop's (the framed picker draws no header); one TEST MODE
// notice, the shop's banner (the framed picker draws no TEST MODE line);
// one hold notice, the picker's; the frame as tall as the picker, with
// nothing empty under it; the Box row marked not for sale, not as sold;
// the shop's payment note naming no vendor (the shop is the host's); the
// best-available Price choice wide enough for every choice's words; and
// the map, scrolled to, opening at its start: row A's label, its first
// seat and the stage's label in view with the picker's selection summary,
// which is as wide as the panels above it (on a phone and on a desktop).
func checkSeatedPage(t *testing.T, ctx context.Context, frame *chromedp.Node) {
	t.Helper()
	page, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const main = document.querySelector('main');
		return { h1: [...document.querySelectorAll('h1')].map((h) => h.textContent).join('|'),
			held: (main.innerText.match(/held/gi) || []).length, testMode: (document.body.innerText.match(/TEST MODE/g) || []).length,
			secure: document.querySelector('#shop .secure').textContent.trim(), vendor: /ticketd/i.test(document.getElementById('shop').innerText) };
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	in := inFrame[map[string]any](t, ctx, frame, `(() => {
		const x = document.querySelector('[data-seat-label="X-1"]');
		const shown = (sel) => getComputedStyle(x.querySelector(sel)).display !== 'none';
		const box = [...document.querySelectorAll('#legend li')].find((li) => li.textContent.startsWith('Box'));
		return { header: document.querySelector('.event').getClientRects().length, h1: [...document.querySelectorAll('h1')].filter((h) => h.getClientRects().length).length,
			name: document.body.innerText.includes('Demo Concert Hall'), held: document.body.innerText.match(/held for you/gi).length,
			testMode: document.body.innerText.split('TEST MODE').length - 1,
			state: x.dataset.state, label: x.getAttribute('aria-label'), disabled: x.getAttribute('aria-disabled'),
			mark: shown('.mark-not-for-sale') && !shown('.mark-booked'), legend: !!box && !!box.querySelector('.key-bar') && box.textContent };
	})()`)
	want := map[string]any{"header": 0.0, "h1": 0.0, "name": false, "held": 1.0, "testMode": 0.0, "state": "not-for-sale",
		"label": "Seat X-1, Box, not for sale", "disabled": "true", "mark": true, "legend": "Boxnot for sale"}
	for k, v := range want {
		if in[k] != v {
			t.Fatalf("the picker in the seated page: %v, want %v", in, want)
		}
	}
	if page["secure"] != "Secure payment on the checkout page" || page["vendor"] != false {
		t.Fatalf("the shop's order form says %q (names ticketd: %v), want \"Secure payment on the checkout page\" and no vendor's name", page["secure"], page["vendor"])
	}
	// The Price choice is as wide as its widest choice needs (on a phone
	// it once read "Any pri…").
	if fit := inFrame[map[string]float64](t, ctx, frame, `(() => {
		const s = document.getElementById('best-cat'), c = s.cloneNode(true);
		c.style.cssText = 'position:absolute;visibility:hidden;width:auto;min-width:0';
		document.body.appendChild(c);
		const need = c.getBoundingClientRect().width;
		c.remove();
		return { has: s.getBoundingClientRect().width, need };
	})()`); fit["has"] < fit["need"]-0.5 {
		t.Fatalf("on a phone the best-available Price choice is %v px wide, its words need %v", fit["has"], fit["need"])
	}
	if page["h1"] != "Demo Concert Hall" || page["held"] != 0.0 || page["testMode"] != 1.0 {
		t.Fatalf("the seated page: headings %q, %v mentions of holding outside the picker, %v TEST MODE notices (want the event's name once, "+
			"none: the picker has the one hold notice, and the shop's one TEST MODE notice)", page["h1"], page["held"], page["testMode"])
	}
	// The frame takes the picker's height (its height message): no empty
	// space below the picker's summary, in the frame or under it.
	inFrame[bool](t, ctx, frame, `innerHeight >= document.documentElement.scrollHeight - 1 &&
		innerHeight - document.getElementById('picker').getBoundingClientRect().bottom <= 1`)
	do(t, ctx, until(`document.querySelector('.map-panel').getBoundingClientRect().bottom - document.getElementById('picker').getBoundingClientRect().bottom <= 1`))
	// Scrolled down to the map, as a buyer does.
	top := inFrame[float64](t, ctx, frame, `document.querySelector('.map-card').getBoundingClientRect().top + 0.001`)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.scrollTo(0, document.getElementById('picker').getBoundingClientRect().top + scrollY + %f - 8)`, top)))
	box := func(sel string) string {
		return `(() => { const r = document.querySelector('` + sel + `').getBoundingClientRect(); return { l: r.left, r: r.right, t: r.top, b: r.bottom }; })()`
	}
	rects := inFrame[map[string]map[string]float64](t, ctx, frame, `({ seat: `+box(`[data-seat-label="A-1"] .seat-bg`)+`,
		label: `+box(`[aria-label="Row A"] .row-label`)+`, stage: `+box(`.stage-text`)+`, summary: `+box(`#summary`)+`, wrap: `+box(`#map-wrap`)+`,
		card: `+box(`.map-card`)+`, scroll: { l: document.getElementById('map-wrap').scrollLeft } })`)
	view, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`({ top: document.getElementById('picker').getBoundingClientRect().top, h: innerHeight })`))
	if err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "2-map-in-view")
	wrap := rects["wrap"]
	for _, k := range []string{"seat", "label", "stage", "summary"} {
		r := rects[k]
		inView := view["top"]+r["t"] >= 0 && view["top"]+r["b"] <= view["h"]
		inMap := k == "summary" || r["l"] >= wrap["l"] && r["r"] <= wrap["r"]
		if !inView || !inMap {
			t.Fatalf("on a phone, scrolled to the map, the %s is at %v (the frame at %v in a %v px high view; the map's box %v, scrolled %v): want it in view",
				k, r, view["top"], view["h"], wrap, rects["scroll"]["l"])
		}
	}
	// the summary bar is as wide as the panels above it, on a phone and on
	// a desktop
	aligned := `(() => { const a = document.getElementById('summary').getBoundingClientRect(), b = document.querySelector('.map-card').getBoundingClientRect();
		return Math.abs(a.left - b.left) <= 1 && Math.abs(a.right - b.right) <= 1 ? 'yes' : 'no: summary ' + a.left + '-' + a.right + ', map ' + b.left + '-' + b.right; })()`
	if got := inFrame[string](t, ctx, frame, aligned); got != "yes" {
		t.Fatalf("on a phone the picker's summary bar is not as wide as the map above it: %s", got)
	}
	do(t, ctx, browsertest.Desktop)
	do(t, ctx, until(`innerWidth === 1280`))
	if got := inFrame[string](t, ctx, frame, aligned); got != "yes" {
		t.Fatalf("on a desktop the picker's summary bar is not as wide as the map above it: %s", got)
	}
	do(t, ctx, browsertest.Phone)
}

// A cart of several lines: the access code unlocks the hidden Crew
// ticket, one General ticket with the discount code, parking, paid with
// the wallet: the quote and the registration agree with the hosted page.
func TestBrowserDemoShopCartWithCodesAndWallet(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=dEmO1"),
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.CSS(`#access summary`)),
		chromedp.SendKeys(chromedp.ID("access-code"), "NOPE"),
		chromedp.Click(chromedp.ID("access-apply")),
		until(`/does not unlock/.test(document.getElementById('error').textContent)`))
	shot(t, ctx, "1-wrong-access-code", false)
	do(t, ctx, chromedp.SetValue(chromedp.ID("access-code"), "CREW2027"),
		chromedp.Click(chromedp.ID("access-apply")),
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_crew"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_crew"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-extra="ex_parking"] .plus`)),
		chromedp.SendKeys(chromedp.ID("discount"), "early10"),
		chromedp.Click(chromedp.ID("discount-apply")))
	do(t, ctx, buyer("Hedy Lamarr", "hedy@example.com")...)
	// General 25.00 - 10%, Crew free, parking 10.00 and a fee of 1.50 for
	// the one paid ticket.
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $34.00 by card' && !document.getElementById('pay-wallet').disabled`),
		until(`/EARLY10 applied/.test(document.getElementById('discount-note').textContent)`))
	shot(t, ctx, "2-order", true)
	do(t, ctx, chromedp.Click(chromedp.ID("pay-wallet")), until(`location.pathname.startsWith('/pay/wallet/')`),
		chromedp.WaitVisible(payButton))
	if text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "$34.00") {
		t.Fatalf("the wallet page does not show the quoted total:\n%s", text)
	}
	shot(t, ctx, "3-wallet-page", false)
	do(t, ctx, chromedp.Click(payButton), until(`location.pathname === '/success.html'`),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-status="confirmed"]`)))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	checkSuccess(t, ctx, s, loc)
}

// serveSite serves site on a port of its own until the test ends and
// returns its address as a buyer opens it (localhost, a key domain of
// pk_demo).
func serveSite(t *testing.T, site demosite.Site) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: site.Handler()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return shopURL(ln.Addr())
}

// unpaid registers one General ticket through the storefront API and
// returns the registration's id: awaiting payment, never paid.
func (s shopRun) unpaid(t *testing.T) string {
	t.Helper()
	st, body := call(t, "POST", s.api+"/v1/storefront/register-guest",
		map[string]string{"x-service-key": "pk_demo", "Origin": s.shop, "content-type": "application/json"},
		`{"eventId":"ev_demo_ga","selectedTicketId":"tk_general","quantity":1,"name":"Mary Jackson","email":"mary@example.com"}`)
	var r struct {
		Data struct {
			RegistrationID string `json:"registrationId"`
		} `json:"data"`
	}
	if st != 200 || json.Unmarshal([]byte(body), &r) != nil || r.Data.RegistrationID == "" {
		t.Fatalf("register-guest: %d %s", st, body)
	}
	return r.Data.RegistrationID
}

// waitsAtMost: the success page, its limit reached, says the ticket will
// arrive by e-mail.
func waitsAtMost(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(page), until(`document.getElementById('result').dataset.status === 'timeout'`))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("result")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "arrive by e-mail") || !strings.Contains(text, "order reference") || strings.Contains(text, "Confirming your payment") {
		t.Fatalf("past its limit the success page says %q", text)
	}
	shot(t, ctx, "timeout", false)
}

// A payment that is never confirmed: past the shop's poll limit the
// success page stops waiting and says the ticket will arrive by e-mail.
func TestBrowserDemoShopSuccessPageGivesUp(t *testing.T) {
	s := startShop(t)
	id := s.unpaid(t)
	shop := serveSite(t, demosite.Site{AppURL: s.api, PublishableKey: "pk_demo", Events: demoEvents, PollLimit: 1500 * time.Millisecond})
	ctx := browser(t)
	waitsAtMost(t, ctx, shop+"/success.html?registration="+url.QueryEscape(id))
	// It names the order by the reference it asks the buyer to quote.
	checkOrderRef(t, ctx, "#facts", id)
}

// A ticket service that accepts the connection and never answers: the
// success page does not wait on the stalled call past its limit.
func TestBrowserDemoShopSuccessPageStalledService(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	shop := serveSite(t, demosite.Site{AppURL: "http://" + ln.Addr().String(), PublishableKey: "pk_demo", Events: demoEvents, PollLimit: 1500 * time.Millisecond})
	ctx := browser(t)
	waitsAtMost(t, ctx, shop+"/success.html?registration=reg_stalled")
}

// failOnce makes the page's next call to path answer as a busy ticket
// service would (503 SERVICE_UNAVAILABLE, the flat error envelope), once,
// and counts the page's register-guest calls in window.registers.
func failOnce(path string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
  const real = window.fetch;
  let failed = false;
  window.registers = 0;
  window.fetch = function (u, o) {
    if (String(u).endsWith('/register-guest')) window.registers++;
    if (!failed && String(u).endsWith(%q)) {
      failed = true;
      return Promise.resolve(new Response(JSON.stringify({ success: false, code: 'SERVICE_UNAVAILABLE', message: 'busy' }),
        { status: 503, headers: { 'content-type': 'application/json' } }));
    }
    return real.apply(window, arguments);
  };
})()`, path))
}

// countHandledPolls, run in the picker's frame, counts in
// window.handledPolls the availability reads begun from then on whose
// answer the picker has handled: the count goes up in a task queued once
// the answer's JSON is read, so after the picker's own continuation (it
// applies the answer, or schedules the read again) has run.
const countHandledPolls = `(() => {
	window.handledPolls = 0;
	const real = window.fetch;
	window.fetch = function (u) {
		const p = real.apply(this, arguments);
		if (!String(u).includes('/availability')) return p;
		return p.then((res) => {
			const json = res.json.bind(res);
			res.json = () => json().finally(() => setTimeout(() => { window.handledPolls++; }, 0));
			return res;
		});
	};
	return true;
})()`

// A seated checkout that fails for a moment (the service busy): the
// registration holds the seats now, not the hold token, so pressing Pay
// again pays that same registration instead of registering the spent
// token again (HOLD_EXPIRED, the seats stranded). The focus stays on the
// button pressed, not on <body>.
func TestBrowserDemoShopSeatedCheckoutRetry(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_seated"))
	frame := inPicker(t, ctx, "A-5")
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="A-5"]`), chromedp.FromNode(frame)),
		chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-5"]`)))
	do(t, ctx, buyer("Dorothy Vaughan", "dorothy@example.com")...)
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $42.00 by card'`),
		failOnce("/card/create-checkout-session"),
		chromedp.Click(chromedp.ID("pay-card")),
		until(`/busy/.test(document.getElementById('pay-error').textContent) && !document.getElementById('pay-card').getAttribute('aria-busy')`))
	if id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id || document.activeElement.tagName`)); id != "pay-card" {
		t.Fatalf("after the failed checkout the focus is on %s, not the Pay button", id)
	}
	shot(t, ctx, "1-checkout-failed", false)
	// The seat has gone from the hold to the registration: the picker
	// says so within its poll, and the page keeps the registration.
	do(t, ctx, until(`document.querySelector('#seats [data-seat="A-5"]')`))
	// Two whole picker polls after the failure, each begun after it and
	// handled by the picker (its answer applied, or the read redone), and
	// the held message they may have posted delivered to the page: then
	// the page must still hold the one registration. The frame counts
	// them itself, once each answer's handler has run: a resource-timing
	// entry is there as soon as the body arrived, before the picker
	// handled it.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](countHandledPolls, chromedp.WithPollingInFrame(frame))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.handledPolls >= 2`, chromedp.WithPollingInFrame(frame),
		chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("the picker did not poll twice: %v", err)
	}
	browsertest.Fence(t, ctx, frame)
	do(t, ctx, until(`document.querySelector('#seats [data-seat="A-5"]')`))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.registers`)); n != 1 {
		t.Fatalf("%d register-guest calls before the retry, want 1", n)
	}
	do(t, ctx, chromedp.Click(chromedp.ID("pay-card")), until(`location.pathname.startsWith('/pay/card/')`),
		chromedp.WaitVisible(chromedp.ID("card")), chromedp.Click(payButton), until(`location.pathname === '/success.html'`),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-status="confirmed"]`)))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	checkSuccess(t, ctx, s, loc)
}

// A buyer detail the API refuses (a phone number too long): the focus
// moves to that field, marked invalid, not to <body>.
func TestBrowserDemoShopRefusedFieldTakesFocus(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_ga"),
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)))
	do(t, ctx, buyer("Annie Easley", "annie@example.com")...)
	// Set, not typed: maxlength stops typing, not a value set (or pasted
	// by an autofill).
	do(t, ctx, chromedp.SetValue(chromedp.ID("phone"), strings.Repeat("5", 40)),
		until(`document.getElementById('pay-card').textContent === 'Pay $26.50 by card'`),
		chromedp.Click(chromedp.ID("pay-card")),
		until(`document.getElementById('pay-error').textContent !== ''`))
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id + ' ' + document.activeElement.getAttribute('aria-invalid')`))
	if got != "phone true" {
		t.Fatalf("after the refused registration the focus is on %q, want the phone field marked invalid", got)
	}
	shot(t, ctx, "1-refused-phone", false)
}

// A quantity changed just before Pay: the first click pays, for the new
// quantity, once its quote is in.
func TestBrowserDemoShopPayRightAfterChange(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_ga"),
		chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)))
	do(t, ctx, buyer("Evelyn Boyd", "evelyn@example.com")...)
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $26.50 by card'`),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_general"] .plus`)),
		chromedp.Click(chromedp.ID("pay-card")),
		until(`location.pathname.startsWith('/pay/card/')`), chromedp.WaitVisible(chromedp.ID("card")))
	if text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "$53.00") {
		t.Fatalf("the card page does not show two tickets' total:\n%s", text)
	}
}

// The seated page takes held messages from the picker's frame only: one
// posted by the page itself, or claiming the picker's origin from another
// window, changes nothing.
func TestBrowserDemoShopSeatedIgnoresForgedHeld(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_seated"))
	frame := inPicker(t, ctx, "A-7")
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="A-7"]`), chromedp.FromNode(frame)),
		chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-7"]`)),
		chromedp.Evaluate[chromedp.Void](`(() => {
  const forged = { type: 'held', seatLabels: ['B-1', 'B-2'], holdToken: 'forged', subtotal: 1 };
  const picker = new URL(document.getElementById('picker').src).origin;
  window.dispatchEvent(new MessageEvent('message', { data: forged, origin: picker, source: window }));
  window.addEventListener('message', (e) => { if (e.data === 'done') window.done = true; });
  window.postMessage(forged, '*');
  window.postMessage('done', '*'); // delivered after the forged one
})()`),
		until(`window.done`))
	seats, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#seats [data-seat]')].map(e => e.dataset.seat).join(',')`))
	if seats != "A-7" {
		t.Fatalf("after forged held messages the page lists seats %q, want A-7", seats)
	}
}

// The events page with two events that fail to load and one that
// loads: the one is listed, the failure said, and the count is of events
// on sale, in the singular.
func TestBrowserDemoShopEventsCount(t *testing.T) {
	s := startShop(t)
	shop := serveSite(t, demosite.Site{AppURL: s.api, PublishableKey: "pk_demo", Events: []string{"ev_nope", "ev_demo_free", "ev_gone"}})
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(shop+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-event="ev_demo_free"] a`)),
		until(`document.getElementById('status').textContent !== ''`))
	said, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('status').textContent + ' | ' + document.getElementById('error').textContent`))
	if !strings.HasPrefix(said, "1 event on sale. | Some events could not be loaded.") {
		t.Fatalf("the events page says %q", said)
	}
}

// roomPlace is the waiting room's place the shop keeps in the tab's
// sessionStorage (js/room.js), "" when none.
const roomPlace = `(JSON.parse(sessionStorage.getItem('room:ev_demo_room') || '{}').queueId || '')`

// The waiting room before the on-sale (the demo's T0, a minute after
// start): the event page asks for an e-mail and a number of tickets
// before anything else, the buyer joins by keyboard and sees their place,
// a progress bar, the time to the on-sale and the odds, said in the live
// region; a reload keeps the place; leaving gives it up.
func TestBrowserDemoShopWaitingRoom(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, openEvent(s.shop, "ev_demo_room", "Join the queue", chromedp.WaitVisible(chromedp.ID("room-email")))...)
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('order').hidden`)); !hidden {
		t.Fatal("the order form shows before the buyer joined the queue")
	}
	shot(t, ctx, "1-join", true)
	// By keyboard: Enter in the e-mail field joins.
	do(t, ctx, chromedp.SetValue(chromedp.ID("room-qty"), "2"),
		chromedp.Focus(chromedp.ID("room-email")), chromedp.SendKeys(chromedp.ID("room-email"), "ada@example.com"),
		chromedp.KeyEvent("\r"),
		until(`document.getElementById('room').dataset.state === 'waiting'`),
		until(`document.activeElement.id === 'room-headline'`),
		until(`/Sales start in \d+:\d\d/.test(document.getElementById('room-detail').textContent)`),
		until(`/in the queue/.test(document.getElementById('room-live').textContent)`))
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
  const bar = document.getElementById('room-progress');
  const fact = (n) => document.querySelector('#room-facts [data-fact="' + n + '"] dd').textContent;
  return [bar.getAttribute('role'), bar.getAttribute('aria-valuenow'), bar.getAttribute('aria-valuetext'),
    fact('position'), fact('odds'), fact('quantity'), document.getElementById('order').hidden].join('|');
})()`))
	if !strings.HasPrefix(got, "progressbar|0|Waiting for sales to start|1 (for now)|100%|2 tickets|true") {
		t.Fatalf("the place before the on-sale shows %q", got)
	}
	shot(t, ctx, "2-waiting", true)
	id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](roomPlace))
	if id == "" {
		t.Fatal("the page did not keep the place")
	}
	do(t, ctx, chromedp.Reload(), until(`document.getElementById('room').dataset.state === 'waiting'`),
		until(`document.querySelector('#room-facts [data-fact="position"]')`))
	if again, _ := chromedp.Run(ctx, chromedp.Evaluate[string](roomPlace)); again != id {
		t.Fatalf("after a reload the place is %q, want %q", again, id)
	}
	if vis, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById('room-join').hidden`)); vis {
		t.Fatal("after a reload the page asks to join again")
	}
	shot(t, ctx, "3-after-reload", false)
	do(t, ctx, chromedp.Click(chromedp.ID("room-leave")), until(`!document.getElementById('room-join').hidden`),
		until(`/left the queue/.test(document.getElementById('room-live').textContent)`))
	if left, _ := chromedp.Run(ctx, chromedp.Evaluate[string](roomPlace)); left != "" {
		t.Fatalf("after leaving the page still keeps place %q", left)
	}
	shot(t, ctx, "4-left", false)
}

// The waiting room from its on-sale (T0 a second after start): the buyer
// joins, is admitted ("you're in", with the pass's time left), a reload
// keeps the place, and the order form, filled in with the e-mail joined
// with and the tickets asked for, registers with the pass (sent as
// x-queue-pass without the buyer doing anything) and pays.
func TestBrowserDemoShopWaitingRoomBuys(t *testing.T) {
	bits := int64(12)
	s := startShopWith(t, func(c *config) {
		c.demoRoomT0, c.demoRoomWork = time.Second, &catalog.ProofOfWork{MinBits: &bits}
	})
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_room"), chromedp.WaitVisible(chromedp.ID("room-email")),
		// The room asks for a proof of work: the page solves it without the
		// buyer doing anything; the join goes with it.
		chromedp.Evaluate[chromedp.Void](`(() => {
  const real = window.fetch;
  window.fetch = function (u, o) {
    if (String(u).endsWith('/join')) window.sentWork = JSON.parse(o.body).work || null;
    return real.apply(window, arguments);
  };
})()`),
		chromedp.SendKeys(chromedp.ID("room-email"), "grace@example.com"),
		chromedp.SetValue(chromedp.ID("room-qty"), "2"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`document.getElementById('room').dataset.state === 'admitted'`),
		until(`/set aside for you/.test(document.getElementById('room-live').textContent)`),
		until(`!document.getElementById('order').hidden`))
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.getElementById('room-headline').textContent,
  document.getElementById('room-progress').getAttribute('aria-valuenow'),
  document.querySelector('#room-facts [data-fact="left"] dd').textContent,
  document.getElementById('email').value, document.getElementById('email').readOnly,
  document.getElementById('q-ticket-tk_rush').value].join('|')`))
	if !regexp.MustCompile(`^You’re in!\|100\|[12]:\d\d\|grace@example.com\|true\|2$`).MatchString(got) {
		t.Fatalf("admitted, the page shows %q", got)
	}
	if work, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.sentWork)`)); !strings.Contains(work, `"challenge":"w1.`) || !strings.Contains(work, `"nonce":"`) {
		t.Fatalf("the join went with work %s, want the solved challenge", work)
	}
	shot(t, ctx, "1-admitted", true)
	// The countdown is silent but for its last minute and last 15 seconds,
	// each said once: the page's clock is moved on to 45, then 10 seconds
	// before the pass's end, and back.
	warn := func(secsLeft int, want string) {
		t.Helper()
		do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
  window.realNow = window.realNow || Date.now;
  const [m, s] = document.querySelector('#room-facts [data-fact="left"] dd').textContent.split(':').map(Number);
  const skip = (m * 60 + s - %d) * 1000, now = Date.now(), real = window.realNow();
  Date.now = () => now + skip + (window.realNow() - real);
})()`, secsLeft)), until(fmt.Sprintf(`document.getElementById('room-live').textContent === %q`, want)))
	}
	warn(45, "One minute left to order your 2 tickets.")
	warn(10, "15 seconds left to order your 2 tickets.")
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`Date.now = window.realNow`))
	id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](roomPlace))
	do(t, ctx, chromedp.Reload(), until(`document.getElementById('room').dataset.state === 'admitted'`),
		until(`document.getElementById('q-ticket-tk_rush').value === '2'`))
	if again, _ := chromedp.Run(ctx, chromedp.Evaluate[string](roomPlace)); again == "" || again != id {
		t.Fatalf("after a reload the place is %q, want %q", again, id)
	}
	// The pass goes with register-guest: noted in sessionStorage, which
	// outlives the trip to the payment page.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const real = window.fetch;
  window.fetch = function (u, o) {
    if (String(u).endsWith('/register-guest')) sessionStorage.setItem('sentPass', (o && o.headers && o.headers['x-queue-pass']) || 'none');
    return real.apply(window, arguments);
  };
})()`))
	do(t, ctx, chromedp.SendKeys(chromedp.ID("name"), "Grace Hopper"),
		// 2 x 35.00 and a fee of 2.00 a ticket.
		until(`document.getElementById('pay-card').textContent === 'Pay $74.00 by card' && !document.getElementById('pay-card').disabled`))
	shot(t, ctx, "2-order", true)
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)
	if sent, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('sentPass') || ''`)); len(sent) < 16 {
		t.Fatalf("register-guest went with x-queue-pass %q", sent)
	}
	// Back on the event page, the place says the order was placed.
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_room"),
		until(`/placed your order/.test(document.getElementById('room-headline').textContent)`),
		until(`document.getElementById('order').hidden`))
	shot(t, ctx, "3-ordered", false)
}

// roomJoin joins the demo's waiting room through the storefront API, as
// another buyer's browser would, and returns the place's pass (admitted)
// or "".
func (s shopRun) roomJoin(t *testing.T, email string, quantity int) string {
	t.Helper()
	st, body := call(t, "POST", s.api+"/v1/storefront/queue/ev_demo_room/join",
		map[string]string{"x-service-key": "pk_demo", "Origin": s.shop, "content-type": "application/json"},
		fmt.Sprintf(`{"email":%q,"quantity":%d,"device":%q}`, email, quantity, "dev-"+email))
	var r struct {
		Data struct {
			State string `json:"state"`
			Pass  string `json:"pass"`
		} `json:"data"`
	}
	if st != 200 || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("join as %s: %d %s", email, st, body)
	}
	return r.Data.Pass
}

// The waiting room selling out: ten buyers are let in for all twenty
// tickets; the buyer joining next waits behind their passes, told it gets
// tickets only if some come back, and once the ten have registered is
// told the event is sold out, in words and in the live region; a buyer
// joining then is told at once.
func TestBrowserDemoShopWaitingRoomSoldOut(t *testing.T) {
	// Ten registrations from one address: no per-IP cap.
	s := startShopWith(t, func(c *config) { c.demoRoomT0, c.HoldsPerIP = time.Second, 0 })
	time.Sleep(time.Second) // T0
	passes := make([]string, 10)
	for i := range passes {
		if passes[i] = s.roomJoin(t, fmt.Sprintf("buyer%d@example.com", i), 2); passes[i] == "" {
			t.Fatalf("buyer %d of 10 was not let in", i)
		}
	}
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_room"), chromedp.WaitVisible(chromedp.ID("room-email")),
		chromedp.SendKeys(chromedp.ID("room-email"), "late@example.com"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`document.getElementById('room').dataset.state === 'waiting'`),
		until(`document.querySelector('#room-facts [data-fact="odds"] dd').textContent === 'Only if tickets come back'`))
	// No chance or wait is given (0% and "less than a minute" beside "next
	// in line" said nothing true): why it waits is said, and read out.
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.querySelector('#room-facts [data-fact="eta"] dd').textContent,
  document.getElementById('room-note').textContent, document.getElementById('room-live').textContent].join('|')`)); !strings.Contains(got, "Until tickets come back|") ||
		!strings.Contains(got, "set aside for buyers let in before you") || !strings.Contains(got, "only if some come back") {
		t.Fatalf("waiting behind every pass, the room says %q", got)
	}
	shot(t, ctx, "1-waiting-behind-passes", false)
	for i, pass := range passes {
		st, body := call(t, "POST", s.api+"/v1/storefront/register-guest",
			map[string]string{"x-service-key": "pk_demo", "Origin": s.shop, "content-type": "application/json", "x-queue-pass": pass},
			fmt.Sprintf(`{"eventId":"ev_demo_room","selectedTicketId":"tk_rush","quantity":2,"name":"Buyer %d","email":"buyer%d@example.com"}`, i, i))
		if st != 200 {
			t.Fatalf("buyer %d registers with their pass: %d %s", i, st, body)
		}
	}
	do(t, ctx, until(`document.getElementById('room').dataset.state === 'sold_out'`),
		until(`/Sold out/.test(document.getElementById('room-live').textContent)`))
	if text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("room-place"))); !strings.Contains(text, "Sold out") || !strings.Contains(text, "tickets come back") {
		t.Fatalf("sold out, the room says %q", text)
	}
	// The page heard the sell-out through a long-poll that said what it
	// showed (known=waiting), so an answer lost on its way is not waited
	// for.
	if sent, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`performance.getEntriesByType('resource').some(e => /\/status\?wait=\d+&known=waiting$/.test(e.name))`)); !sent {
		t.Fatal("the page's long-polls do not say the state it shows (known=waiting)")
	}
	// Its chance is not "0%" beside a detail that says tickets may come
	// back: the fact says the same as the detail.
	if odds, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#room-facts [data-fact="odds"] dd`))); odds != "Only if tickets come back" {
		t.Fatalf("sold out, the chance of tickets reads %q", odds)
	}
	shot(t, ctx, "2-sold-out", true)
	// Another buyer, another device, joins now.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`sessionStorage.clear(); localStorage.clear()`),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("room-email")),
		chromedp.SendKeys(chromedp.ID("room-email"), "later@example.com"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`/sold out/.test(document.getElementById('room-error').textContent)`))
	shot(t, ctx, "3-join-sold-out", false)
}

// The on-sale comes while the buyer waits in the pre-queue (T0 six
// seconds after start): the page reads the place at T0 by itself and
// lets the buyer in, with no reload (a long-poll held over T0 answers
// then). Should the test's start have taken past T0, it is skipped.
func TestBrowserDemoShopWaitingRoomOpens(t *testing.T) {
	s := startShopWith(t, func(c *config) { c.demoRoomT0 = 6 * time.Second })
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_room"), chromedp.WaitVisible(chromedp.ID("room-email")),
		chromedp.SendKeys(chromedp.ID("room-email"), "early@example.com"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`['waiting', 'admitted'].includes(document.getElementById('room').dataset.state)`))
	if pre, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`/Sales start in/.test(document.getElementById('room-detail').textContent)`)); !pre {
		t.Skip("the start took past T0: the buyer joined after it, so the pre-queue's turn to T0 cannot be seen")
	}
	viewShot(t, ctx, "1-pre-queue-phone")
	do(t, ctx, until(`document.getElementById('room').dataset.state === 'admitted'`),
		until(`!document.getElementById('order').hidden`))
	viewShot(t, ctx, "2-let-in-phone")
}

// showingPlace is the place in ev_demo_shows's line of showing sh the
// shop keeps in the tab's sessionStorage (js/room.js), "" when none.
func showingPlace(sh string) string {
	return `(JSON.parse(sessionStorage.getItem('room:ev_demo_shows:` + sh + `') || '{}').queueId || '')`
}

// successDate is the Date the success page shows ("" when none).
func successDate(ctx context.Context) string {
	date, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#facts div')].filter(d => d.querySelector('dt').textContent === 'Date').map(d => d.querySelector('dd').textContent).join('|')`))
	return date
}

// showingsLeft is what the storefront says each showing of event ev has
// left: "[{<id> <remaining>} ...]".
func (s shopRun) showingsLeft(t *testing.T, ev string) string {
	t.Helper()
	st, body := call(t, "GET", s.api+"/v1/storefront/events/"+ev, map[string]string{"x-service-key": "pk_demo", "Origin": s.shop}, "")
	var out struct {
		Data struct {
			Showings []struct {
				ID        string `json:"id"`
				Remaining int64  `json:"remaining"`
			} `json:"showings"`
		} `json:"data"`
	}
	if st != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("event %s: %d %s", ev, st, body)
	}
	return fmt.Sprint(out.Data.Showings)
}

// A waiting room on a multi-showing event (ev_demo_shows, a line per
// showing, from its on-sale): the page asks for a showing before the join
// (a radio group named by each showing's date and time), joins that
// showing's line and says which it is, keeps the place per showing (a
// reload, with or without the URL's showing, comes back to it; another
// showing shows its own line and hides the order form), and the order,
// admitted, registers for that showing with its pass and pays.
func TestBrowserDemoShopShowings(t *testing.T) {
	s := startShopWith(t, func(c *config) { c.demoRoomT0 = time.Second })
	ctx := browser(t)
	do(t, ctx, openEvent(s.shop, "ev_demo_shows", `3\u00a0showings`,
		chromedp.WaitVisible(chromedp.ID("showing-sh_sat")), chromedp.WaitVisible(chromedp.ID("room-email")))...)
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
  const box = document.getElementById('showings');
  const radios = [...box.querySelectorAll('input[type="radio"]')];
  return [box.tagName, document.getElementById(box.getAttribute('aria-labelledby')).textContent, radios.length,
    radios.filter(r => r.checked).length, radios.map(r => r.labels[0].textContent.replace(/\s+/g, ' ').trim()).join(' / '),
    document.getElementById('order').hidden].join('|');
})()`))
	// The showings' dates in the browser's time zone (UTC here).
	if want := "FIELDSET|Choose a showing|3|0|Fri, Nov 12, 2027 7:00 PM UTC 12 left / Sat, Nov 13, 2027 7:00 PM UTC 12 left / Sun, Nov 14, 2027 3:00 PM UTC 12 left|true"; got != want {
		t.Fatalf("the showing choice: %q, want %q", got, want)
	}
	// Joining with no showing chosen: the page says so and takes the
	// buyer to the choice.
	do(t, ctx, chromedp.SendKeys(chromedp.ID("room-email"), "ada@example.com"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`/Choose a showing/.test(document.getElementById('room-error').textContent)`),
		until(`document.activeElement.name === 'showing'`))
	shot(t, ctx, "1-choose", true)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const real = window.fetch;
  window.fetch = function (u, o) {
    if (String(u).endsWith('/join')) window.joinedShowing = JSON.parse(o.body).showingId || 'none';
    return real.apply(window, arguments);
  };
})()`),
		chromedp.Click(chromedp.ID("showing-sh_sat")),
		until(`new URLSearchParams(location.search).get('showing') === 'sh_sat'`),
		until(`/joining the queue for Sat, Nov 13, 2027/.test(document.getElementById('room-showing').textContent)`),
		chromedp.SetValue(chromedp.ID("room-qty"), "2"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`document.getElementById('room').dataset.state === 'admitted'`),
		until(`!document.getElementById('order').hidden`),
		until(`document.getElementById('q-ticket-tk_show').value === '2'`))
	got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`[window.joinedShowing,
  document.getElementById('room-showing').textContent, document.getElementById('order-showing').textContent,
  sessionStorage.getItem('room:ev_demo_shows') === null].join('|')`))
	if want := "sh_sat|Your place is in the queue for Sat, Nov 13, 2027 · 7:00 PM UTC.|Showing: Sat, Nov 13, 2027 · 7:00 PM UTC|true"; got != want {
		t.Fatalf("admitted, the page shows %q, want %q", got, want)
	}
	id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](showingPlace("sh_sat")))
	if id == "" {
		t.Fatal("the page did not keep the place in sh_sat's line")
	}
	shot(t, ctx, "2-admitted", true)
	// A reload, and the event's page without the URL's showing: the same
	// showing, the same place.
	for _, page := range []string{"", s.shop + "/event.html?event=ev_demo_shows"} {
		if page == "" {
			do(t, ctx, chromedp.Reload())
		} else {
			do(t, ctx, chromedp.Navigate(page))
		}
		do(t, ctx, until(`document.getElementById('room').dataset.state === 'admitted'`),
			until(`document.getElementById('showing-sh_sat').checked`),
			until(`document.getElementById('q-ticket-tk_show').value === '2'`))
		if again, _ := chromedp.Run(ctx, chromedp.Evaluate[string](showingPlace("sh_sat"))); again != id {
			t.Fatalf("after a reload (%q) the place is %q, want %q", page, again, id)
		}
	}
	// Another showing: its own line, no order form; back again, the place.
	do(t, ctx, chromedp.Click(chromedp.ID("showing-sh_fri")),
		until(`!document.getElementById('room-join').hidden && document.getElementById('order').hidden`),
		until(`/joining the queue for Fri, Nov 12, 2027/.test(document.getElementById('room-showing').textContent)`))
	shot(t, ctx, "3-other-showing", false)
	do(t, ctx, chromedp.Click(chromedp.ID("showing-sh_sat")),
		until(`document.getElementById('room').dataset.state === 'admitted' && !document.getElementById('order').hidden`))
	// register-guest goes with the showing and its pass: noted in
	// sessionStorage, which outlives the trip to the payment page.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const real = window.fetch;
  window.fetch = function (u, o) {
    if (String(u).endsWith('/register-guest')) {
      sessionStorage.setItem('sentShowing', JSON.parse(o.body).showingId || 'none');
      sessionStorage.setItem('sentPass', (o && o.headers && o.headers['x-queue-pass']) || 'none');
    }
    return real.apply(window, arguments);
  };
})()`),
		chromedp.SendKeys(chromedp.ID("name"), "Ada Lovelace"),
		// 2 x 22.00 and a fee of 1.50 a ticket.
		until(`document.getElementById('pay-card').textContent === 'Pay $47.00 by card' && !document.getElementById('pay-card').disabled`))
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)
	// The success page dates the order by its showing, not the event's
	// first one (Fri).
	if date := successDate(ctx); !strings.HasPrefix(date, "Sat, Nov 13, 2027") {
		t.Fatalf("the success page's date is %q, want sh_sat's (Sat, Nov 13, 2027)", date)
	}
	if sent, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('sentShowing') + '|' + (sessionStorage.getItem('sentPass') || '').length`)); !regexp.MustCompile(`^sh_sat\|(1[6-9]|[2-9]\d|\d{3,})$`).MatchString(sent) {
		t.Fatalf("register-guest went with showing and pass length %q", sent)
	}
	// The two tickets are sh_sat's: the other showings have all theirs.
	if left := s.showingsLeft(t, "ev_demo_shows"); left != "[{sh_fri 12} {sh_sat 10} {sh_sun 12}]" {
		t.Fatalf("after the order the showings have %s left", left)
	}
	// Back on the event page, the place says the order was placed.
	do(t, ctx, chromedp.Navigate(s.shop+"/event.html?event=ev_demo_shows&showing=sh_sat"),
		until(`/placed your order/.test(document.getElementById('room-headline').textContent)`),
		until(`document.getElementById('order').hidden`))
	shot(t, ctx, "6-ordered", true)
}

// A multi-showing event without a waiting room (ev_demo_matinee): the
// page asks for a showing, with no queue, and sells for the one chosen
// straight away: the order summary names it, register-guest sends it, the
// success page dates the order by it, and only its tickets are taken.
func TestBrowserDemoShopShowingsWithoutARoom(t *testing.T) {
	s := startShop(t)
	ctx := browser(t)
	do(t, ctx, openEvent(s.shop, "ev_demo_matinee", `2\u00a0showings`,
		chromedp.WaitVisible(chromedp.ID("showing-sh_dec5")), chromedp.WaitVisible(chromedp.CSS(`[data-ticket="tk_matinee"] .plus`)))...)
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.querySelectorAll('#showings input[type="radio"]').length,
  document.querySelectorAll('#showings input:checked').length, document.getElementById('showings-hint').textContent,
  document.getElementById('order-showing').textContent, document.getElementById('room').hidden].join('|')`))
	if want := "2|0|Your tickets are for the showing you choose.|Choose a showing first.|true"; got != want {
		t.Fatalf("the page before a choice: %q, want %q", got, want)
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const real = window.fetch;
  window.fetch = function (u, o) {
    if (String(u).endsWith('/register-guest')) sessionStorage.setItem('sentShowing', JSON.parse(o.body).showingId || 'none');
    return real.apply(window, arguments);
  };
})()`),
		chromedp.Click(chromedp.ID("showing-sh_dec5")),
		until(`new URLSearchParams(location.search).get('showing') === 'sh_dec5'`),
		until(`document.getElementById('order-showing').textContent === 'Showing: Sun, Dec 5, 2027 · 2:00 PM UTC'`),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_matinee"] .plus`)),
		chromedp.Click(chromedp.CSS(`[data-ticket="tk_matinee"] .plus`)))
	do(t, ctx, buyer("Ada Lovelace", "ada@example.com")...)
	// 2 x 18.00 and a fee of 1.00 a ticket.
	do(t, ctx, until(`document.getElementById('pay-card').textContent === 'Pay $38.00 by card' && !document.getElementById('pay-card').disabled`))
	shot(t, ctx, "1-order", true)
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)
	if date := successDate(ctx); !strings.HasPrefix(date, "Sun, Dec 5, 2027") {
		t.Fatalf("the success page's date is %q, want sh_dec5's (Sun, Dec 5, 2027)", date)
	}
	if sent, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('sentShowing')`)); sent != "sh_dec5" {
		t.Fatalf("register-guest went with showing %q, want sh_dec5", sent)
	}
	if left := s.showingsLeft(t, "ev_demo_matinee"); left != "[{sh_dec4 40} {sh_dec5 38}]" {
		t.Fatalf("after the order the showings have %s left", left)
	}
}

// A seat map behind a waiting room (ev_demo_room_seated): the buyer
// joins for one seat, is let in, and only then the picker shows; the shop
// hands it the pass and the seats it covers, so best-available asks for 1
// seat (not the picker's usual 2) and no more; the pass's first hold burns
// it, so the seat is held for the buyer (no more than the pass's 1, and a
// refusal says how many the place covers), a reload keeps it and says so,
// and it is paid for as any seat.
func TestBrowserDemoShopSeatedWaitingRoom(t *testing.T) {
	s := startShopWith(t, func(c *config) { c.demoRoomT0 = time.Second })
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_room_seated"), chromedp.WaitVisible(chromedp.ID("room-email")),
		until(`document.getElementById('order').hidden`),
		chromedp.SendKeys(chromedp.ID("room-email"), "grace@example.com"),
		chromedp.SetValue(chromedp.ID("room-qty"), "1"),
		chromedp.Click(chromedp.ID("room-go")),
		until(`document.getElementById('room').dataset.state === 'admitted'`),
		until(`!document.getElementById('order').hidden`),
		until(`document.getElementById('email').value === 'grace@example.com' && document.getElementById('email').readOnly`))
	inPicker(t, ctx, "A-4")
	// the frame sized to the picker (its height message)
	do(t, ctx, until(`document.getElementById('picker').style.height !== ''`))
	shot(t, ctx, "0-admitted", false)
	frame := inPicker(t, ctx, "A-4") // the shot may have redrawn the map
	// best-available asks for the pass's 1 seat, and offers no more
	if got := inFrame[string](t, ctx, frame, `(() => { const q = document.getElementById('best-qty');
		return q.value + ' of ' + [...q.options].map((o) => o.value).join(','); })()`); got != "1 of 1" {
		t.Fatalf("the picker's best-available count is %q, want 1 of 1 (the seats the pass covers)", got)
	}
	// A host whose hello does not say the seats (no quantity) leaves the
	// picker's usual 2: Find seats is refused with nothing held, and the
	// buyer told how many seats the place covers (the server says).
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('picker').contentWindow.postMessage(
		{ source: 'service-host', type: 'hello', queued: true, pass: sessionStorage.getItem('seatpass:ev_demo_room_seated') }, `+
		"`"+s.api+"`"+`)`))
	inFrame[bool](t, ctx, frame, `document.getElementById('best-qty').value === '2'`)
	do(t, ctx, chromedp.Click(chromedp.ID("best-go"), chromedp.FromNode(frame)))
	said := inFrame[string](t, ctx, frame, `(() => { const t = document.getElementById('live').textContent;
		return /place in the queue/.test(t) ? t : ''; })()`)
	if !strings.Contains(said, "Your place in the queue covers 1 seat,") || strings.Contains(said, "Let go") {
		t.Fatalf("with no seat held, the picker says %q of 2 seats, want that the place covers 1 seat", said)
	}
	if n := inFrame[int](t, ctx, frame, `document.querySelectorAll('[data-state="mine"]').length + 1`); n != 1 {
		t.Fatalf("the refused best-available left %d seats held", n-1)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="A-4"]`), chromedp.FromNode(frame)),
		chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-4"]`)))
	waitSeat(t, ctx, frame, "A-4", "mine")
	// the pass covers 1: a second seat is refused, and the buyer told
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-seat-label="A-5"]`), chromedp.FromNode(frame)))
	waitSeat(t, ctx, frame, "A-5", "free")
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#seats [data-seat]').length`)); n != 1 {
		t.Fatalf("the shop lists %d seats, want the pass's 1", n)
	}
	// the first hold used the pass: the room says the seats are held
	do(t, ctx, until(`/holds your seats/.test(document.getElementById('room-detail').textContent)`))
	if said := inFrame[string](t, ctx, frame, `(() => { const t = document.getElementById('live').textContent;
		return /Let go/.test(t) ? t : ''; })()`); !strings.Contains(said, "Your place in the queue covers 1 seat and you have it. Let go of a seat") {
		t.Fatalf("the picker says %q of a second seat, want that the place covers 1 seat", said)
	}
	shot(t, ctx, "1-seats-held", false)

	// reloaded, the room says the seats are held, and the picker has them
	do(t, ctx, chromedp.Reload(), until(`/holds your seats/.test(document.getElementById('room-detail').textContent)`),
		until(`!document.getElementById('order').hidden`))
	frame = inPicker(t, ctx, "A-4")
	waitSeat(t, ctx, frame, "A-4", "mine")
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-4"]`)))

	// the picker forgets its hold token (its storage gone), and the page
	// reloads: the shop's pass, kept, finds the same token again (the
	// hello says so), and the seats are the buyer's
	inFrame[bool](t, ctx, frame, `(sessionStorage.clear(), true)`)
	do(t, ctx, chromedp.Reload(), until(`/holds your seats/.test(document.getElementById('room-detail').textContent)`))
	frame = inPicker(t, ctx, "A-4")
	waitSeat(t, ctx, frame, "A-4", "mine")
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#seats [data-seat="A-4"]`)))

	do(t, ctx, chromedp.SendKeys(chromedp.ID("name"), "Grace Hopper"),
		// one Front seat at 45.00 and a fee of 2.00 a seat
		until(`document.getElementById('pay-card').textContent === 'Pay $47.00 by card' && !document.getElementById('pay-card').disabled`))
	shot(t, ctx, "2-order", true)
	loc := payOnHostedPage(t, ctx, s.shop)
	checkSuccess(t, ctx, s, loc)

	// back on the event's page: the place bought, the seats are the order's
	do(t, ctx, chromedp.Navigate(s.shop+"/seated.html?event=ev_demo_room_seated"),
		until(`/placed your order/.test(document.getElementById('room-headline').textContent)`),
		until(`document.getElementById('order').hidden`))
}
