package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
)

// confirmation is the confirm response: ticketd's own type, so both
// servers write the same JSON (the tickets' kind and refId stay empty and
// are omitted).
type confirmation = orders.Confirmation

// claim confirms an order. The claiming transaction either commits the sale
// whole or rolls back; a claim that found too little stock is then recorded
// as a failed order by a statement of its own.
func (a *app) claim(ctx context.Context, channelID, orderID string, amount money.Cents, ref string) (confirmation, error) {
	for {
		var res confirmation
		var soldOut bool
		err := withRetry(ctx, func() error {
			var err error
			res, soldOut, err = a.claimTx(ctx, channelID, orderID, amount, ref)
			return err
		})
		if err != nil || !soldOut {
			return res, err
		}
		tag, err := a.pool.Exec(ctx, `
			UPDATE baseline.orders SET status = 'failed', fail_reason = 'sold_out' WHERE id = $1 AND status = 'pending'`, orderID)
		if err != nil {
			return confirmation{}, fmt.Errorf("confirm: mark failed: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return confirmation{}, orders.ConfirmFailed("sold_out")
		}
		// A concurrent confirm of the same order settled it between our
		// rollback and this update: answer what it decided.
	}
}

// orderLine is a line of the order being confirmed.
type orderLine struct {
	ticketID, name string
	quantity       int64
}

// claimTx is one attempt. It locks the order row, checks its state and
// amount, claims each ticket type and then the event with conditional
// updates (ticket types in id order, then the event, the same order in
// every confirm, so two confirms never deadlock on each other), marks it
// paid and issues the tickets. soldOut reports a rolled-back claim.
func (a *app) claimTx(ctx context.Context, channelID, orderID string, amount money.Cents, ref string) (confirmation, bool, error) {
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return confirmation{}, false, fmt.Errorf("confirm: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit

	rows, err := tx.Query(ctx, `
		SELECT o.status, o.channel_id, o.event_id, o.total_cents, o.expires_at <= now(), l.ticket_type_id, l.name, l.quantity
		FROM baseline.orders o JOIN baseline.order_lines l ON l.order_id = o.id
		WHERE o.id = $1 ORDER BY l.pos FOR UPDATE OF o`, orderID)
	if err != nil {
		return confirmation{}, false, fmt.Errorf("confirm: lock order: %w", err)
	}
	var status, owner, eventID string
	var total int64
	var expired bool
	var lines []orderLine
	for rows.Next() {
		var l orderLine
		if err := rows.Scan(&status, &owner, &eventID, &total, &expired, &l.ticketID, &l.name, &l.quantity); err != nil {
			return confirmation{}, false, fmt.Errorf("confirm: lock order: %w", err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return confirmation{}, false, fmt.Errorf("confirm: lock order: %w", err)
	}
	if len(lines) == 0 || owner != channelID {
		return confirmation{}, false, orders.ErrNotFound
	}
	switch status {
	case "paid":
		c, err := issued(ctx, tx, orderID)
		return c, false, err
	case "failed":
		return confirmation{}, false, orders.ConfirmFailed("failed")
	}
	if d := amount - money.Cents(total); d > orders.Tolerance || d < -orders.Tolerance {
		return confirmation{}, false, orders.AmountMismatch(money.Cents(total))
	}
	if expired {
		if _, err := tx.Exec(ctx, `UPDATE baseline.orders SET status = 'failed', fail_reason = 'expired' WHERE id = $1`, orderID); err != nil {
			return confirmation{}, false, fmt.Errorf("confirm: expire: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return confirmation{}, false, fmt.Errorf("confirm: expire: %w", err)
		}
		return confirmation{}, false, orders.ConfirmFailed("expired")
	}

	qty := map[string]int64{}
	var admissions int64
	tix := confirmation{OrderID: orderID, Status: orders.StatusPaid}
	var seqs []int32
	var ids, types, labels []string
	for _, l := range lines {
		qty[l.ticketID] += l.quantity
		admissions += l.quantity
		for range l.quantity {
			n := len(tix.Tickets) + 1
			id := orderID + "-" + strconv.Itoa(n)
			tix.Tickets = append(tix.Tickets, orders.Ticket{TicketID: id, Label: l.name})
			seqs, ids, types, labels = append(seqs, int32(n)), append(ids, id), append(types, l.ticketID), append(labels, l.name)
		}
	}
	sorted := make([]string, 0, len(qty))
	for id := range qty {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)

	// The paid writes and the claims go out as one pipelined batch. The
	// claimed ticket-type and event rows are the hot ones: they stay locked
	// from their update until the commit, so they are updated last and
	// every round trip saved while they are held is throughput. If a claim
	// matches no row, the whole batch is rolled back.
	b := &pgx.Batch{}
	b.Queue(`UPDATE baseline.orders SET status = 'paid', partner_reference = $2, paid_at = now() WHERE id = $1`, orderID, ref)
	b.Queue(`INSERT INTO baseline.tickets (id, order_id, seq, event_id, ticket_type_id, label)
		SELECT t.id, $1, t.seq, $2, t.type, t.label FROM unnest($3::text[], $4::int[], $5::text[], $6::text[]) AS t(id, seq, type, label)`,
		orderID, eventID, ids, seqs, types, labels)
	for _, id := range sorted {
		b.Queue(`UPDATE baseline.ticket_types SET sold = sold + $3
			WHERE event_id = $1 AND id = $2 AND sold + $3 <= capacity RETURNING sold`, eventID, id, qty[id])
	}
	// The event row is claimed only when the event has a cap: an uncapped
	// event's row would serialise every confirm for nothing. Which case
	// holds is read in the statement itself; apply cannot change it while
	// this transaction holds its ticket-type locks (see apply).
	b.Queue(`WITH claim AS (
			UPDATE baseline.events SET sold = sold + $2
			WHERE id = $1 AND capacity IS NOT NULL AND sold + $2 <= capacity RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM claim) OR (SELECT capacity IS NULL FROM baseline.events WHERE id = $1)`, eventID, admissions)
	br := tx.SendBatch(ctx, b)
	for range 2 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return confirmation{}, false, fmt.Errorf("confirm: mark paid: %w", err)
		}
	}
	claimed := true
	for range sorted {
		var sold int64
		switch err := br.QueryRow().Scan(&sold); {
		case errors.Is(err, pgx.ErrNoRows):
			claimed = false
		case err != nil:
			_ = br.Close()
			return confirmation{}, false, fmt.Errorf("confirm: claim: %w", err)
		}
	}
	var eventOK bool
	if err := br.QueryRow().Scan(&eventOK); err != nil {
		_ = br.Close()
		return confirmation{}, false, fmt.Errorf("confirm: claim event: %w", err)
	}
	claimed = claimed && eventOK
	if err := br.Close(); err != nil {
		return confirmation{}, false, fmt.Errorf("confirm: batch: %w", err)
	}
	if !claimed {
		return confirmation{}, true, nil // deferred Rollback undoes the batch
	}
	if err := tx.Commit(ctx); err != nil {
		return confirmation{}, false, fmt.Errorf("confirm: commit: %w", err)
	}
	return tix, false, nil
}

// issued reads the tickets of a paid order: a repeated confirm answers them
// again with duplicate set.
func issued(ctx context.Context, tx pgx.Tx, orderID string) (confirmation, error) {
	rows, err := tx.Query(ctx, `SELECT id, label FROM baseline.tickets WHERE order_id = $1 ORDER BY seq`, orderID)
	if err != nil {
		return confirmation{}, fmt.Errorf("confirm: read tickets: %w", err)
	}
	c := confirmation{OrderID: orderID, Status: orders.StatusPaid, Duplicate: true}
	for rows.Next() {
		var t orders.Ticket
		if err := rows.Scan(&t.TicketID, &t.Label); err != nil {
			return confirmation{}, fmt.Errorf("confirm: read tickets: %w", err)
		}
		c.Tickets = append(c.Tickets, t)
	}
	return c, rows.Err()
}
