package pages

import (
	"context"
	_ "embed"
	"html/template"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/tickets"
)

//go:embed static/tickets.html
var ticketHTML string

//go:embed static/tickets.css
var ticketCSS string

var (
	// Every page of the file links the one style sheet through {{style}}.
	ticketTemplates = template.Must(template.New("tickets.html").
			Funcs(template.FuncMap{"style": func() string { return ticketStyle.href }}).
			Parse(ticketHTML))
	ticketStyle = newAsset("tickets.css", ticketCSS)
)

// ticketCSP: the page runs no script, and its style comes from its own
// sheet; the QR codes are inline SVG (img-src only for the PNGs of
// .../{n}.png opened on their own).
const ticketCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// TicketOrders reads paid orders for their ticket page; sync/orderdb.Store
// implements it.
type TicketOrders interface {
	// TicketOrder returns the paid order orderID; ok is false when there
	// is none (yet).
	TicketOrder(ctx context.Context, orderID string) (o tickets.Order, ok bool, err error)
}

// Tickets serves the buyer's ticket page, linked from the tickets e-mail:
// GET /tickets/{orderId}?k=<mac> shows the event and each ticket with its
// QR code; GET /tickets/{orderId}/{n}.png?k=<mac> is the n-th ticket's QR
// image (from 1). Without the order's MAC (tickets.Keys.PageMAC) both
// answer the same 404 page as an unknown order.
type Tickets struct {
	Orders TicketOrders
	Keys   *tickets.Keys
	// TestMode says payments are simulated: the page says TEST MODE.
	TestMode bool
	Logger   *slog.Logger
	// Timeout bounds one read of Orders; default 5 s.
	Timeout time.Duration
}

// Register mounts the ticket page's routes.
func (h *Tickets) Register(r *router.Router) {
	r.GET(ticketStyle.path, ticketStyle.serve)
	r.GET("/tickets/{orderId}", h.page)
	r.GET("/tickets/{orderId}/{image}", h.image)
}

// order returns the order a request names when its MAC is right; false
// when it answered the request itself.
func (h *Tickets) order(ctx *fasthttp.RequestCtx) (tickets.Order, bool) {
	id, _ := ctx.UserValue("orderId").(string)
	mac := string(ctx.QueryArgs().Peek("k"))
	if id == "" || mac == "" || !h.Keys.CheckPageMAC(id, mac) {
		ticketNotFound(ctx)
		return tickets.Order{}, false
	}
	c, cancel := guard.RequestContext(ctx, h.Timeout)
	defer cancel()
	o, ok, err := h.Orders.TicketOrder(c, id)
	if err != nil {
		h.logger().Error("ticket page: read order", "order", id, "err", err)
		ticketPage(ctx, fasthttp.StatusServiceUnavailable, "notfound", ticketMessage{Title: "Tickets unavailable",
			Text: "Your tickets cannot be shown right now. Please try again in a minute."})
		return tickets.Order{}, false
	}
	if !ok {
		ticketNotFound(ctx)
		return tickets.Order{}, false
	}
	return o, true
}

func (h *Tickets) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

type ticketView struct {
	N               int
	ID, Label, Code string
	QR              template.HTML // inline SVG
}

type ticketsView struct {
	tickets.Order
	Title string
	// Ref is the order's short reference (orders.Reference), the one the
	// shop's success page and the e-mails give the buyer to quote; the
	// page shows the full id beside it, for support, as the e-mails do.
	Ref     string
	When    string
	Count   int
	Tickets []ticketView
	// Offline: the page is cached until after the event (its start is
	// known), so it can say it opens without a connection.
	Offline bool
	// TestMode: payments are simulated, and the page says so.
	TestMode bool
}

type ticketMessage struct {
	Title, Text string
}

func (h *Tickets) page(ctx *fasthttp.RequestCtx) {
	o, ok := h.order(ctx)
	if !ok {
		return
	}
	v := ticketsView{Order: o, Title: "Your tickets for " + o.EventName, Ref: orders.Reference(o.OrderID),
		When: tickets.FormatStart(o.StartsAt), Count: len(o.Tickets), TestMode: h.TestMode}
	for i, t := range o.Tickets {
		code := h.Keys.Sign(o.Ticket(i))
		qr, err := qrSVG(code, "QR code of ticket "+strconv.Itoa(i+1)+", "+t.Label)
		if err != nil {
			h.logger().Error("ticket page: render QR", "order", o.OrderID, "err", err)
			ticketPage(ctx, fasthttp.StatusServiceUnavailable, "notfound", ticketMessage{Title: "Tickets unavailable",
				Text: "Your tickets cannot be shown right now. Please try again in a minute."})
			return
		}
		v.Tickets = append(v.Tickets, ticketView{N: i + 1, ID: t.TicketID, Label: t.Label, Code: code, QR: qr})
	}
	// The buyer's own browser may keep the page (never a shared cache:
	// the link is the key to it), so it opens again at the door without
	// signal: until the day after the event when its start is known.
	age, known := ticketCacheAge(o.StartsAt, time.Now())
	v.Offline = known
	ctx.Response.Header.Set("Cache-Control", "private, max-age="+strconv.Itoa(int(age/time.Second)))
	ticketPage(ctx, fasthttp.StatusOK, "tickets", &v)
}

// ticketCacheAge is how long a browser may keep a ticket page (and its
// images): until a day after the event's start (RFC 3339), at least a day
// and at most 400 days (browsers cap longer ages anyway). untilAfter
// reports whether that age reaches the day after the event: false when
// the start is unknown (a day) or more than 400 days away.
func ticketCacheAge(startsAt string, now time.Time) (age time.Duration, untilAfter bool) {
	const day, most = 24 * time.Hour, 400 * 24 * time.Hour
	start, err := time.Parse(time.RFC3339, startsAt)
	if err != nil {
		return day, false
	}
	age = start.Add(day).Sub(now)
	if age > most {
		return most, false
	}
	return max(age, day), true
}

func (h *Tickets) image(ctx *fasthttp.RequestCtx) {
	name, _ := ctx.UserValue("image").(string)
	num, isPNG := strings.CutSuffix(name, ".png")
	n, err := strconv.Atoi(num)
	if !isPNG || err != nil || n < 1 || strconv.Itoa(n) != num {
		ticketNotFound(ctx)
		return
	}
	o, ok := h.order(ctx)
	if !ok {
		return
	}
	if n > len(o.Tickets) {
		ticketNotFound(ctx)
		return
	}
	png, err := tickets.PNG(h.Keys.Sign(o.Ticket(n-1)), tickets.DefaultPNGSize)
	if err != nil {
		h.logger().Error("ticket page: render QR", "order", o.OrderID, "err", err)
		ticketNotFound(ctx)
		return
	}
	age, _ := ticketCacheAge(o.StartsAt, time.Now())
	ctx.Response.Header.Set("Cache-Control", "private, max-age="+strconv.Itoa(int(age/time.Second)))
	ticketHeaders(ctx)
	ctx.SetContentType("image/png")
	ctx.SetBody(png)
}

func ticketNotFound(ctx *fasthttp.RequestCtx) {
	ticketPage(ctx, fasthttp.StatusNotFound, "notfound", ticketMessage{Title: "Tickets not found",
		Text: "This link does not lead to any tickets. Please open the link from your tickets e-mail exactly as it is."})
}

// headers keep the page's link (its MAC) out of referrers, caches and
// search engines, and the page out of frames.
func ticketHeaders(ctx *fasthttp.RequestCtx) {
	hd := &ctx.Response.Header
	hd.Set("Content-Security-Policy", ticketCSP)
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Robots-Tag", "noindex")
	if len(hd.Peek("Cache-Control")) == 0 { // a ticket page or image sets its own
		hd.Set("Cache-Control", "private, no-store")
	}
}

func ticketPage(ctx *fasthttp.RequestCtx, status int, name string, data any) {
	var b strings.Builder
	if err := ticketTemplates.ExecuteTemplate(&b, name, data); err != nil {
		ctx.Error("ticket page unavailable", fasthttp.StatusServiceUnavailable)
		return
	}
	ticketHeaders(ctx)
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBodyString(b.String())
}
