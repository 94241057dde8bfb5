package schema_test

import (
	"context"
	"sync"
	"testing"
	"testing/fstest"

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
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	// Back to a database that has seen the migrations before 003 only.
	if _, err := pool.Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= 3 {
			break
		}
		if _, err := pool.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	if _, err := pool.Exec(ctx, `
		CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO schema_migrations (version, name) SELECT v, 'before 003' FROM generate_series(1, 2) v;
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
