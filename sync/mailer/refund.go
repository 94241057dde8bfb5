package mailer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
)

// refundData is what the host's refund notice says.
type refundData struct {
	RegistrationID, EventID, EventName string
	Processor, PaymentID               string
	Amount, Reason                     string
}

// reasons says in words why a registration needs a refund
// (registrations.Registration.Reason).
var reasons = map[string]string{
	"sold_out":         "the payment arrived after the checkout window closed, and the event had sold out meanwhile",
	"seat_lost":        "the payment arrived after the checkout window closed, and a seat had been taken meanwhile",
	"discount_used_up": "the payment arrived after the checkout window closed, and the discount code had been used up meanwhile",
	"buyer_limit":      "the payment arrived after the checkout window closed, and the buyer had reached the event's limit per buyer meanwhile",
	"amount_mismatch":  "the amount paid differs from the registration's total",
	"already_paid":     "the registration was paid already by another payment: this second charge is not needed",
	"cancelled":        "the event was cancelled, so the registration cannot be booked",
	"lost":             "ticketd lost the registration before the payment arrived",
}

// refundPayload is the outbox row's payload, when its writer gave one:
// the fallback for a refunds row that is not there (yet).
type refundPayload struct {
	EventID     string       `json:"eventId"`
	Amount      *money.Cents `json:"amount"` // sync/refunddb's Notice, in dollars
	AmountCents int64        `json:"amountCents"`
	Currency    string       `json:"currency"`
	Reason      string       `json:"reason"`
	Processor   string       `json:"processor"`
	PaymentID   string       `json:"paymentId"`
}

// refund reads what a host_refund row needs: the refunds row of the
// payment the outbox row names (ref; sync/refunddb writes both at once; a
// row without a ref takes the registration's newest), else what the row's
// payload says.
func (m *Mailer) refund(ctx context.Context, r row) (refundData, error) {
	var p refundPayload
	_ = json.Unmarshal(r.payload, &p) // a payload is optional
	cents := money.Cents(p.AmountCents)
	if p.Amount != nil {
		cents = *p.Amount
	}
	var fromTable struct {
		eventID, processor, paymentID, currency, reason string
		cents                                           int64
	}
	err := m.Pool.QueryRow(ctx, `SELECT event_id, processor, payment_id, amount_cents, currency, reason
		FROM refunds WHERE registration_id = $1 AND ($2 = '' OR payment_id = $2)
		ORDER BY created_at DESC LIMIT 1`, r.orderID, r.ref).
		Scan(&fromTable.eventID, &fromTable.processor, &fromTable.paymentID, &fromTable.cents, &fromTable.currency, &fromTable.reason)
	switch {
	case err == nil:
		p.EventID, p.Processor, p.PaymentID = fromTable.eventID, fromTable.processor, fromTable.paymentID
		p.Currency, p.Reason, cents = fromTable.currency, fromTable.reason, money.Cents(fromTable.cents)
	case errors.Is(err, pgx.ErrNoRows):
	default:
		return refundData{}, fmt.Errorf("mailer: refund of %s: %w", r.orderID, err)
	}
	if p.EventID == "" {
		p.EventID, _ = keys.OrderEvent(r.orderID)
	}
	if p.Currency == "" {
		p.Currency = "USD"
	}
	d := refundData{RegistrationID: r.orderID, EventID: p.EventID, EventName: p.EventID,
		Processor: p.Processor, PaymentID: p.PaymentID, Amount: strings.ToUpper(p.Currency) + " " + cents.String()}
	if d.Reason = reasons[p.Reason]; d.Reason == "" {
		d.Reason = p.Reason
	}
	if p.EventID != "" {
		var name string
		err := m.Pool.QueryRow(ctx, `SELECT coalesce(doc->>'name', '') FROM events WHERE id = $1`, p.EventID).Scan(&name)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return refundData{}, fmt.Errorf("mailer: event of refund %s: %w", r.orderID, err)
		}
		if name != "" {
			d.EventName = name
		}
	}
	return d, nil
}
