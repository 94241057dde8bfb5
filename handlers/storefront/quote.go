package storefront

import (
	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
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

// quoteView is the storefront quote: interface.md's subtotal, discount,
// fee, total and currency, and the VAT and extras that make up the total.
type quoteView struct {
	Subtotal money.Cents `json:"subtotal"`
	Discount money.Cents `json:"discount"`
	Fee      money.Cents `json:"fee"`
	VAT      money.Cents `json:"vat"`
	Extras   money.Cents `json:"extras"`
	Total    money.Cents `json:"total"`
	Currency string      `json:"currency"`
	// RefundProtection is set when the buyer opted in and the event
	// offers it, as in the partner quote.
	RefundProtection *refundView `json:"refundProtection"`
}

type refundView struct {
	Percent json.Number `json:"percent"`
	Amount  money.Cents `json:"amount"`
}

// priced resolves the body's event for a sale and prices its cart with
// pricing.Price, as the partner quote and reserve do; a limited discount
// code with no use left is refused here already, as register-guest would.
func (a *API) priced(r *request, b *cartBody) (*catalog.CompiledEvent, pricing.Quote, *apierr.Error) {
	if b.EventID == "" {
		return nil, pricing.Quote{}, apierr.Invalid("eventId is required")
	}
	ev, e := a.saleable(r, b.EventID)
	if e != nil {
		return nil, pricing.Quote{}, e
	}
	q, e := pricing.Price(ev, b.Cart)
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
	_, q, e := a.priced(r, &b)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	v := quoteView{Subtotal: q.Subtotal, Discount: q.Discount, Fee: q.Fee, VAT: q.VAT, Extras: q.ExtrasTotal,
		Total: q.Total, Currency: "USD"}
	if rp := q.RefundProtection; rp != nil {
		v.RefundProtection = &refundView{Percent: json.Number(rp.Percent.String()), Amount: rp.Amount}
	}
	httpx.OK(ctx, v)
}
