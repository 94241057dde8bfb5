// Package orderdb reads paid orders back from Postgres, the record that
// outlives their Redis copies (order hashes expire after their retention).
package orderdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/money"
)

// Order is the part of an order's row that the status endpoints show.
type Order struct {
	ID         string
	Status     string
	ChannelID  string // "" for storefront orders
	EventID    string
	TotalCents money.Cents
}

// Lookup returns the order with id orderID; ok is false when there is none.
func Lookup(ctx context.Context, pool *pgxpool.Pool, orderID string) (Order, bool, error) {
	var o Order
	err := pool.QueryRow(ctx, `SELECT id, status, coalesce(channel_id, ''), event_id, total_cents FROM orders WHERE id = $1`, orderID).
		Scan(&o.ID, &o.Status, &o.ChannelID, &o.EventID, &o.TotalCents)
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, false, nil
	}
	if err != nil {
		return Order{}, false, fmt.Errorf("orderdb: lookup %s: %w", orderID, err)
	}
	return o, true, nil
}
