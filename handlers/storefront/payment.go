package storefront

import (
	"errors"
	"slices"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// payBody holds what both payment calls send: the registration, the
// cart the page shows (checked against the registration) and where the
// hosted page sends the buyer back to.
type payBody struct {
	EventID        string   `json:"eventId"`
	RegistrationID string   `json:"registrationId"`
	SelectedTicket string   `json:"selectedTicketId"`
	Quantity       *int64   `json:"quantity"`
	SeatLabels     []string `json:"seatLabels"`
	SeatHoldToken  string   `json:"seatHoldToken"`
	SuccessURL     string   `json:"successUrl"`
	CancelURL      string   `json:"cancelUrl"`
}

// cardBody is POST /v1/storefront/card/create-checkout-session.
type cardBody struct {
	payBody
	// SelectedTicketAmount is the unit price times the quantity (the
	// tickets' or seats' subtotal before discount and fee).
	SelectedTicketAmount *json.RawMessage `json:"selectedTicketAmount"`
}

// walletBody is POST /v1/storefront/wallet/create-payment.
type walletBody struct {
	payBody
	// Amount is the fee-inclusive total, as the quote showed it.
	Amount *json.RawMessage `json:"amount"`
}

// noProcessor is the 409 of a payment call whose method no processor
// takes on this deployment (production without one configured): a
// configuration no retry changes. The event detail's paymentMethods says
// which methods exist.
func noProcessor(method string) *apierr.Error {
	return apierr.Of("PAYMENT_METHOD_UNAVAILABLE", "%s payments are not available here: the event's paymentMethods lists those that are", method).
		With("method", method)
}

// payable resolves the registration of a payment call: the key's
// tenant's, of the body's event when it names one (else of the event its
// id carries), awaiting payment, and its event still switched on.
func (a *API) payable(r *request, b *payBody) (*catalog.CompiledEvent, registrations.Registration, *apierr.Error) {
	var reg registrations.Registration
	if b.RegistrationID == "" {
		return nil, reg, apierr.Invalid("registrationId is required: register-guest returns it")
	}
	ref := b.EventID
	fromID := ref == ""
	if fromID {
		ref, _ = keys.OrderEvent(b.RegistrationID)
	}
	ev, e := a.event(r, ref)
	if e == errEventNotFound && fromID {
		e = errRegNotFound
	}
	if e != nil {
		return nil, reg, e
	}
	reg, e = a.lookup(r, b.RegistrationID)
	if e != nil {
		return nil, reg, e
	}
	if reg.EventID != ev.ID {
		return nil, reg, errRegNotFound
	}
	switch reg.Status {
	case registrations.StatusAwaitingPayment:
	case registrations.StatusConfirmed:
		return nil, reg, registrations.NotPayable("paid")
	case registrations.StatusRefundRequired:
		return nil, reg, registrations.NotPayable("refund")
	default:
		return nil, reg, registrations.NotPayable("expired")
	}
	if e := checkCart(b, reg); e != nil {
		return nil, reg, e
	}
	for _, u := range []struct{ name, v string }{{"successUrl", b.SuccessURL}, {"cancelUrl", b.CancelURL}} {
		if u.v != "" && !hostAllowed(r.key.domains, urlHost(u.v)) {
			return nil, reg, apierr.Invalid("%s must be an absolute http(s) URL on one of the key's domains", u.name)
		}
	}
	return ev, reg, nil
}

// checkCart refuses a payment call whose cart (selectedTicketId and
// quantity, 1 when omitted, or seatLabels) is not the registration's: the
// page would show one thing and the buyer pay for another. A body naming
// neither (a cart of several lines) is not checked.
func checkCart(b *payBody, reg registrations.Registration) *apierr.Error {
	mismatch := apierr.Of("CART_MISMATCH", "the cart sent is not the registration's; register again for another cart")
	if b.SelectedTicket != "" {
		n := int64(1)
		if b.Quantity != nil {
			n = *b.Quantity
		}
		var tickets []orders.Line
		for _, l := range reg.Lines {
			if l.Kind == orders.LineTicket {
				tickets = append(tickets, l)
			}
		}
		if len(tickets) != 1 || tickets[0].RefID != b.SelectedTicket || tickets[0].Quantity != n {
			return mismatch
		}
	}
	if len(b.SeatLabels) > 0 {
		var held []string
		for _, l := range reg.Lines {
			if l.Kind == orders.LineSeat {
				held = append(held, l.RefID)
			}
		}
		sent := slices.Clone(b.SeatLabels)
		slices.Sort(sent)
		sent = slices.Compact(sent)
		slices.Sort(held)
		if !slices.Equal(sent, held) {
			return mismatch
		}
	}
	return nil
}

// admissionsSubtotal is the registration's tickets, seats, areas and
// tables at their prices (before discount, extras and fee): what
// selectedTicketAmount, unit price times quantity, must equal.
func admissionsSubtotal(reg registrations.Registration) money.Cents {
	var sum money.Cents
	for _, l := range reg.Lines {
		if l.Kind != orders.LineExtra {
			sum += l.Amount
		}
	}
	return sum
}

// amountMismatch is the 400 AMOUNT_MISMATCH carrying the server's figure
// under field (serverAmount for selectedTicketAmount, serverTotal for a
// total, as the partner confirm names it).
func amountMismatch(field string, server money.Cents) *apierr.Error {
	return apierr.ClientAmountMismatch("the amount differs from the server's price (%s); refresh and retry", server).
		With(field, server)
}

// cardSession is POST /v1/storefront/card/create-checkout-session.
func (a *API) cardSession(ctx *fasthttp.RequestCtx, r *request) {
	if a.Card == nil {
		httpx.Fail(ctx, noProcessor(payments.Card))
		return
	}
	var b cardBody
	if e := httpx.Decode(ctx, &b); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if b.SelectedTicketAmount == nil {
		httpx.Fail(ctx, apierr.Invalid("selectedTicketAmount is required: the unit price times the quantity"))
		return
	}
	amount, e := httpx.Amount("selectedTicketAmount", *b.SelectedTicketAmount)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if b.SuccessURL == "" || b.CancelURL == "" {
		httpx.Fail(ctx, apierr.Invalid("successUrl and cancelUrl are required"))
		return
	}
	ev, reg, e := a.payable(r, &b.payBody)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if want := admissionsSubtotal(reg); amount != want {
		httpx.Fail(ctx, amountMismatch("serverAmount", want))
		return
	}
	a.checkout(ctx, r, a.Card, ev, reg, &b.payBody)
}

// walletPayment is POST /v1/storefront/wallet/create-payment. It needs
// the registrationId (interface.md does not list it; without it there is
// nothing to pay) and the fee-inclusive total as amount.
func (a *API) walletPayment(ctx *fasthttp.RequestCtx, r *request) {
	if a.Wallet == nil {
		httpx.Fail(ctx, noProcessor(payments.Wallet))
		return
	}
	var b walletBody
	if e := httpx.Decode(ctx, &b); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if b.Amount == nil {
		httpx.Fail(ctx, apierr.Invalid("amount is required: the total the quote showed"))
		return
	}
	amount, e := httpx.Amount("amount", *b.Amount)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	ev, reg, e := a.payable(r, &b.payBody)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if amount != reg.Total {
		httpx.Fail(ctx, amountMismatch("serverTotal", reg.Total))
		return
	}
	a.checkout(ctx, r, a.Wallet, ev, reg, &b.payBody)
}

// checkout opens a session with p for reg and attaches it
// (registrations.Service.OpenCheckout: the protocol, and its one script).
func (a *API) checkout(ctx *fasthttp.RequestCtx, r *request, p payments.Processor, ev *catalog.CompiledEvent,
	reg registrations.Registration, b *payBody) {
	success := strings.ReplaceAll(b.SuccessURL, "{REGISTRATION_ID}", reg.ID)
	cancel := strings.ReplaceAll(b.CancelURL, "{REGISTRATION_ID}", reg.ID)
	sess, err := a.Registrations.OpenCheckout(r.ctx, reg, p, payments.CheckoutRequest{
		RegistrationID: reg.ID, EventID: ev.ID, EventName: ev.Name, Amount: reg.Total, Currency: "USD",
		Lines: reg.Lines, Items: checkoutItems(ev, reg), BuyerEmail: reg.BuyerEmail, SuccessURL: success, CancelURL: cancel, ExpiresAt: reg.PayBy,
	}, a.processor)
	var pe *registrations.ProcessorError
	switch {
	case errors.As(err, &pe):
		httpx.Fail(ctx, a.processorFailed(pe.Op, pe.Err))
		return
	case err != nil:
		httpx.Fail(ctx, a.unavailable("checkout session", err))
		return
	}
	httpx.OK(ctx, map[string]any{"url": sess.URL, "sessionId": sess.ID, "registrationId": reg.ID})
}

// processor finds a processor by the name a registration recorded.
func (a *API) processor(name string) payments.Processor {
	for _, p := range []payments.Processor{a.Card, a.Wallet} {
		if p != nil && p.Name() == name {
			return p
		}
	}
	return a.Processors[name]
}

// processorFailed answers a processor's failure: its own client error as
// itself, anything else as 502 PAYMENT_PROCESSOR_ERROR (logged).
func (a *API) processorFailed(op string, err error) *apierr.Error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	a.logger().Error("storefront: payment processor: "+op, "err", err)
	return payments.ErrProcessor
}
