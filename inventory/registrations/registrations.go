// Package registrations runs storefront registrations (interface.md,
// Storefront registration; decisions.md section 3) on the same Redis state
// as partner orders, so that a storefront sale and a partner confirm can
// never together sell more than a capacity.
//
// A registration is an order of source "storefront": its id is an order id
// (keys.OrderEvent works on it, its hash is Space.Order(id)), and once paid
// it is queued on its partition's paid stream like a confirmed partner
// order, so the sync worker writes it to Postgres with its tickets and
// outbox rows, and a rebuild of Redis counts it.
//
// Unlike a pending partner order, an awaiting-payment registration claims
// its inventory at once (the sold counters, its seats, a discount use, the
// buyer's admissions): a paid registration must never find its capacity
// gone. The claim lasts the register hold (TICKETD_REGISTER_HOLD_TTL) until
// a checkout session is opened for it, then the checkout window counted
// from the registration (TICKETD_CHECKOUT_TTL); a registration whose
// window passed unpaid is expired by the sweeper, which gives everything
// back. Nothing of the claim lapses by itself before that: a payment that
// comes after the window but before the sweep books it.
//
// What is held without paying is bounded: a buyer (normalised e-mail) has
// one registration awaiting payment per event (a new one releases the
// older), and a client IP at most its limit of them together with its seat
// hold tokens (inventory/holds).
package registrations

import (
	"context"
	"time"

	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/roompass"
)

// Registration states as the storefront shows them (GET registration's
// data.status).
const (
	StatusAwaitingPayment = "awaiting_payment"
	StatusConfirmed       = "confirmed"
	StatusExpired         = "expired"
	StatusRefundRequired  = "refund_required"
)

// Payment states (data.payment.paymentStatus).
const (
	PaymentUnpaid         = "unpaid"
	PaymentPaid           = "paid"
	PaymentNotRequired    = "not_required" // a free registration
	PaymentRefundRequired = "refund_required"
)

// Buyer is the validated buyer of checkout, the one type from the handler
// to the order record.
type Buyer = checkout.Buyer

// Request is a priced, validated register-guest.
type Request struct {
	EventID  string
	TenantID string
	Buyer    Buyer
	// Quote is the priced cart: its claims, lines, admissions, seat labels,
	// discount and total. A total of 0 makes the registration free: it is
	// confirmed at once.
	Quote     pricing.Quote
	ShowingID string
	// HoldToken is the seat hold token that holds Quote.SeatLabels; "" when
	// the cart has no single seats.
	HoldToken string
	// MaxPerBuyer is the event's maxTicketsPerBuyer (0: no limit), counted
	// per normalised buyer e-mail.
	MaxPerBuyer int64
	// Client is who the registration counts for while it awaits payment
	// (holds.Client: the storefront's client IP; the zero value counts
	// none).
	Client holds.Client
	// CatalogVersion is the catalog version the cart was priced with.
	CatalogVersion int64
	// Pass is the waiting room's pass the registration burns (its
	// signature checked by the caller: room.Service.CheckPass); nil for an
	// event without a room. Its units become the registration's claim in
	// the step that makes it.
	Pass *roompass.Pass
	// PassInHold says the hold token (HoldToken) carries the pass, on a
	// seated event with a waiting room: the pass made the token
	// (seats.Engine.CreatePassToken), and the registration burns its place
	// (QUEUE_REQUIRED when no pass made it). Pass is nil then.
	PassInHold bool
}

// Registration is what ticketd knows of a registration.
type Registration struct {
	ID       string
	EventID  string
	TenantID string
	Status   string // one of the Status constants
	// PaymentStatus is one of the Payment constants.
	PaymentStatus string
	Total         money.Cents
	// Paid is the amount the processor reported paid (0 until then).
	Paid     money.Cents
	Currency string
	// ExpiresAt ends the checkout window of a registration awaiting
	// payment: the register hold until a checkout session is opened for
	// it, then PayBy.
	ExpiresAt time.Time
	// ShowingID is the showing the registration is for ("" for an event
	// without showings).
	ShowingID string
	Lines     []orders.Line
	// The adjustments Total holds beside the lines (a registration read
	// while its order record is in Redis; zero otherwise): Total is the
	// lines' amounts - Discount + Fee + VAT + RefundProtection.
	Discount         money.Cents
	DiscountCode     string
	Fee              money.Cents
	VAT              money.Cents
	RefundProtection money.Cents
	// Tickets are issued when the registration is confirmed.
	Tickets    []orders.Ticket
	BuyerName  string
	BuyerEmail string
	// Processor and SessionID name the checkout session attached to it.
	Processor string
	SessionID string
	// Reason says why a registration needs a refund: "cancelled",
	// "sold_out", "seat_lost", "discount_used_up", "buyer_limit", "lost"
	// ("amount_mismatch" in data from before such payments were refused);
	// or, expired, "replaced": a newer registration of the same buyer
	// released it.
	Reason string
	// PayBy is when the window of a registration awaiting payment ends once
	// a checkout session is opened for it: the registration's creation plus
	// the checkout TTL. A session opened for it may live until then.
	PayBy time.Time
}

// Payment is a processor's report that a registration was paid.
type Payment struct {
	RegistrationID string
	Processor      string // "card", "wallet", "stripe"
	// PaymentID is the processor's id of the payment (its session id).
	PaymentID string
	Amount    money.Cents
	Currency  string // lower or upper case; only USD is accepted
	// TenantID is the tenant the processor's session was opened for, when
	// the caller knows it (else Service.Event's tenant of the event): a
	// registration ticketd knows nowhere is then taken for lost only if its
	// id was minted for that tenant.
	TenantID string
}

// Outcome is what a payment did.
type Outcome struct {
	Registration
	// Duplicate is set when the registration was already paid by this
	// payment: nothing changed.
	Duplicate bool
	// Reclaimed is set when the payment came after the checkout window and
	// the inventory was claimed anew.
	Reclaimed bool
	// RefundReason is set when this payment must be refunded: the
	// registration's Reason, or "already_paid" when the registration was
	// confirmed by another payment (it stays confirmed).
	RefundReason string
	// Marked is set when the payment's Mark was written with it.
	Marked bool
}

// Mark is what a webhook remembers of the delivery that brought a
// payment (handlers/webhooks): PayMarked writes it in the payment's own
// step when the payment is booked (paid, or paid before by it) and needs
// nothing more, so the webhook's answer takes no round trip of its own.
// Key must be in the registration's slot (keys.Space.WebhookSeen).
type Mark struct {
	Key, Value string
	TTL        time.Duration
}

// Expirer closes a processor's checkout session before its registration's
// hold is given back: paid reports the session was paid already (the
// registration then keeps its hold for the webhook on its way).
type Expirer interface {
	Expire(ctx context.Context, processor, sessionID string) (paid bool, err error)
}
