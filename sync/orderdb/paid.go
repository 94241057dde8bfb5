package orderdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/tickets"
)

// PaidOrder is a paid order with what its e-mails show beside it.
type PaidOrder struct {
	orders.Record
	Status string
	// EventName is the event's name in the catalog of record, its id when
	// the event is not there; StartsAt is the start of the event or of the
	// order's showing ("" when unknown); TenantName the host's name.
	EventName  string
	StartsAt   string
	TenantName string
}

// Paid returns a paid order with its lines and tickets (one row, one
// query: migration 008); ok is false when
// Postgres has no such order, or has it in another status (an order
// cancelled or refunded gets no e-mail and no ticket page).
func (s Store) Paid(ctx context.Context, orderID string) (PaidOrder, bool, error) {
	if _, ok := keys.OrderEvent(orderID); !ok {
		return PaidOrder{}, false, nil
	}
	var o PaidOrder
	var sub, disc, extras, fee, vat, rp, total int64
	var created, paid time.Time
	err := s.Pool.QueryRow(ctx, `SELECT o.id, o.event_id, o.tenant_id, coalesce(o.channel_id, ''), o.source, o.status,
		o.buyer_name, o.buyer_email, coalesce(o.buyer_phone, ''), coalesce(o.showing_id, ''), coalesce(o.discount_code, ''),
		o.currency, o.subtotal_cents, o.discount_cents, o.extras_cents, o.fee_cents, o.vat_cents,
		o.refund_protection_cents, o.total_cents, coalesce(o.partner_reference, ''), o.created_at, o.paid_at,
		coalesce(e.doc->>'name', o.event_id),
		coalesce((SELECT s->>'startsAt' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(e.doc->'showings') = 'array'
			THEN e.doc->'showings' ELSE '[]'::jsonb END) s WHERE s->>'id' = o.showing_id LIMIT 1), e.doc->>'startsAt', ''),
		coalesce(t.doc->>'name', o.tenant_id), o.lines, o.tickets
		FROM orders o LEFT JOIN events e ON e.id = o.event_id LEFT JOIN tenants t ON t.id = o.tenant_id
		WHERE o.id = $1 AND o.status = 'paid'`, orderID).
		Scan(&o.OrderID, &o.EventID, &o.TenantID, &o.ChannelID, &o.Source, &o.Status,
			&o.BuyerName, &o.BuyerEmail, &o.BuyerPhone, &o.ShowingID, &o.DiscountCode,
			&o.Currency, &sub, &disc, &extras, &fee, &vat, &rp, &total, &o.PartnerReference, &created, &paid,
			&o.EventName, &o.StartsAt, &o.TenantName, &o.Lines, &o.Tickets)
	if errors.Is(err, pgx.ErrNoRows) {
		return PaidOrder{}, false, nil
	}
	if err != nil {
		return PaidOrder{}, false, fmt.Errorf("orderdb: paid order %s: %w", orderID, err)
	}
	o.Subtotal, o.Discount, o.Extras, o.Fee = money.Cents(sub), money.Cents(disc), money.Cents(extras), money.Cents(fee)
	o.VAT, o.RefundProtection, o.Total = money.Cents(vat), money.Cents(rp), money.Cents(total)
	o.CreatedAtMs, o.PaidAtMs = created.UnixMilli(), paid.UnixMilli()

	return o, true, nil
}

// TicketOrder returns a paid order as its ticket page shows it
// (handlers/pages); ok is false when there is none.
func (s Store) TicketOrder(ctx context.Context, orderID string) (tickets.Order, bool, error) {
	o, ok, err := s.Paid(ctx, orderID)
	if !ok || err != nil {
		return tickets.Order{}, ok, err
	}
	return o.TicketOrder(), true, nil
}

// TicketOrder is o as its ticket page and its tickets' QR codes show it.
func (o PaidOrder) TicketOrder() tickets.Order {
	return tickets.Order{OrderID: o.OrderID, EventID: o.EventID, EventName: o.EventName, StartsAt: o.StartsAt,
		BuyerName: o.BuyerName, Tickets: o.Tickets}
}
