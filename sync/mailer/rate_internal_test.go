package mailer

import (
	"context"
	"strings"
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

// An address's sends of the last hour are counted from outbox_rate, which
// holds only the rows that took a slot (migration 009), so the sync
// worker's insert of each paid order's e-mail row updates one index less:
// recentSQL must stay a query that index can answer, also as the generic
// plan of a prepared statement (pgx prepares it). Seq scans are off: on a
// test's few rows the planner would rightly scan the table.
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
	for _, q := range []string{`SET LOCAL enable_seqscan = off`, `SET LOCAL plan_cache_mode = force_generic_plan`,
		`PREPARE recent_sends(text, bigint, bigint) AS ` + recentSQL} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var plan string
	if err := tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE recent_sends('`+rateKey("ada@example.com")+`', 1, 5)`).
		Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DEALLOCATE recent_sends`); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, `"Index Name": "outbox_rate"`) {
		t.Fatalf("recentSQL's generic plan does not read outbox_rate:\n%s", plan)
	}
}
