package pages

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
)

//go:embed templates/pay.html
var payHTML string

//go:embed static/pay.css
var payCSS string

var (
	payTemplate = template.Must(template.New("pay").Parse(payHTML))
	payStyle    = newAsset("pay.css", payCSS)
)

// testCard is the card number the card page offers; declineCard is the
// test card the processor declines (payments.Hosted), named on the page
// so a host can try the declined path.
const (
	testCard    = "4242 4242 4242 4242"
	declineCard = "4000 0000 0000 0002"
)

// Hosted is what a hosted payment page needs of its processor
// (payments.Hosted is one).
type Hosted interface {
	Name() string
	Get(ctx context.Context, sessionID string) (payments.HostedSession, bool, error)
	Pay(ctx context.Context, sessionID, card string) (payments.HostedSession, bool, error)
	Cancel(ctx context.Context, sessionID string) (payments.HostedSession, bool, error)
}

// Pay serves the hosted payment pages of the built-in test processors:
// GET /pay/card/{sessionId} and /pay/wallet/{sessionId} show the order and
// a Pay button; POST .../pay pays (the processor then sends its webhook)
// and sends the buyer to the success URL; POST .../cancel sends them to
// the cancel URL. Plain HTML forms: no JavaScript needed.
type Pay struct {
	Card   Hosted // nil: no card page
	Wallet Hosted // nil: no wallet page
	// Timeout bounds each request's Redis work and the first webhook
	// delivery (default 15 s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Register mounts the pages of the processors that are set.
func (p *Pay) Register(r *router.Router) {
	registered := false // the style sheet is mounted with the first page
	for _, h := range []Hosted{p.Card, p.Wallet} {
		if h == nil {
			continue
		}
		base := "/pay/" + h.Name() + "/{sessionId}"
		if !registered {
			r.GET(payStyle.path, payStyle.serve)
			registered = true
		}
		r.GET(base, p.show(h))
		r.POST(base+"/pay", p.pay(h))
		r.POST(base+"/cancel", p.cancel(h))
	}
}

// requestContext bounds one page request's work, the first webhook
// delivery included.
func (p *Pay) requestContext(ctx *fasthttp.RequestCtx) (context.Context, context.CancelFunc) {
	if p.Timeout > 0 {
		return guard.RequestContext(ctx, p.Timeout)
	}
	return guard.RequestContext(ctx, 15*time.Second)
}

func (p *Pay) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

func sessionID(ctx *fasthttp.RequestCtx) string {
	id, _ := ctx.UserValue("sessionId").(string)
	return id
}

func (p *Pay) show(h Hosted) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		c, cancel := p.requestContext(ctx)
		defer cancel()
		s, found, err := h.Get(c, sessionID(ctx))
		p.render(ctx, h, s, found, err, "")
	}
}

func (p *Pay) pay(h Hosted) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		c, cancel := p.requestContext(ctx)
		defer cancel()
		s, found, err := h.Pay(c, sessionID(ctx), string(ctx.PostArgs().Peek("card")))
		switch {
		case err == nil && s.Status == payments.StatusPaid:
			p.paid(ctx, h, s)
		case errors.Is(err, payments.ErrCardDeclined):
			ctx.SetStatusCode(fasthttp.StatusPaymentRequired)
			p.render(ctx, h, s, true, nil, "Your card was declined. Nothing was charged. Try another card.")
		case errors.Is(err, payments.ErrCardInvalid):
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
			p.render(ctx, h, s, true, nil, "That card number is not valid. Check it and try again.")
		case err != nil && !errors.Is(err, payments.ErrNotOpen):
			p.unconfirmed(ctx, h, err)
		default:
			p.render(ctx, h, s, found, err, "")
		}
	}
}

// msgUnconfirmed is what a buyer reads when Pay failed without saying
// whether the payment went through: pressing Pay again is safe, a paid
// session is never paid twice.
const msgUnconfirmed = "We could not confirm the payment. Press Pay again: you will not be charged twice."

// unconfirmed answers a Pay that failed (payErr) other than by a closed
// session: it may have committed and lost only its reply, so the session
// is read again, with a fresh bound since the first may be spent. Paid, the
// buyer goes on to the success URL; otherwise the page never says that
// nothing was charged.
func (p *Pay) unconfirmed(ctx *fasthttp.RequestCtx, h Hosted, payErr error) {
	p.log().Error("pages: pay", "processor", h.Name(), "err", payErr)
	c, cancel := p.requestContext(ctx)
	defer cancel()
	s, found, err := h.Get(c, sessionID(ctx))
	switch {
	case err == nil && found && s.Status == payments.StatusPaid:
		p.paid(ctx, h, s)
	case err == nil && found && s.Status == payments.StatusOpen:
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.Response.Header.Set("Retry-After", "30")
		p.render(ctx, h, s, true, nil, msgUnconfirmed)
	case err == nil:
		p.render(ctx, h, s, found, nil, "") // closed meanwhile: its own page
	default:
		p.render(ctx, h, s, found, err, msgUnconfirmed)
	}
}

// paid sends the buyer of paid session s on to its success URL, or shows
// the paid page when that URL is not one to send a browser to.
func (p *Pay) paid(ctx *fasthttp.RequestCtx, h Hosted, s payments.HostedSession) {
	if dst, ok := safeURL(s.ReturnURL()); ok {
		ctx.Redirect(dst, fasthttp.StatusSeeOther)
		return
	}
	p.render(ctx, h, s, true, nil, "")
}

func (p *Pay) cancel(h Hosted) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		c, cancel := p.requestContext(ctx)
		defer cancel()
		s, found, err := h.Cancel(c, sessionID(ctx))
		if err == nil && found && s.Status == payments.StatusCancelled {
			if dst, ok := safeURL(s.CancelURL); ok {
				ctx.Redirect(dst, fasthttp.StatusSeeOther)
				return
			}
		}
		p.render(ctx, h, s, found, err, "")
	}
}

// payPage is the template's data.
type payPage struct {
	Title, ProcessorName, State string
	EventName, Total, Error     string
	Lines                       []payLine
	Card                        bool
	CardInvalid                 bool   // Error is about the card number
	CardNumber                  string // the card input's value
	GoodCard, DeclineCard       string // the test cards the note names
	PayAction, CancelAction     string
	Heading, Message            string
	ContinueURL, ContinueText   string
	Style                       string // the style sheet's href
}

type payLine struct {
	Name, Unit, Amount string
	Quantity           int64
	Minus              bool // a discount
}

// symbols are the currency signs the pages write before an amount; any
// other currency is written by its code ("CHF 42.00").
var symbols = map[string]string{"USD": "$", "EUR": "€", "GBP": "£", "CAD": "CA$", "AUD": "A$", "": "$"}

// amount formats c in currency cur; a negative one (a discount) as -$5.00.
func amount(cur string, c money.Cents) string {
	sym, ok := symbols[strings.ToUpper(cur)]
	if !ok {
		sym = strings.ToUpper(cur) + " "
	}
	if c < 0 {
		return "-" + sym + (-c).String()
	}
	return sym + c.String()
}

// render writes the page for session s in its state; a status code set
// before (402, 400) is kept for the open page.
func (p *Pay) render(ctx *fasthttp.RequestCtx, h Hosted, s payments.HostedSession, found bool, err error, formError string) {
	pg := payPage{
		ProcessorName: map[string]string{payments.Card: "Test card", payments.Wallet: "Test wallet"}[h.Name()],
		Style:         payStyle.href,
		Card:          h.Name() == payments.Card,
		CardNumber:    testCard,
		GoodCard:      testCard,
		DeclineCard:   declineCard,
		Error:         formError,
		CardInvalid:   formError != "" && formError != msgUnconfirmed,
	}
	status := fasthttp.StatusOK
	if cur := ctx.Response.StatusCode(); cur != fasthttp.StatusOK {
		status = cur
	}
	if found {
		pg.EventName, pg.Total = s.EventName, amount(s.Currency, s.Amount)
	}
	formActions := []string{"'self'"}
	switch {
	case err != nil && !errors.Is(err, payments.ErrNotOpen):
		p.log().Error("pages: payment page", "processor", h.Name(), "err", err)
		status = fasthttp.StatusServiceUnavailable
		pg.State, pg.Heading = "unavailable", "Payments are unavailable right now"
		pg.Message = "Nothing was charged. Please try again in a minute."
		if formError != "" { // a Pay whose outcome is unknown
			pg.Message = formError
		}
		ctx.Response.Header.Set("Retry-After", "30")
	case !found:
		status = fasthttp.StatusNotFound
		pg.State, pg.Heading = "notfound", "This payment link is not valid"
		pg.Message = "Check the link, or go back to the shop and start the checkout again."
	case s.Status == payments.StatusOpen:
		pg.State = "open"
		pg.Title = "Pay " + pg.Total + " · " + s.EventName
		for _, it := range s.Items {
			pg.Lines = append(pg.Lines, payLine{Name: it.Name, Quantity: it.Quantity, Unit: amount(s.Currency, it.UnitPrice),
				Amount: amount(s.Currency, it.Amount), Minus: it.Amount < 0})
		}
		if len(s.Items) == 0 { // a session opened before sessions stored items
			for _, l := range s.Lines {
				pg.Lines = append(pg.Lines, payLine{Name: payments.LineName(l), Quantity: l.Quantity, Unit: amount(s.Currency, l.UnitPrice),
					Amount: amount(s.Currency, l.Amount), Minus: l.Amount < 0})
			}
		}
		if pg.Card {
			if n := string(ctx.PostArgs().Peek("card")); n != "" && formError != "" {
				pg.CardNumber = n
			}
		}
		id := url.PathEscape(s.ID)
		pg.PayAction = "/pay/" + h.Name() + "/" + id + "/pay"
		pg.CancelAction = "/pay/" + h.Name() + "/" + id + "/cancel"
		// The forms' answers redirect to the host's site; browsers apply
		// form-action to those redirects too.
		for _, u := range []string{s.SuccessURL, s.CancelURL} {
			if o := origin(u); o != "" && !slices.Contains(formActions, o) {
				formActions = append(formActions, o)
			}
		}
	case s.Status == payments.StatusPaid:
		pg.State, pg.Heading = "paid", "Payment complete"
		pg.Message = "Thank you: your payment was received."
		pg.ContinueURL, _ = safeURL(s.ReturnURL())
		pg.ContinueText = "Continue"
	case s.Status == payments.StatusCancelled:
		status = fasthttp.StatusGone
		pg.State, pg.Heading = "cancelled", "This checkout was cancelled"
		pg.Message = "Nothing was charged. Start again from the shop to buy tickets."
		pg.ContinueURL, _ = safeURL(s.CancelURL)
		pg.ContinueText = "Return to the shop"
	default:
		status = fasthttp.StatusGone
		pg.State, pg.Heading = "expired", "This checkout has expired"
		pg.Message = "Nothing was charged, and the tickets held for you were released. Start again from the shop."
		pg.ContinueURL, _ = safeURL(s.CancelURL)
		pg.ContinueText = "Return to the shop"
	}
	if pg.Title == "" {
		pg.Title = pg.Heading
	}
	var buf bytes.Buffer
	if err := payTemplate.Execute(&buf, pg); err != nil {
		p.log().Error("pages: render payment page", "err", err)
		ctx.Error("payment page unavailable", fasthttp.StatusInternalServerError)
		return
	}
	hd := &ctx.Response.Header
	// No script at all, style only from the sheet above. form-action
	// lists the host's origins because Chromium applies it to the 303
	// that answers the form, too; frame-ancestors 'none' keeps the page
	// out of other sites' frames (no clickjacking of the Pay button).
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action "+
		strings.Join(formActions, " ")+"; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	// The session id in the URL must not travel to other sites.
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Frame-Options", "DENY")
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// safeURL returns u when it is an absolute http or https URL: only those
// are sent to the browser as a place to go.
func safeURL(u string) (string, bool) {
	if origin(u) == "" {
		return "", false
	}
	return u, true
}

// origin is u's scheme://host[:port] for form-action, or "" when u is not
// an absolute http(s) URL whose host is a DNS name of [a-z0-9.-] or an IP
// and whose port is digits: url.Parse lets ; , ' " through in a host, and
// those would end or extend the CSP directive.
func origin(u string) string {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return ""
	}
	host, port := strings.ToLower(pu.Hostname()), pu.Port()
	if host == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	} else if strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
		return ""
	}
	if port != "" {
		host += ":" + port
	}
	return pu.Scheme + "://" + host
}
