// Package refunddb records the payments ticketd took but could not book,
// so no money is lost silently: a refunds row, and in the same transaction
// an outbox row of kind host_refund that the mailer sends to the event's
// host (the tenant's notifyEmail). It implements webhooks.RefundRecorder.
package refunddb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/sync/outbox"
)

// Store writes refunds to Postgres.
type Store struct {
	Pool *pgxpool.Pool
}

// Notice is the payload of a host_refund outbox row: what the host needs
// to refund the buyer.
type Notice struct {
	RegistrationID string      `json:"registrationId"`
	EventID        string      `json:"eventId"`
	Reason         string      `json:"reason"`
	Processor      string      `json:"processor"`
	PaymentID      string      `json:"paymentId"`
	Amount         money.Cents `json:"amount"` // paid, to refund
	Total          money.Cents `json:"total"`
	Currency       string      `json:"currency"`
	BuyerName      string      `json:"buyerName"`
	BuyerEmail     string      `json:"buyerEmail"`
}

// Refund records payment p, which o says must be refunded
// (o.RefundReason): a registration that needs a refund, or a second charge
// of one already confirmed. The payment named is p's, not the one the
// registration was confirmed with. Recording the same payment again changes
// nothing (a retried webhook). The host's address is the tenant's
// notifyEmail in the catalog of record; a tenant without one gets the
// refunds row alone. An outcome without a tenant (a registration Redis
// lost) takes the tenant of its event. Every payment to refund has its
// row and its own notice (outbox ref = the payment id).
func (s Store) Refund(ctx context.Context, o registrations.Outcome, p registrations.Payment) error {
	if o.ID == "" || p.PaymentID == "" {
		return errors.New("refunddb: a refund without a registration or payment id")
	}
	n := Notice{
		RegistrationID: o.ID, EventID: o.EventID, Reason: o.RefundReason, Processor: p.Processor,
		PaymentID: p.PaymentID, Amount: p.Amount, Total: o.Total, Currency: strings.ToUpper(p.Currency),
		BuyerName: o.BuyerName, BuyerEmail: o.BuyerEmail,
	}
	if n.Reason == "" {
		n.Reason = o.Reason
	}
	if n.Currency == "" {
		n.Currency = "USD"
	}
	if n.EventID == "" { // the registration id carries its event
		n.EventID, _ = keys.OrderEvent(o.ID)
	}
	payload, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("refunddb: encode notice: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		tenant := o.TenantID
		if tenant == "" {
			// An event the catalog of record does not know leaves the
			// tenant empty: the refunds row is kept all the same.
			err := tx.QueryRow(ctx, `SELECT tenant_id FROM events WHERE id = $1`, n.EventID).Scan(&tenant)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("tenant of event %s: %w", n.EventID, err)
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO refunds (registration_id, event_id, tenant_id, processor, payment_id,
			amount_cents, total_cents, currency, reason, buyer_name, buyer_email)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (registration_id, payment_id) DO NOTHING`,
			n.RegistrationID, n.EventID, tenant, n.Processor, n.PaymentID,
			int64(n.Amount), int64(n.Total), n.Currency, n.Reason, n.BuyerName, n.BuyerEmail)
		if err != nil {
			return fmt.Errorf("insert refund: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // recorded before, with its notice
		}
		_, err = tx.Exec(ctx, `INSERT INTO outbox (order_id, kind, ref, recipient, payload)
			SELECT $1, $2, $3, t.doc->>'notifyEmail', $4::jsonb FROM tenants t
			WHERE t.id = $5 AND coalesce(t.doc->>'notifyEmail', '') <> ''
			ON CONFLICT (order_id, kind, ref) DO NOTHING`,
			n.RegistrationID, outbox.HostRefund, n.PaymentID, string(payload), tenant)
		if err != nil {
			return fmt.Errorf("insert host notice: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("refunddb: refund %s: %w", o.ID, err)
	}
	return nil
}
