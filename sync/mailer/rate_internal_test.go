package mailer

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/sync/outbox"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// A row whose lease another mailer took between the renewal and the slot
// is not sent by this one: no slot is recorded for a send that would go
// out twice.
func TestALostLeaseTakesNoSlotAndIsNotSent(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO outbox (order_id, kind, recipient, payload, attempts, locked_by, locked_until)
		VALUES ('o01lease', $1, 'ada@example.com', '{}', 1, 'other', now() + interval '5 minutes') RETURNING id`,
		outbox.BuyerTickets).Scan(&id); err != nil {
		t.Fatal(err)
	}
	m := &Mailer{Pool: pool, Name: "m"}
	ok, err := m.takeSlot(ctx, row{id: id, orderID: "o01lease", kind: outbox.BuyerTickets, recipient: "ada@example.com"})
	if err != nil || ok {
		t.Fatalf("takeSlot of a row another mailer holds: %v, %v; want false", ok, err)
	}
	var slots int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE rate_at IS NOT NULL`).Scan(&slots); err != nil || slots != 0 {
		t.Fatalf("%d slots recorded (%v), want none", slots, err)
	}
}
