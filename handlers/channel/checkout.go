package channel

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/seats"
)

// cartBody holds the cart fields of quote and reserve (decisions.md §2).
type cartBody struct {
	Tickets               []pricing.TicketLine `json:"tickets,omitempty"`
	SelectedTicketID      string               `json:"selectedTicketId,omitempty"`
	Quantity              *int64               `json:"quantity,omitempty"`
	SeatLabels            []string             `json:"seatLabels,omitempty"`
	SeatHoldToken         string               `json:"seatHoldToken,omitempty"`
	GASelections          []pricing.AreaLine   `json:"gaSelections,omitempty"`
	TableSelections       []pricing.TableLine  `json:"tableSelections,omitempty"`
	Extras                []pricing.ExtraLine  `json:"extras,omitempty"`
	DiscountCode          string               `json:"discountCode,omitempty"`
	ShowingID             string               `json:"showingId,omitempty"`
	RefundProtectionOptIn bool                 `json:"refundProtectionOptIn,omitempty"`
	AccessCode            string               `json:"accessCode,omitempty"`
}

func (b *cartBody) cart() pricing.Cart {
	return pricing.Cart{
		Tickets: b.Tickets, SelectedTicketID: b.SelectedTicketID, Quantity: b.Quantity,
		SeatLabels: b.SeatLabels, GASelections: b.GASelections, TableSelections: b.TableSelections,
		Extras: b.Extras, DiscountCode: b.DiscountCode, ShowingID: b.ShowingID,
		AccessCode: b.AccessCode, RefundProtectionOptIn: b.RefundProtectionOptIn,
	}
}

// reserveBody is the reserve (checkout) request.
type reserveBody struct {
	BuyerName          *string `json:"buyerName,omitempty"`
	BuyerEmail         *string `json:"buyerEmail,omitempty"`
	BuyerPhone         *string `json:"buyerPhone,omitempty"`
	SuccessCallbackURL string  `json:"successCallbackUrl,omitempty"`
	cartBody
}

// quoteView is the partner quote (interface.md, Partner resources).
type quoteView struct {
	Subtotal         money.Cents           `json:"subtotal"`
	Discount         money.Cents           `json:"discount"`
	Fee              money.Cents           `json:"fee"`
	VAT              money.Cents           `json:"vat"`
	Total            money.Cents           `json:"total"`
	Currency         string                `json:"currency"`
	Extras           []pricing.ExtraAmount `json:"extras"`
	RefundProtection *refundView           `json:"refundProtection"`
}

type refundView struct {
	Percent json.Number `json:"percent"`
	Amount  money.Cents `json:"amount"`
}

func quoteOf(q pricing.Quote) quoteView {
	v := quoteView{Subtotal: q.Subtotal, Discount: q.Discount, Fee: q.Fee, VAT: q.VAT, Total: q.Total,
		Currency: "USD", Extras: q.Extras}
	if v.Extras == nil {
		v.Extras = []pricing.ExtraAmount{}
	}
	if q.RefundProtection != nil {
		v.RefundProtection = &refundView{Percent: json.Number(q.RefundProtection.Percent.String()), Amount: q.RefundProtection.Amount}
	}
	return v
}

// price prices a cart against the event; seat labels must also be
// priced, which pricing checks (SEAT_NOT_PRICED).
func price(ev *catalog.CompiledEvent, b *cartBody) (pricing.Quote, *apierr.Error) {
	if len(b.Tickets) > 50 {
		return pricing.Quote{}, apierr.Invalid("a cart has at most 50 ticket lines")
	}
	return pricing.Price(ev, b.cart())
}

func (a *API) quote(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.saleable(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	var body cartBody
	if e := httpx.Decode(ctx, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	q, e := price(ev, &body)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if q.DiscountCode != "" && q.DiscountMaxUses > 0 {
		left, err := a.Orders.DiscountLeft(c.ctx, ev.ID, q.DiscountCode, q.DiscountMaxUses)
		if err != nil {
			httpx.Error(ctx, err)
			return
		}
		if left <= 0 {
			httpx.Fail(ctx, orders.ErrDiscountUsedUp)
			return
		}
	}
	httpx.OK(ctx, quoteOf(q))
}

var (
	errKeyRequired = apierr.BadRequest("IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header (a UUID) on every reserve")
	errKeyInvalid  = apierr.BadRequest("INVALID_IDEMPOTENCY_KEY", "Idempotency-Key must be 1 to 255 printable ASCII characters")
)

// IdempotencyKey is the request's Idempotency-Key header, checked: required
// on every reserve, 1 to 255 printable ASCII characters.
func IdempotencyKey(ctx *fasthttp.RequestCtx) (string, *apierr.Error) {
	k := ctx.Request.Header.Peek("Idempotency-Key")
	if len(k) == 0 {
		return "", errKeyRequired
	}
	if !validIdempotencyKey(k) {
		return "", errKeyInvalid
	}
	return string(k), nil
}

func validIdempotencyKey(k []byte) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// checkout is POST /v1/channel/events/:id/checkout: reserve a pending order.
func (a *API) checkout(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.saleable(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	idemKey, e := IdempotencyKey(ctx)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	var body reserveBody
	if e := httpx.Decode(ctx, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	// Inside a session the buyer is the session's, whatever the body says.
	var buyer Buyer
	if s := c.Session; s != nil {
		buyer = Buyer{Name: s.Name, Email: s.Email, Phone: s.Phone}
	} else if buyer, e = ValidateBuyer(body.BuyerName, body.BuyerEmail, body.BuyerPhone); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if body.SuccessCallbackURL != "" {
		u, err := url.Parse(body.SuccessCallbackURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(body.SuccessCallbackURL) > 2048 {
			httpx.Fail(ctx, apierr.Invalid("successCallbackUrl must be an absolute http(s) URL"))
			return
		}
	}
	q, e := price(ev, &body.cartBody)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	token := ""
	if len(q.SeatLabels) > 0 {
		// A session's token is derived (always well formed); a keyed
		// caller names its own.
		if c.Session != nil {
			token = a.Sessions.HoldToken(c.Session, ev.ID)
		} else if token = body.SeatHoldToken; token == "" {
			httpx.Fail(ctx, apierr.Invalid("seatLabels need the seatHoldToken that holds them"))
			return
		} else if !seats.ValidToken(token) {
			httpx.Fail(ctx, apierr.BadRequest("INVALID_HOLD_TOKEN", "seatHoldToken is not a hold token"))
			return
		}
	}
	fp := fingerprint(ev.ID+"\x1f"+body.ShowingID, buyer, body.SuccessCallbackURL, token, q)

	req := orders.ReserveRequest{
		EventID: ev.ID, Caller: c.id(), ChannelID: c.Channel.ID, IdempotencyKey: idemKey,
		Fingerprint: fp, Total: q.Total, Claims: q.Claims,
		SeatLabels: q.SeatLabels, HoldToken: token, DiscountCode: q.DiscountCode, DiscountMaxUses: q.DiscountMaxUses,
		MaxPerBuyer:    ev.BuyerLimit(),
		CatalogVersion: c.snap.Version,
		Record: orders.Record{
			EventID: ev.ID, TenantID: ev.TenantID, ChannelID: c.Channel.ID, Source: "channel",
			BuyerName: buyer.Name, BuyerEmail: buyer.Email, BuyerPhone: buyer.Phone,
			ShowingID: body.ShowingID, SuccessCallbackURL: body.SuccessCallbackURL, DiscountCode: q.DiscountCode, Currency: "USD",
			Subtotal: q.Subtotal, Discount: q.Discount, Extras: q.ExtrasTotal, Fee: q.Fee, VAT: q.VAT,
			Total: q.Total, Lines: q.Lines, Tickets: tickets(q),
		},
	}
	if q.RefundProtection != nil {
		req.Record.RefundProtection = q.RefundProtection.Amount
	}
	res, err := a.Orders.Reserve(c.ctx, req)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, reserveView{OrderID: res.OrderID, Amount: res.Amount, Currency: "USD", Duplicate: res.Duplicate})
}

// fingerprint identifies a reserve request by what it buys, not by how the
// JSON was written: the same cart with quantity 1 spelt out or left to its
// default, or its lines in another order, is the same request for its
// Idempotency-Key.
func fingerprint(eventAndShowing string, b Buyer, callback, holdToken string, q pricing.Quote) string {
	lines := make([]string, len(q.Lines))
	for i, l := range q.Lines {
		lines[i] = l.Kind + "\x1f" + l.RefID + "\x1f" + strconv.FormatInt(l.Quantity, 10)
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, part := range []string{eventAndShowing, b.Name, b.Email, b.Phone, callback, holdToken, q.DiscountCode,
		strconv.FormatBool(q.RefundProtection != nil), strconv.FormatInt(int64(q.Total), 10), strings.Join(lines, "\x1e")} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// reserveView is the reserve response, fields in interface.md's order.
type reserveView struct {
	OrderID   string      `json:"orderId"`
	Amount    money.Cents `json:"amount"`
	Currency  string      `json:"currency"`
	Duplicate bool        `json:"duplicate,omitempty"`
}

func tickets(q pricing.Quote) []orders.Ticket {
	out := make([]orders.Ticket, len(q.Admissions))
	for i, ad := range q.Admissions {
		out[i] = orders.Ticket{Label: ad.Label, Kind: ad.Kind, RefID: ad.RefID}
	}
	return out
}
