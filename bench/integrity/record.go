package integrity

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/outbox"
)

// Postgres reads ticketd's record (tables orders and tickets, written by
// the sync worker) of one event.
type Postgres struct {
	Pool *pgxpool.Pool
}

// Record returns the paid orders, tickets and revenue of eventID.
func (p Postgres) Record(ctx context.Context, eventID string) (Record, error) {
	var r Record
	var rev int64
	err := p.Pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(total_cents), 0) FROM orders WHERE event_id = $1 AND status = 'paid'`,
		eventID).Scan(&r.Orders, &rev)
	if err != nil {
		return r, fmt.Errorf("integrity: read orders of %s: %w", eventID, err)
	}
	r.Revenue = money.Cents(rev)
	if err := p.Pool.QueryRow(ctx, `SELECT count(*) FROM tickets WHERE event_id = $1`, eventID).Scan(&r.Tickets); err != nil {
		return r, fmt.Errorf("integrity: read tickets of %s: %w", eventID, err)
	}
	return r, nil
}

// SeatLabels returns the seat label of every seat ticket of eventID, one
// per ticket.
func (p Postgres) SeatLabels(ctx context.Context, eventID string) ([]string, error) {
	rows, err := p.Pool.Query(ctx, `SELECT coalesce(ref_id, label) FROM tickets WHERE event_id = $1 AND kind = 'seat'`, eventID)
	if err != nil {
		return nil, fmt.Errorf("integrity: read seat tickets of %s: %w", eventID, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, fmt.Errorf("integrity: read seat tickets of %s: %w", eventID, err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// WaitRecord reads the record until it equals want (the sync worker has
// drained) or timeout passes, and returns the last read. The caller
// compares it with CheckRecord; a record still short at the timeout fails.
func WaitRecord(ctx context.Context, read func(context.Context) (Record, error), want Record, timeout time.Duration) (Record, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := read(ctx)
		if err != nil {
			return got, err
		}
		same := got.Orders == want.Orders && got.Tickets == want.Tickets
		if same || time.Now().After(deadline) || ctx.Err() != nil {
			return got, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StorefrontOrders returns every storefront order of eventID (source
// 'storefront': the paid registrations) with its total, tickets and buyer
// e-mails queued.
func (p Postgres) StorefrontOrders(ctx context.Context, eventID string) (map[string]StoredRegistration, error) {
	rows, err := p.Pool.Query(ctx, `SELECT o.id, o.total_cents,
		(SELECT count(*) FROM tickets t WHERE t.order_id = o.id),
		(SELECT count(*) FROM outbox x WHERE x.order_id = o.id AND x.kind = $2)
		FROM orders o WHERE o.event_id = $1 AND o.source = $3`, eventID, outbox.BuyerTickets, orders.SourceStorefront)
	if err != nil {
		return nil, fmt.Errorf("integrity: read storefront orders of %s: %w", eventID, err)
	}
	defer rows.Close()
	out := map[string]StoredRegistration{}
	for rows.Next() {
		var id string
		var total int64
		var s StoredRegistration
		if err := rows.Scan(&id, &total, &s.Tickets, &s.BuyerMails); err != nil {
			return nil, fmt.Errorf("integrity: read storefront orders of %s: %w", eventID, err)
		}
		s.Total = money.Cents(total)
		out[id] = s
	}
	return out, rows.Err()
}

// SeatOwners returns, per seat label of eventID, the orders of its seat
// tickets (more than one means the seat was issued twice).
func (p Postgres) SeatOwners(ctx context.Context, eventID string) (map[string][]string, error) {
	rows, err := p.Pool.Query(ctx, `SELECT coalesce(ref_id, label), order_id FROM tickets WHERE event_id = $1 AND kind = 'seat'`, eventID)
	if err != nil {
		return nil, fmt.Errorf("integrity: read seat tickets of %s: %w", eventID, err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var label, order string
		if err := rows.Scan(&label, &order); err != nil {
			return nil, fmt.Errorf("integrity: read seat tickets of %s: %w", eventID, err)
		}
		out[label] = append(out[label], order)
	}
	return out, rows.Err()
}
