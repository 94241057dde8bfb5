package pages_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/pages"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redistest"
)

type payFixture struct {
	h        fasthttp.RequestHandler
	card     *payments.Hosted
	wallet   *payments.Hosted
	webhooks *atomic.Int32
}

func newPayFixture(t *testing.T) payFixture {
	t.Helper()
	rc, space := redistest.New(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if payments.Verify("whsec_p", r.Header.Get(payments.SignatureHeader), b, time.Now()) == nil {
			n.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := payments.HostedConfig{Redis: rc, Space: space, AppURL: "http://shop.test", WebhookBase: srv.URL, Secret: "whsec_p"}
	f := payFixture{card: payments.NewCard(cfg), wallet: payments.NewWallet(cfg), webhooks: &n}
	r := router.New()
	(&pages.Pay{Card: f.card, Wallet: f.wallet}).Register(r)
	f.h = r.Handler
	return f
}

// open opens a session without items, as sessions were opened before they
// stored items: its page names the lines by kind and id.
func (f payFixture) open(t *testing.T, h *payments.Hosted, random string, expires time.Time) string {
	t.Helper()
	s, err := h.CreateSession(context.Background(), payments.CheckoutRequest{
		RegistrationID: keys.OrderID("ev_gala", random), EventName: "Autumn <Gala>", Amount: 4200, Currency: "USD",
		Lines: []orders.Line{
			{Kind: orders.LineTicket, RefID: "adult", Quantity: 2, UnitPrice: 1600, Amount: 3200},
			{Kind: orders.LineExtra, RefID: "parking", Quantity: 1, UnitPrice: 1000, Amount: 1000},
		},
		SuccessURL: "https://host.example/done?sid={CHECKOUT_SESSION_ID}", CancelURL: "https://host.example/cart",
		ExpiresAt: expires,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

type page struct {
	status   int
	body     string
	location string
	csp      string
}

func (f payFixture) do(method, path, form string) page {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	if form != "" {
		ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
		ctx.Request.SetBodyString(form)
	}
	f.h(&ctx)
	return page{
		status: ctx.Response.StatusCode(), body: string(ctx.Response.Body()),
		location: string(ctx.Response.Header.Peek("Location")),
		csp:      string(ctx.Response.Header.Peek("Content-Security-Policy")),
	}
}

func TestCardPageShowsTheOrderAndPays(t *testing.T) {
	f := newPayFixture(t)
	id := f.open(t, f.card, "p1", time.Now().Add(10*time.Minute))
	p := f.do("GET", "/pay/card/"+id, "")
	if p.status != 200 {
		t.Fatalf("GET: %d %s", p.status, p.body)
	}
	for _, want := range []string{">Pay $42.00<", "Cancel", `value="4242 4242 4242 4242"`, "4000 0000 0000 0002",
		"Autumn &lt;Gala&gt;", "Ticket adult", "2 × $16.00", "$32.00", "Extra parking", `<label for="card">`, `aria-live="assertive"`,
		`action="/pay/card/` + id + `/pay"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, want := range []string{"default-src 'none'", "style-src 'self'", "form-action 'self' https://host.example;", "frame-ancestors 'none'"} {
		if !strings.Contains(p.csp, want) {
			t.Errorf("CSP %q lacks %q", p.csp, want)
		}
	}
	// The page's one style sheet is its own, served from this surface.
	sheets := regexp.MustCompile(`<link rel="stylesheet" href="([^"]+)">`).FindAllStringSubmatch(p.body, -1)
	if len(sheets) != 1 || !strings.HasPrefix(sheets[0][1], "/assets/pages/pay.css?v=") {
		t.Fatalf("style sheets %q, want the one /assets/pages/pay.css", sheets)
	}
	if css := f.do("GET", strings.ReplaceAll(sheets[0][1], "&amp;", "&"), ""); css.status != 200 || !strings.Contains(css.body, ".btn") {
		t.Errorf("style sheet: %d", css.status)
	}
	if strings.Contains(p.body, "<script") || strings.Contains(p.body, "<style") || strings.Contains(p.body, "style=") ||
		strings.Contains(p.body, "src=") || strings.Contains(p.body, "http") {
		t.Errorf("page has a script, an inline style or an external asset")
	}

	// The declining card: the page again with a clear message, nothing paid.
	p = f.do("POST", "/pay/card/"+id+"/pay", "card=4000+0000+0000+0002")
	if p.status != 402 || !strings.Contains(p.body, "declined") || !strings.Contains(p.body, ">Pay $42.00<") {
		t.Fatalf("declined: %d %s", p.status, p.body)
	}
	if s, _, _ := f.card.Get(context.Background(), id); s.Status != payments.StatusOpen || f.webhooks.Load() != 0 {
		t.Fatalf("declined card paid: %s, %d webhooks", s.Status, f.webhooks.Load())
	}
	if p = f.do("POST", "/pay/card/"+id+"/pay", "card=1234"); p.status != 400 || !strings.Contains(p.body, "not valid") {
		t.Fatalf("invalid card: %d", p.status)
	}
	// Focus lands on the card input after an error: it names the error
	// message as well as its note, for a screen reader to read out.
	if !strings.Contains(p.body, `aria-describedby="status card-note" autofocus aria-invalid="true"`) {
		t.Errorf("card input after an error does not point at the message:\n%s", p.body)
	}

	// Paid: to the success URL with the session id, and the webhook sent.
	p = f.do("POST", "/pay/card/"+id+"/pay", "card=4242+4242+4242+4242")
	if p.status != 303 || p.location != "https://host.example/done?sid="+id {
		t.Fatalf("pay: %d to %q", p.status, p.location)
	}
	if f.webhooks.Load() != 1 {
		t.Fatalf("%d verified webhooks, want 1", f.webhooks.Load())
	}
	// The page of a paid session says so; paying again goes on to success.
	if p = f.do("GET", "/pay/card/"+id, ""); p.status != 200 || !strings.Contains(p.body, "Payment complete") || strings.Contains(p.body, "<form") {
		t.Fatalf("paid page: %d %s", p.status, p.body)
	}
	if p = f.do("POST", "/pay/card/"+id+"/pay", "card=4242424242424242"); p.status != 303 || f.webhooks.Load() != 1 {
		t.Fatalf("second pay: %d, %d webhooks", p.status, f.webhooks.Load())
	}
}

func TestCancelReturnsToTheShop(t *testing.T) {
	f := newPayFixture(t)
	id := f.open(t, f.card, "c1", time.Now().Add(10*time.Minute))
	p := f.do("POST", "/pay/card/"+id+"/cancel", "")
	if p.status != 303 || p.location != "https://host.example/cart" {
		t.Fatalf("cancel: %d to %q", p.status, p.location)
	}
	if p = f.do("GET", "/pay/card/"+id, ""); p.status != 410 || !strings.Contains(p.body, "cancelled") {
		t.Fatalf("cancelled page: %d", p.status)
	}
	if p = f.do("POST", "/pay/card/"+id+"/pay", "card=4242424242424242"); p.status != 410 || f.webhooks.Load() != 0 {
		t.Fatalf("pay after cancel: %d, %d webhooks", p.status, f.webhooks.Load())
	}
}

func TestUnknownAndExpiredSessionsGetAClearPage(t *testing.T) {
	f := newPayFixture(t)
	expired := f.open(t, f.card, "e1", time.Now().Add(10*time.Minute))
	if _, err := f.card.Expire(context.Background(), expired); err != nil {
		t.Fatal(err)
	}
	walletID := f.open(t, f.wallet, "w0", time.Now().Add(10*time.Minute))
	cases := []struct {
		path   string
		status int
		text   string
	}{
		{"/pay/card/" + expired, 410, "expired"},
		{"/pay/card/cs_nothing", 404, "not valid"},
		{"/pay/card/cs_00_" + keys.OrderID("ev_gala", "never"), 404, "not valid"},
		{"/pay/card/" + walletID, 404, "not valid"}, // a wallet session on the card page
		{"/pay/card/%00%ff", 404, "not valid"},
	}
	for _, c := range cases {
		p := f.do("GET", c.path, "")
		if p.status != c.status || !strings.Contains(p.body, c.text) || !strings.Contains(p.body, "<html") {
			t.Errorf("GET %s: %d, want %d with %q", c.path, p.status, c.status, c.text)
		}
	}
	if p := f.do("POST", "/pay/card/"+expired+"/pay", "card=4242424242424242"); p.status != 410 {
		t.Errorf("pay of an expired session: %d", p.status)
	}
	if p := f.do("POST", "/pay/card/cs_nothing/pay", "card=4242424242424242"); p.status != 404 {
		t.Errorf("pay of an unknown session: %d", p.status)
	}
}

func TestWalletPagePays(t *testing.T) {
	f := newPayFixture(t)
	id := f.open(t, f.wallet, "w1", time.Now().Add(10*time.Minute))
	p := f.do("GET", "/pay/wallet/"+id, "")
	if p.status != 200 || !strings.Contains(p.body, ">Pay $42.00<") || strings.Contains(p.body, `name="card"`) || !strings.Contains(p.body, "Test wallet") {
		t.Fatalf("wallet page: %d %s", p.status, p.body)
	}
	if p = f.do("POST", "/pay/wallet/"+id+"/pay", ""); p.status != 303 || p.location != "https://host.example/done?sid="+id || f.webhooks.Load() != 1 {
		t.Fatalf("wallet pay: %d to %q, %d webhooks", p.status, p.location, f.webhooks.Load())
	}
}

// Amounts are written in the session's currency.
func TestPageWritesTheSessionsCurrency(t *testing.T) {
	f := newPayFixture(t)
	s, err := f.card.CreateSession(context.Background(), payments.CheckoutRequest{
		RegistrationID: keys.OrderID("ev_gala", "eur"), EventName: "Gala", Amount: 4200, Currency: "EUR",
		Items:      payments.Items{{Name: "Seat A-1", Quantity: 1, UnitPrice: 4700, Amount: 4700}, {Name: "Discount", Quantity: 1, UnitPrice: -500, Amount: -500}},
		SuccessURL: "https://host.example/done", CancelURL: "https://host.example/cart", ExpiresAt: time.Now().Add(10 * time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := f.do("GET", "/pay/card/"+s.ID, "")
	for _, want := range []string{">Pay €42.00<", "€47.00", "-€5.00"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

type brokenHosted struct{}

func (brokenHosted) Name() string { return payments.Card }
func (brokenHosted) Get(context.Context, string) (payments.HostedSession, bool, error) {
	return payments.HostedSession{}, false, errors.New("redis: i/o timeout")
}
func (b brokenHosted) Pay(ctx context.Context, id, _ string) (payments.HostedSession, bool, error) {
	return b.Get(ctx, id)
}
func (b brokenHosted) Cancel(ctx context.Context, id string) (payments.HostedSession, bool, error) {
	return b.Get(ctx, id)
}

// Redis trouble is a 503 page that tells nothing of the cause.
func TestPageWhenRedisFails(t *testing.T) {
	r := router.New()
	(&pages.Pay{Card: brokenHosted{}}).Register(r)
	for _, m := range []string{"GET", "POST"} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(m)
		path := "/pay/card/cs_1"
		if m == "POST" {
			path += "/pay"
		}
		ctx.Request.SetRequestURI(path)
		r.Handler(&ctx)
		body := string(ctx.Response.Body())
		if ctx.Response.StatusCode() != 503 || !strings.Contains(body, "unavailable") || strings.Contains(body, "redis") {
			t.Fatalf("%s: %d %s", m, ctx.Response.StatusCode(), body)
		}
		// A failed Pay may have charged: the page must not say it did not.
		if m == "POST" && (strings.Contains(body, "Nothing was charged") || !strings.Contains(body, "could not confirm the payment")) {
			t.Fatalf("POST with Redis away: %s", body)
		}
	}
}

// lostReply pays through the real processor, or not, and then fails as a
// Redis call whose reply was lost does.
type lostReply struct {
	*payments.Hosted
	commit bool
}

func (l lostReply) Pay(ctx context.Context, id, card string) (payments.HostedSession, bool, error) {
	if l.commit {
		if _, _, err := l.Hosted.Pay(ctx, id, card); err != nil {
			return payments.HostedSession{}, false, err
		}
	}
	return payments.HostedSession{}, false, errors.New("redis: i/o timeout")
}

// A Pay whose reply was lost may have paid: the page reads the session
// again and sends a paid buyer on to the success URL; one not paid is told
// the payment could not be confirmed, never that nothing was charged.
func TestPayWhoseReplyWasLost(t *testing.T) {
	f := newPayFixture(t)
	for _, commit := range []bool{true, false} {
		r := router.New()
		(&pages.Pay{Card: lostReply{f.card, commit}}).Register(r)
		id := f.open(t, f.card, "lost"+map[bool]string{true: "a", false: "b"}[commit], time.Now().Add(10*time.Minute))
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/pay/card/" + id + "/pay")
		ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
		ctx.Request.SetBodyString("card=4242+4242+4242+4242")
		r.Handler(&ctx)
		status, body, loc := ctx.Response.StatusCode(), string(ctx.Response.Body()), string(ctx.Response.Header.Peek("Location"))
		if commit {
			if status != 303 || loc != "https://host.example/done?sid="+id {
				t.Fatalf("paid, reply lost: %d to %q\n%s", status, loc, body)
			}
			continue
		}
		if status != 503 || strings.Contains(body, "Nothing was charged") || !strings.Contains(body, "could not confirm the payment") ||
			!strings.Contains(body, ">Pay $42.00<") || strings.Contains(body, "redis") {
			t.Fatalf("not paid, reply lost: %d\n%s", status, body)
		}
	}
}

// A session whose successUrl host carries CSP syntax (url.Parse accepts
// it) does not add directives to the page's policy: its origin is left out
// of form-action, the good cancelUrl's stays.
func TestHostileSuccessURLStaysOutOfTheCSP(t *testing.T) {
	f := newPayFixture(t)
	s, err := f.card.CreateSession(context.Background(), payments.CheckoutRequest{
		RegistrationID: keys.OrderID("ev_gala", "csp1"), EventName: "Gala", Amount: 1600, Currency: "USD",
		Lines:      []orders.Line{{Kind: orders.LineTicket, RefID: "adult", Quantity: 1, UnitPrice: 1600, Amount: 1600}},
		SuccessURL: "https://a,form-action;sandbox.example.com/done", CancelURL: "https://host.example/cart",
		ExpiresAt: time.Now().Add(10 * time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := f.do("GET", "/pay/card/"+s.ID, "")
	if p.status != 200 {
		t.Fatalf("GET: %d %s", p.status, p.body)
	}
	if strings.Contains(p.csp, "sandbox") || strings.Contains(p.csp, ",") || !strings.Contains(p.csp, "form-action 'self' https://host.example;") {
		t.Errorf("CSP %q", p.csp)
	}
}
