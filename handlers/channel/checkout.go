package channel

import (
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/views"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/idempotency"
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

func (b *cartBody) cart(channelID string) pricing.Cart {
	return pricing.Cart{
		Seller:  capacity.SellerField(channelID),
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

// price prices a cart against the event; pricing bounds the cart
// (pricing.MaxLines) and checks that seat labels are priced
// (SEAT_NOT_PRICED). The sale claims channelID's share of the event.
func price(ev *catalog.CompiledEvent, b *cartBody, channelID string) (pricing.Quote, *apierr.Error) {
	return pricing.Price(ev, b.cart(channelID))
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
	q, e := price(ev, &body, c.Channel.ID)
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
	httpx.OK(ctx, views.QuoteOf(q))
}

// checkout is POST /v1/channel/events/:id/checkout: reserve a pending order.
func (a *API) checkout(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.saleable(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	idemKey, e := idempotency.Check(ctx.Request.Header.Peek(idempotency.Header))
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
	var buyer checkout.Buyer
	if s := c.Session; s != nil {
		buyer = checkout.Buyer{Name: s.Name, Email: s.Email, Phone: s.Phone}
	} else if buyer, e = checkout.ValidateBuyer(checkout.PartnerFields, body.BuyerName, body.BuyerEmail, body.BuyerPhone); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if e := checkout.ValidateCallback(body.SuccessCallbackURL); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	q, e := price(ev, &body.cartBody, c.Channel.ID)
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
		} else {
			token = body.SeatHoldToken
			if e := seats.CheckToken(token); e != nil {
				httpx.Fail(ctx, e)
				return
			}
		}
	}
	fp := checkout.Fingerprint(ev.ID+"\x1f"+body.ShowingID, buyer, body.SuccessCallbackURL, token, q)

	req := orders.ReserveRequest{
		EventID: ev.ID, Caller: c.id(), ChannelID: c.Channel.ID, IdempotencyKey: idemKey,
		Fingerprint: fp, Total: q.Total, Claims: q.Claims,
		SeatLabels: q.SeatLabels, HoldToken: token, DiscountCode: q.DiscountCode, DiscountMaxUses: q.DiscountMaxUses,
		MaxPerBuyer:    ev.BuyerLimit(),
		CatalogVersion: c.snap.Version,
		Record: checkout.NewRecord(ev, q, buyer, checkout.Origin{Source: "channel", ChannelID: c.Channel.ID,
			ShowingID: body.ShowingID, SuccessCallbackURL: body.SuccessCallbackURL}),
	}
	// The route's rate limit rides in the reserve's first round trip.
	req.Along = guard.DeferredOf(c.ctx).Ride(ctx, c.ctx)
	res, err := a.Orders.Reserve(c.ctx, req)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, reserveView{OrderID: res.OrderID, Amount: res.Amount, Currency: "USD", Duplicate: res.Duplicate})
}

// reserveView is the reserve response, fields in interface.md's order.
type reserveView struct {
	OrderID   string      `json:"orderId"`
	Amount    money.Cents `json:"amount"`
	Currency  string      `json:"currency"`
	Duplicate bool        `json:"duplicate,omitempty"`
}
