package schema_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/pgtest"
	"github.com/ticketd/ticketd/sync/schema"
)

func TestMigrationsAreNumberedInOrder(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Name != "001_init.sql" {
		t.Fatalf("first migration = %+v, want 001_init.sql", ms)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Version <= ms[i-1].Version {
			t.Fatalf("migrations out of order: %s after %s", ms[i].Name, ms[i-1].Name)
		}
	}
}

// The embedded files cannot break the naming rules on purpose, so the rules
// are checked on files of the test's own: versions sort by number, not by
// name, and a bad name or a version used twice is refused.
func TestMigrationNamingRules(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1;")}
	ms, err := schema.MigrationsIn(fstest.MapFS{"10_later.sql": file, "9_earlier.sql": file})
	if err != nil || len(ms) != 2 || ms[0].Name != "9_earlier.sql" || ms[1].Version != 10 || ms[0].SQL != "SELECT 1;" {
		t.Fatalf("migrations = %+v, %v; want 9_earlier.sql then version 10", ms, err)
	}
	for _, bad := range []fstest.MapFS{
		{"init.sql": file},
		{"000_zero.sql": file},
		{"x1_name.sql": file},
		{"001_a.sql": file, "1_b.sql": file},
	} {
		if ms, err := schema.MigrationsIn(bad); err == nil {
			t.Errorf("%v accepted as %+v", bad, ms)
		}
	}
}

// Several nodes starting at once all migrate the same database: none may
// fail and each version is recorded once.
func TestConcurrentMigrateAppliesEachVersionOnce(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t) // already migrated once
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- schema.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	ms, _ := schema.Migrations()
	var n, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || distinct != len(ms) {
		t.Fatalf("schema_migrations has %d rows (%d versions), want %d", n, distinct, len(ms))
	}
	for _, table := range []string{"tenants", "events", "channels", "orders", "order_lines", "tickets", "outbox", "dead_letters"} {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing after migrate (err %v)", table, err)
		}
	}
}

func TestOutboxRefusesUnknownKind(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, event_id, tenant_id, source, status, buyer_name, buyer_email, currency,
		subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
		created_at, paid_at, stream_id)
		VALUES ('o01x', 'ev', 't', 'channel', 'paid', 'A', 'a@example.com', 'USD', 0, 0, 0, 0, 0, 0, 0, now(), now(), '1-0')`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (order_id, kind, recipient, payload) VALUES ('o01x', 'sms', 'x', '{}')`); err == nil {
		t.Fatal("outbox accepted kind 'sms'")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (order_id, kind, recipient, payload) VALUES ('o01x', 'buyer_tickets', 'a@example.com', '{}')`); err != nil {
		t.Fatalf("outbox refused buyer_tickets: %v", err)
	}
}

// A refund notice is for a registration that never became an order: the
// outbox takes it without an orders row, and once per registration.
func TestOutboxTakesHostRefundWithoutOrder(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	for _, kind := range []string{"host_refund", "host_notify", "buyer_tickets"} {
		if _, err := pool.Exec(ctx, `INSERT INTO outbox (order_id, kind, recipient, payload) VALUES ('o01nothere', $1, 'h@example.com', '{}')`, kind); err != nil {
			t.Fatalf("outbox refused %s for a registration without an order: %v", kind, err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (order_id, kind, recipient, payload) VALUES ('o01nothere', 'host_refund', 'h@example.com', '{}')`); err == nil {
		t.Fatal("outbox took a second host_refund row for one registration")
	}
	var attempts int
	var due bool
	if err := pool.QueryRow(ctx, `SELECT attempts, next_attempt_at <= now() FROM outbox WHERE kind = 'host_refund'`).Scan(&attempts, &due); err != nil || attempts != 0 || !due {
		t.Fatalf("a new row: attempts %d, due %v (err %v); want 0, due at once", attempts, due, err)
	}
}

// A database that had outbox rows before migration 003 (nothing sent mail
// then) does not mail them all at once after it: 003 gives the unsent ones
// up with a last_error an operator can find, and leaves sent ones alone.
func TestMailMigrationGivesUpRowsQueuedBeforeIt(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	// Back to a database that has seen the migrations before 003 only.
	migrateBefore(t, pool, 3)
	if _, err := pool.Exec(ctx, `
		INSERT INTO orders (id, event_id, tenant_id, source, status, buyer_name, buyer_email, currency,
			subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
			created_at, paid_at, stream_id) VALUES
			('o01old.ev', 'ev', 't', 'storefront', 'paid', 'A', 'a@example.com', 'USD', 0, 0, 0, 0, 0, 0, 0, now(), now(), '1-0');
		INSERT INTO outbox (order_id, kind, recipient, payload, sent_at) VALUES
			('o01old.ev', 'buyer_tickets', 'a@example.com', '{}', NULL),
			('o01old.ev', 'host_notify', 'h@example.com', '{}', now())`); err != nil {
		t.Fatal(err)
	}
	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	rows := map[string]struct {
		failed  bool
		lastErr string
	}{}
	rs, err := pool.Query(ctx, `SELECT kind, failed_at IS NOT NULL, coalesce(last_error, '') FROM outbox`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var kind string
		var r struct {
			failed  bool
			lastErr string
		}
		if err := rs.Scan(&kind, &r.failed, &r.lastErr); err != nil {
			t.Fatal(err)
		}
		rows[kind] = r
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if r := rows["buyer_tickets"]; !r.failed || r.lastErr != "queued before the mailer existed" {
		t.Errorf("unsent row from before 003: %+v; want given up, saying why", r)
	}
	if r := rows["host_notify"]; r.failed || r.lastErr != "" {
		t.Errorf("sent row from before 003: %+v; want left alone", r)
	}
	var due int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL AND failed_at IS NULL`).Scan(&due); err != nil || due != 0 {
		t.Fatalf("%d rows due after the migration (err %v), want 0", due, err)
	}
}

// Migration 008 moves every order's lines and tickets into its orders row
// (issue 19): rows written in the old shape are all there after it, in the
// row's jsonb, through the order_lines and tickets views (the columns they
// had as tables) and through orderdb, as the mailer and the ticket page
// read them.
func TestOrderRowMigrationKeepsExistingRows(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	migrateBefore(t, pool, 8)
	// The old shape: a channel order with two lines and two seat tickets
	// (ids as reserve mints them), a storefront order whose ticket ids the
	// worker minted ("-001"), one issued later than paid, and an order
	// without lines or tickets.
	if _, err := pool.Exec(ctx, `
		INSERT INTO tenants (id, doc) VALUES ('t_1', '{"name": "Acme Live"}');
		INSERT INTO events (id, tenant_id, doc) VALUES ('ev_1', 't_1', '{"name": "Summer Fest", "startsAt": "2027-07-01T18:00:00Z"}');
		INSERT INTO orders (id, event_id, tenant_id, channel_id, source, status, buyer_name, buyer_email, currency,
			subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
			partner_reference, created_at, paid_at, stream_id) VALUES
			('ochan.ev_1', 'ev_1', 't_1', 'ch_1', 'channel', 'paid', 'Ada', 'a@example.com', 'USD', 5000, 0, 305, 150, 0, 0, 5455,
				'psp-1', '2026-01-01 10:00Z', '2026-01-01 10:01Z', '1-0'),
			('oshop.ev_1', 'ev_1', 't_1', NULL, 'storefront', 'paid', 'Bea', 'b@example.com', 'USD', 1999, 0, 0, 0, 0, 0, 1999,
				NULL, '2026-01-02 10:00Z', '2026-01-02 10:01Z', '1-1'),
			('oempty.ev_1', 'ev_1', 't_1', 'ch_1', 'channel', 'refunded', 'Cy', 'c@example.com', 'USD', 0, 0, 0, 0, 0, 0, 0,
				NULL, '2026-01-03 10:00Z', '2026-01-03 10:01Z', '1-2');
		INSERT INTO order_lines VALUES
			('ochan.ev_1', 1, 'seat', 'A-1', 2, 2500, 5000), ('ochan.ev_1', 2, 'extra', 'ex_p', 1, 305, 305),
			('oshop.ev_1', 1, 'ticket', 'tk_ga', 1, 1999, 1999);
		INSERT INTO tickets (id, order_id, event_id, kind, ref_id, label, issued_at) VALUES
			('ochan.ev_1-2', 'ochan.ev_1', 'ev_1', 'seat', 'A-2', 'Row A, Seat 2', '2026-01-01 10:01Z'),
			('ochan.ev_1-1', 'ochan.ev_1', 'ev_1', 'seat', 'A-1', 'Row A, Seat 1', '2026-01-01 10:01Z'),
			('oshop.ev_1-001', 'oshop.ev_1', 'ev_1', 'ticket', 'tk_ga', 'GA', '2026-01-02 11:00Z');
		INSERT INTO outbox (order_id, kind, recipient, payload) VALUES ('ochan.ev_1', 'buyer_tickets', 'a@example.com', '{}')`); err != nil {
		t.Fatal(err)
	}
	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}

	type line struct {
		order            string
		no               int
		kind, ref        string
		qty, unit, total int64
	}
	var lines []line
	rs, err := pool.Query(ctx, `SELECT order_id, line_no, kind, ref_id, quantity, unit_price_cents, amount_cents
		FROM order_lines ORDER BY order_id, line_no`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var l line
		if err := rs.Scan(&l.order, &l.no, &l.kind, &l.ref, &l.qty, &l.unit, &l.total); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	wantLines := []line{{"ochan.ev_1", 1, "seat", "A-1", 2, 2500, 5000}, {"ochan.ev_1", 2, "extra", "ex_p", 1, 305, 305},
		{"oshop.ev_1", 1, "ticket", "tk_ga", 1, 1999, 1999}}
	if fmt.Sprint(lines) != fmt.Sprint(wantLines) {
		t.Fatalf("order_lines after 008 = %v, want %v", lines, wantLines)
	}

	var tix []string
	rs, err = pool.Query(ctx, `SELECT id, order_id, event_id, kind, coalesce(ref_id, ''), label, issued_at FROM tickets ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id, order, ev, kind, ref, label string
		var issued time.Time
		if err := rs.Scan(&id, &order, &ev, &kind, &ref, &label, &issued); err != nil {
			t.Fatal(err)
		}
		tix = append(tix, fmt.Sprintf("%s %s %s %s %s %q %s", id, order, ev, kind, ref, label, issued.UTC().Format(time.RFC3339)))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	wantTix := []string{
		`ochan.ev_1-1 ochan.ev_1 ev_1 seat A-1 "Row A, Seat 1" 2026-01-01T10:01:00Z`,
		`ochan.ev_1-2 ochan.ev_1 ev_1 seat A-2 "Row A, Seat 2" 2026-01-01T10:01:00Z`,
		`oshop.ev_1-001 oshop.ev_1 ev_1 ticket tk_ga "GA" 2026-01-02T11:00:00Z`,
	}
	if fmt.Sprint(tix) != fmt.Sprint(wantTix) {
		t.Fatalf("tickets after 008 =\n%s\nwant\n%s", strings.Join(tix, "\n"), strings.Join(wantTix, "\n"))
	}

	// The orders name: one row per order, its amounts as they were.
	var n int
	var total int64
	if err := pool.QueryRow(ctx, `SELECT count(*), sum(total_cents) FROM orders`).Scan(&n, &total); err != nil || n != 3 || total != 5455+1999 {
		t.Fatalf("orders after 008: %d rows, total %d (err %v); want 3, %d", n, total, err, 5455+1999)
	}
	var empty string
	if err := pool.QueryRow(ctx, `SELECT lines::text || tickets::text FROM orders WHERE id = 'oempty.ev_1'`).Scan(&empty); err != nil || empty != "[][]" {
		t.Fatalf("an order without lines or tickets: %q (err %v), want [][]", empty, err)
	}

	// The readers of the new shape: tickets in the order they were issued.
	s := orderdb.Store{Pool: pool}
	o, ok, err := s.Paid(ctx, "ochan.ev_1")
	if err != nil || !ok {
		t.Fatalf("Paid(ochan) = %v, %v", ok, err)
	}
	if o.EventName != "Summer Fest" || o.Total != 5455 || len(o.Lines) != 2 ||
		o.Lines[1] != (orders.Line{Kind: "extra", RefID: "ex_p", Quantity: 1, UnitPrice: 305, Amount: 305}) {
		t.Fatalf("Paid(ochan) = %+v", o)
	}
	if want := []orders.Ticket{{TicketID: "ochan.ev_1-1", Label: "Row A, Seat 1", Kind: "seat", RefID: "A-1"},
		{TicketID: "ochan.ev_1-2", Label: "Row A, Seat 2", Kind: "seat", RefID: "A-2"}}; fmt.Sprint(o.Tickets) != fmt.Sprint(want) {
		t.Fatalf("Paid(ochan).Tickets = %+v, want %+v", o.Tickets, want)
	}
	tk, err := s.Tickets(ctx, "oshop.ev_1")
	if err != nil || len(tk) != 1 || tk[0].TicketID != "oshop.ev_1-001" || tk[0].Label != "GA" {
		t.Fatalf("Tickets(oshop) = %+v, %v", tk, err)
	}
	if pgtest.Count(t, pool, `SELECT count(*) FROM outbox WHERE order_id = 'ochan.ev_1'`) != 1 {
		t.Fatal("the outbox row of an order was lost")
	}

	// New rows are checked: a ticket may only carry its own order's id, so
	// no two orders hold one ticket id; a line or ticket of no order is
	// refused, as the foreign keys refused it.
	for _, bad := range []string{
		`UPDATE orders SET tickets = '[{"ticketId": "ochan.ev_1-1", "label": "GA"}]' WHERE id = 'oshop.ev_1'`,
		`UPDATE orders SET tickets = '[{"ticketId": "oshop.ev_1-x", "label": "GA"}]' WHERE id = 'oshop.ev_1'`,
		`UPDATE orders SET tickets = '[{"label": "GA"}]' WHERE id = 'oshop.ev_1'`,
		`INSERT INTO tickets (id, order_id, event_id, label, issued_at) VALUES ('ochan.ev_1-1', 'oempty.ev_1', 'ev_1', 'GA', now())`,
		`INSERT INTO tickets (id, order_id, event_id, label, issued_at) VALUES ('onone.ev_1-1', 'onone.ev_1', 'ev_1', 'GA', now())`,
		`INSERT INTO order_lines VALUES ('onone.ev_1', 1, 'ticket', 'tk_ga', 1, 100, 100)`,
		// what the tables' NOT NULL and primary key refused
		`INSERT INTO order_lines (order_id, line_no, kind, ref_id, quantity) VALUES ('oempty.ev_1', 1, 'ticket', 'tk_ga', 1)`,
		`INSERT INTO tickets (id, order_id, event_id, issued_at) VALUES ('oempty.ev_1-9', 'oempty.ev_1', 'ev_1', now())`,
		`INSERT INTO tickets (id, order_id, event_id, label, issued_at) VALUES ('ochan.ev_1-1', 'ochan.ev_1', 'ev_1', 'A', now())`,
	} {
		if _, err := pool.Exec(ctx, bad); err == nil {
			t.Errorf("accepted: %s", bad)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tickets (id, order_id, event_id, label, issued_at)
		VALUES ('oempty.ev_1-1', 'oempty.ev_1', 'ev_1', 'GA', now())`); err != nil {
		t.Fatalf("a ticket of its own order refused: %v", err)
	}
}

// migrateBefore takes pool's database back to one that has seen, and
// recorded, the migrations before version only.
func migrateBefore(t *testing.T, pool *pgxpool.Pool, version int) {
	t.Helper()
	ctx := context.Background()
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public;
		CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= version {
			break
		}
		if _, err := pool.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
}
