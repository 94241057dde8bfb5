package mailer

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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

// An address's sends of the last hour are counted from outbox_rate, which
// holds only the rows that took a slot (migration 009), so the sync
// worker's insert of each paid order's e-mail row updates one index less:
// recentSQL must stay a query that index answers.
func TestRecentSendsAreCountedFromTheSlotIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	var def string
	if err := pool.QueryRow(ctx, `SELECT pg_get_indexdef('outbox_rate'::regclass)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "rate_at IS NOT NULL") {
		t.Fatalf("outbox_rate is %s: it holds rows that never took a slot", def)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rs, err := tx.Query(ctx, `EXPLAIN `+recentSQL, rateKey("ada@example.com"), int64(1), 5)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "using outbox_rate on outbox") {
		t.Fatalf("recentSQL does not read outbox_rate:\n%s", plan)
	}
}
