package storefront

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// registerBody is POST /v1/storefront/register-guest: the buyer (name,
// email, phone, under interface.md's storefront names) and the cart.
type registerBody struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
	Phone *string `json:"phone"`
	cartBody
}

// registrationView is a registration as register-guest and the
// registration read answer it.
type registrationView struct {
	RegistrationID string `json:"registrationId"`
	EventID        string `json:"eventId"`
	// ShowingID is the showing bought, on a multi-showing event.
	ShowingID string      `json:"showingId,omitempty"`
	Status    string      `json:"status"`
	Payment   paymentView `json:"payment"`
	// Amount is what the buyer pays (the quote's total), Total the same:
	// the one reads like reserve's answer, the other like the quote.
	Amount   money.Cents `json:"amount"`
	Total    money.Cents `json:"total"`
	Currency string      `json:"currency"`
	// ExpiresAt ends the checkout window of a registration awaiting
	// payment.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Reason says why a refund is required.
	Reason string `json:"reason,omitempty"`
	// TestMode says payments are simulated: no money was taken.
	TestMode bool `json:"testMode,omitempty"`
	// Tickets are the ids and labels, never the ticket page's link: a
	// registration id travels in URLs (success pages, session ids), and
	// whoever holds the link holds the tickets. The buyer's e-mail
	// carries it.
	Tickets []ticketLink `json:"tickets,omitempty"`
}

type paymentView struct {
	PaymentStatus string      `json:"paymentStatus"`
	Amount        money.Cents `json:"amount"`
}

type ticketLink struct {
	TicketID string `json:"ticketId"`
	Label    string `json:"label"`
}

func viewOf(reg registrations.Registration) registrationView {
	v := registrationView{RegistrationID: reg.ID, EventID: reg.EventID, ShowingID: reg.ShowingID, Status: reg.Status,
		Payment: paymentView{PaymentStatus: reg.PaymentStatus, Amount: reg.Paid},
		Amount:  reg.Total, Total: reg.Total, Currency: "USD", Reason: reg.Reason}
	if reg.Status == registrations.StatusAwaitingPayment && !reg.ExpiresAt.IsZero() {
		v.ExpiresAt = reg.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if reg.Status == registrations.StatusConfirmed {
		for _, t := range reg.Tickets {
			v.Tickets = append(v.Tickets, ticketLink{TicketID: t.TicketID, Label: t.Label})
		}
	}
	return v
}

// view is viewOf(reg) as this deployment shows it.
func (a *API) view(reg registrations.Registration) registrationView {
	v := viewOf(reg)
	v.TestMode = a.TestMode
	return v
}

// registerGuest is POST /v1/storefront/register-guest: a free cart is
// confirmed at once; a paid one holds its inventory for the checkout
// window and awaits payment (registrations.Service.Register).
func (a *API) registerGuest(ctx *fasthttp.RequestCtx, r *request) {
	var b registerBody
	if e := httpx.Decode(ctx, &b); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	buyer, e := checkout.ValidateBuyer(checkout.StorefrontFields, b.Name, b.Email, b.Phone)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	ev, q, e := a.priced(r, &b.cartBody)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	pass, inHold, e := a.roomPass(ctx, ev, b.ShowingID, buyer.Email)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	token := ""
	if len(q.SeatLabels) > 0 {
		token = b.SeatHoldToken // Register refuses a missing or malformed one (seats.CheckToken)
	}
	reg, err := a.Registrations.Register(r.ctx, registrations.Request{
		EventID: ev.ID, TenantID: ev.TenantID,
		Buyer: buyer,
		Quote: q, ShowingID: b.ShowingID, HoldToken: token, MaxPerBuyer: ev.BuyerLimit(), CatalogVersion: r.snap.Version,
		Client: a.client(ctx), Pass: pass, PassInHold: inHold,
	})
	if err != nil {
		httpx.Fail(ctx, a.unavailable("register", err))
		return
	}
	httpx.OK(ctx, a.view(reg))
}
