package refunddb_test

import (
	"context"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/sync/pgtest"
	"github.com/ticketd/ticketd/sync/refunddb"
)

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return pgtest.New(t)
}

func outcome(id, tenant string) registrations.Outcome {
	return registrations.Outcome{RefundReason: "sold_out", Registration: registrations.Registration{
		ID: id, EventID: "ev_jazz", TenantID: tenant, Status: registrations.StatusRefundRequired,
		PaymentStatus: registrations.PaymentRefundRequired, Total: 4250, Paid: 4250, Currency: "USD",
		BuyerName: "Ada", BuyerEmail: "ada@example.test", Processor: "card", SessionID: "cs_1", Reason: "sold_out",
	}}
}

func payment(id, paymentID string) registrations.Payment {
	return registrations.Payment{RegistrationID: id, Processor: "card", PaymentID: paymentID, Amount: 4250, Currency: "usd"}
}

func TestRefundWritesTheRowAndOneHostNotice(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO tenants (id, doc) VALUES ('t1', '{"id":"t1","notifyEmail":"host@example.test"}'),
		('t2', '{"id":"t2"}')`); err != nil {
		t.Fatal(err)
	}
	s := refunddb.Store{Pool: pool}
	reg := keys.OrderID("ev_jazz", "late1")
	for range 2 { // a retried webhook records it again
		if err := s.Refund(ctx, outcome(reg, "t1"), payment(reg, "cs_1")); err != nil {
			t.Fatal(err)
		}
	}
	var reason, email string
	var amount int64
	if err := pool.QueryRow(ctx, `SELECT reason, amount_cents, buyer_email FROM refunds WHERE registration_id = $1`, reg).Scan(&reason, &amount, &email); err != nil {
		t.Fatal(err)
	}
	if reason != "sold_out" || amount != 4250 || email != "ada@example.test" {
		t.Fatalf("refund row: %s %d %s", reason, amount, email)
	}
	var n int
	var recipient string
	var payload []byte
	if err := pool.QueryRow(ctx, `SELECT count(*) OVER (), recipient, payload FROM outbox WHERE order_id = $1 AND kind = 'host_refund'`, reg).Scan(&n, &recipient, &payload); err != nil {
		t.Fatal(err)
	}
	var notice refunddb.Notice
	if err := json.Unmarshal(payload, &notice); err != nil {
		t.Fatal(err)
	}
	if n != 1 || recipient != "host@example.test" || notice.Amount != 4250 || notice.Reason != "sold_out" || notice.PaymentID != "cs_1" {
		t.Fatalf("outbox: %d rows, to %s, %+v", n, recipient, notice)
	}

	// A tenant without an address: the refund is still recorded.
	reg2 := keys.OrderID("ev_jazz", "late2")
	if err := s.Refund(ctx, outcome(reg2, "t2"), payment(reg2, "cs_2")); err != nil {
		t.Fatal(err)
	}
	var rows int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM refunds WHERE registration_id = $1`, reg2).Scan(&rows)
	if rows != 1 {
		t.Fatalf("refund of a tenant without notifyEmail not recorded")
	}
}

// A second charge of a confirmed registration is a refund of its own,
// beside the first: each payment to give back has its row.
func TestEachPaymentToRefundHasItsRow(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO tenants (id, doc) VALUES ('t1', '{"id":"t1","notifyEmail":"host@example.test"}')`); err != nil {
		t.Fatal(err)
	}
	s := refunddb.Store{Pool: pool}
	reg := keys.OrderID("ev_jazz", "twice")
	if err := s.Refund(ctx, outcome(reg, "t1"), payment(reg, "cs_a")); err != nil {
		t.Fatal(err)
	}
	second := outcome(reg, "t1")
	second.RefundReason, second.Status = "already_paid", registrations.StatusConfirmed
	if err := s.Refund(ctx, second, payment(reg, "cs_b")); err != nil {
		t.Fatal(err)
	}
	var reasons string
	if err := pool.QueryRow(ctx, `SELECT string_agg(payment_id || ':' || reason, ',' ORDER BY payment_id) FROM refunds WHERE registration_id = $1`, reg).Scan(&reasons); err != nil {
		t.Fatal(err)
	}
	if reasons != "cs_a:sold_out,cs_b:already_paid" {
		t.Fatalf("refund rows: %s", reasons)
	}
	// The host hears of each payment, not once for the registration.
	if err := pool.QueryRow(ctx, `SELECT string_agg(ref || ':' || (payload->>'paymentId'), ',' ORDER BY ref) FROM outbox
		WHERE order_id = $1 AND kind = 'host_refund'`, reg).Scan(&reasons); err != nil {
		t.Fatal(err)
	}
	if reasons != "cs_a:cs_a,cs_b:cs_b" {
		t.Fatalf("host notices (ref:paymentId): %s", reasons)
	}
}

// A registration Redis lost comes without a tenant: the event's tenant in
// the catalog of record is the host told, and the refunds row keeps it.
func TestLostRegistrationsRefundReachesTheEventsHost(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO tenants (id, doc) VALUES ('t1', '{"id":"t1","notifyEmail":"host@example.test"}');
		INSERT INTO events (id, tenant_id, doc) VALUES ('ev_jazz', 't1', '{}')`); err != nil {
		t.Fatal(err)
	}
	reg := keys.OrderID("ev_jazz", "lost1")
	o := outcome(reg, "")
	o.EventID, o.RefundReason, o.Reason = "", "lost", "lost"
	if err := (refunddb.Store{Pool: pool}).Refund(ctx, o, payment(reg, "cs_lost")); err != nil {
		t.Fatal(err)
	}
	var tenant, event, recipient string
	if err := pool.QueryRow(ctx, `SELECT tenant_id, event_id FROM refunds WHERE registration_id = $1`, reg).Scan(&tenant, &event); err != nil {
		t.Fatal(err)
	}
	if tenant != "t1" || event != "ev_jazz" {
		t.Fatalf("refunds row: tenant %q, event %q", tenant, event)
	}
	if err := pool.QueryRow(ctx, `SELECT recipient FROM outbox WHERE order_id = $1 AND kind = 'host_refund'`, reg).Scan(&recipient); err != nil {
		t.Fatalf("no host notice for a lost registration: %v", err)
	}
	if recipient != "host@example.test" {
		t.Fatalf("notice to %s", recipient)
	}
}

// With Postgres away the error comes back (the webhook answers 503 and
// the processor retries).
func TestRefundFailsWhenPostgresIsAway(t *testing.T) {
	pool := newPool(t)
	pool.Close()
	if err := (refunddb.Store{Pool: pool}).Refund(context.Background(), outcome(keys.OrderID("ev_jazz", "x"), "t1"), payment("x", "cs_x")); err == nil {
		t.Fatal("Refund on a closed pool succeeded")
	}
}
