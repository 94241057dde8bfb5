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

	"github.com/ticketd/ticketd/inventory/apierr"
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
	// Items are what the checkout shows the buyer, by name: every ticket,
	// seat, area, table and extra, then each adjustment (a discount as a
	// negative item, the service fee, VAT, refund protection). They sum to
	// Amount; see Items.Sum.
	Items      Items
	BuyerEmail string
	// SuccessURL may hold the literal {CHECKOUT_SESSION_ID}, replaced by
	// the session id when the buyer is sent there.
	SuccessURL string
	CancelURL  string
	// ExpiresAt is the end of the registration's checkout window.
	ExpiresAt time.Time
}

// Item is one line of a checkout as the buyer reads it. Amount is the
// line's total (UnitPrice times Quantity); a discount is negative.
type Item struct {
	Name      string
	Quantity  int64
	UnitPrice money.Cents
	Amount    money.Cents
}

// Items are a checkout's lines.
type Items []Item

// Sum is the items' total.
func (its Items) Sum() money.Cents {
	var sum money.Cents
	for _, it := range its {
		sum += it.Amount
	}
	return sum
}

// HasNegative reports whether an item (a discount) takes money off.
func (its Items) HasNegative() bool {
	for _, it := range its {
		if it.Amount < 0 || it.UnitPrice < 0 {
			return true
		}
	}
	return false
}

// Session is an opened checkout: URL is the hosted page to send the buyer to.
type Session struct {
	ID  string
	URL string
}

// ErrProcessor is the 502 PAYMENT_PROCESSOR_ERROR of a processor that did
// not answer or failed (the cause is logged where it happened).
var ErrProcessor = apierr.Of("PAYMENT_PROCESSOR_ERROR", "the payment processor did not answer; retry")

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
