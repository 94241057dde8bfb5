// Package payments is the one interface ticketd takes payments through
// (decisions.md section 4): a Processor opens a hosted checkout for a
// registration and can close it again; the processor's signed webhook
// reports the payment (handlers/webhooks). The built-in test card processor
// and wallet provider are the default; Stripe plugs in behind the same
// interface.
package payments

import (
	"context"
	"time"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
)

// CheckoutRequest is what a processor needs to open a hosted checkout.
type CheckoutRequest struct {
	RegistrationID string
	EventID        string
	EventName      string
	Amount         money.Cents
	Currency       string // "USD"
	Lines          []orders.Line
	BuyerEmail     string
	// SuccessURL may hold the literal {CHECKOUT_SESSION_ID}, replaced by
	// the session id when the buyer is sent there.
	SuccessURL string
	CancelURL  string
	// ExpiresAt is the end of the registration's checkout window.
	ExpiresAt time.Time
}

// Session is an opened checkout: URL is the hosted page to send the buyer to.
type Session struct {
	ID  string
	URL string
}

// Processor is a card processor or wallet provider.
type Processor interface {
	// Name is the processor's name as registrations record it: "card",
	// "wallet" or "stripe".
	Name() string
	CreateSession(ctx context.Context, req CheckoutRequest) (Session, error)
	// Expire closes an open session so it can no longer be paid. paid
	// reports that it had been paid already.
	Expire(ctx context.Context, sessionID string) (paid bool, err error)
}
