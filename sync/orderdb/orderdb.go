// Package orderdb reads paid orders back from Postgres, the record that
// outlives their Redis copies (order hashes expire after their retention).
package orderdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
)

// Store answers for orders that aged out of Redis. It implements
// orders.Archive.
type Store struct {
	Pool *pgxpool.Pool
}

var _ orders.Archive = Store{}

// Order returns the order with id orderID; ok is false when there is none.
// Caller is empty for orders written before ticketd kept it. An id
// that is not an order id is not found without a query: client junk (a NUL
// above all, which Postgres refuses) never reaches the database.
func (s Store) Order(ctx context.Context, orderID string) (orders.State, bool, error) {
	if _, ok := keys.OrderEvent(orderID); !ok {
		return orders.State{}, false, nil
	}
	var o orders.State
	var total int64
	err := s.Pool.QueryRow(ctx, `SELECT id, status, coalesce(channel_id, ''), total_cents, coalesce(partner_reference, ''),
		coalesce(caller, ''), buyer_name, buyer_email, coalesce(showing_id, '') FROM orders WHERE id = $1`, orderID).
		Scan(&o.OrderID, &o.Status, &o.ChannelID, &total, &o.PartnerReference, &o.Caller, &o.BuyerName, &o.BuyerEmail, &o.ShowingID)
	if errors.Is(err, pgx.ErrNoRows) {
		return orders.State{}, false, nil
	}
	if err != nil {
		return orders.State{}, false, fmt.Errorf("orderdb: lookup %s: %w", orderID, err)
	}
	o.Amount = money.Cents(total)
	return o, true, nil
}

// Tickets returns the tickets of an order in the order they were issued.
func (s Store) Tickets(ctx context.Context, orderID string) ([]orders.Ticket, error) {
	tix := []orders.Ticket{} // no order: none, as an empty list
	err := s.Pool.QueryRow(ctx, `SELECT tickets FROM orders WHERE id = $1`, orderID).Scan(&tix)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("orderdb: tickets of %s: %w", orderID, err)
	}
	return tix, nil
}
