package orderdb_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/pgtest"
)

func TestPaidReadsTheOrderWithLinesTicketsAndNames(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO tenants (id, doc) VALUES ('t_1', '{"name": "Acme Live"}');
		INSERT INTO events (id, tenant_id, doc) VALUES ('ev_1', 't_1',
			'{"name": "Summer Fest", "startsAt": "2027-07-01T18:00:00Z", "showings": [{"id": "sh_2", "startsAt": "2027-07-02T18:00:00Z"}]}');
		INSERT INTO orders (id, event_id, tenant_id, source, status, buyer_name, buyer_email, showing_id, currency,
			subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
			created_at, paid_at, stream_id) VALUES
			('oshop.ev_1', 'ev_1', 't_1', 'storefront', 'paid', 'Bea', 'b@example.com', 'sh_2', 'USD', 2000, 0, 300, 0, 0, 0, 2300, now(), now(), '1-1'),
			('olost.ev_9', 'ev_9', 't_9', 'channel', 'paid', 'Cy', 'c@example.com', NULL, 'USD', 0, 0, 0, 0, 0, 0, 0, now(), now(), '1-2'),
			('ogone.ev_1', 'ev_1', 't_1', 'channel', 'refunded', 'Di', 'd@example.com', NULL, 'USD', 0, 0, 0, 0, 0, 0, 0, now(), now(), '1-3');
		INSERT INTO order_lines VALUES ('oshop.ev_1', 1, 'ticket', 'tk_ga', 2, 1000, 2000), ('oshop.ev_1', 2, 'extra', 'ex_p', 1, 300, 300);
		INSERT INTO tickets (id, order_id, event_id, label, issued_at) VALUES
			('oshop.ev_1-001', 'oshop.ev_1', 'ev_1', 'GA', now()), ('oshop.ev_1-002', 'oshop.ev_1', 'ev_1', 'GA', now())`)
	if err != nil {
		t.Fatal(err)
	}
	s := orderdb.Store{Pool: pool}
	o, ok, err := s.Paid(ctx, "oshop.ev_1")
	if err != nil || !ok {
		t.Fatalf("Paid = %v, %v", ok, err)
	}
	if o.EventName != "Summer Fest" || o.StartsAt != "2027-07-02T18:00:00Z" || o.TenantName != "Acme Live" ||
		o.Total != 2300 || o.BuyerEmail != "b@example.com" || o.Source != "storefront" || o.Status != "paid" {
		t.Fatalf("Paid = %+v", o)
	}
	if len(o.Lines) != 2 || o.Lines[1] != (orders.Line{Kind: "extra", RefID: "ex_p", Quantity: 1, UnitPrice: 300, Amount: 300}) {
		t.Fatalf("lines = %+v", o.Lines)
	}
	if len(o.Tickets) != 2 || o.Tickets[1].TicketID != "oshop.ev_1-002" {
		t.Fatalf("tickets = %+v", o.Tickets)
	}
	// An event and tenant that never reached Postgres: ids stand in for names.
	o, ok, err = s.Paid(ctx, "olost.ev_9")
	if err != nil || !ok || o.EventName != "ev_9" || o.TenantName != "t_9" || o.StartsAt != "" {
		t.Fatalf("Paid(olost) = %+v, %v, %v", o, ok, err)
	}
	to, ok, err := s.TicketOrder(ctx, "oshop.ev_1")
	if err != nil || !ok || to.EventName != "Summer Fest" || len(to.Tickets) != 2 || to.Ticket(0).EventID != "ev_1" {
		t.Fatalf("TicketOrder = %+v, %v, %v", to, ok, err)
	}
	// An order no longer paid is not one: no mail, no ticket page.
	for _, id := range []string{"ogone.ev_1", "onone.ev_1", "not an order", "o\x00.ev_1"} {
		if _, ok, err := s.Paid(ctx, id); ok || err != nil {
			t.Errorf("Paid(%q) = %v, %v; want not found", id, ok, err)
		}
	}
}
