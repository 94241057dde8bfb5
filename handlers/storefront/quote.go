package storefront

import (
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/views"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
)

// cartBody is the event and the cart fields of decisions.md §2, as the
// quote, register-guest and the payment calls send them. pricing.Cart's
// field names are the wire names (the decoder matches them regardless of
// case).
type cartBody struct {
	EventID       string `json:"eventId"`
	SeatHoldToken string `json:"seatHoldToken"`
	pricing.Cart
}

// priced resolves the body's event for a sale and prices its cart with
// pricing.Price, as the partner quote and reserve do.
func (a *API) priced(r *request, b *cartBody) (*catalog.CompiledEvent, pricing.Quote, *apierr.Error) {
	if b.EventID == "" {
		return nil, pricing.Quote{}, apierr.Invalid("eventId is required")
	}
	ev, e := a.saleable(r, b.EventID)
	if e != nil {
		return nil, pricing.Quote{}, e
	}
	cart := b.Cart
	cart.Seller = capacity.Storefront
	q, e := pricing.Price(ev, cart)
	return ev, q, e
}

// quoted is priced, and a limited discount code with no use left is
// refused as register-guest would refuse it (whose script checks the
// uses itself, so it calls priced alone).
func (a *API) quoted(r *request, b *cartBody) (*catalog.CompiledEvent, pricing.Quote, *apierr.Error) {
	ev, q, e := a.priced(r, b)
	if e != nil {
		return nil, q, e
	}
	if q.DiscountCode != "" && q.DiscountMaxUses > 0 {
		left, err := a.Orders.DiscountLeft(r.ctx, ev.ID, q.DiscountCode, q.DiscountMaxUses)
		if err != nil {
			return nil, q, a.unavailable("discount left", err)
		}
		if left <= 0 {
			return nil, q, orders.ErrDiscountUsedUp
		}
	}
	return ev, q, nil
}

// quote is POST /v1/storefront/quote.
func (a *API) quote(ctx *fasthttp.RequestCtx, r *request) {
	var b cartBody
	if e := httpx.Decode(ctx, &b); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	_, q, e := a.quoted(r, &b)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	// The partner quote's shape: interface.md's storefront fields and the
	// VAT, extras and refund protection that make up the total.
	httpx.OK(ctx, views.QuoteOf(q))
}
