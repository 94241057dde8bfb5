package orderdb_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/pgtest"
)

func TestOrderAndTickets(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, event_id, tenant_id, channel_id, source, status, buyer_name, buyer_email, currency,
		subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
		partner_reference, created_at, paid_at, stream_id) VALUES
		('ochan.ev_1', 'ev_1', 't_1', 'ch_1', 'channel', 'paid', 'A', 'a@example.com', 'USD', 1000, 0, 0, 150, 0, 0, 1150, 'psp-1', now(), now(), '1-0'),
		('oshop.ev_1', 'ev_1', 't_1', NULL, 'storefront', 'paid', 'B', 'b@example.com', 'USD', 2000, 0, 0, 0, 0, 0, 2000, NULL, now(), now(), '1-1')`)
	if err != nil {
		t.Fatal(err)
	}
	// Ten tickets: "-10" must come after "-9".
	for i := 1; i <= 10; i++ {
		if _, err := pool.Exec(ctx, `INSERT INTO tickets (id, order_id, event_id, kind, ref_id, label, issued_at)
			VALUES ($1, 'ochan.ev_1', 'ev_1', 'seat', $2, $2, now())`, "ochan.ev_1-"+strconv.Itoa(i), "A-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	s := orderdb.Store{Pool: pool}

	o, ok, err := s.Order(ctx, "ochan.ev_1")
	if err != nil || !ok {
		t.Fatalf("Order(ochan) = %+v, %v, %v", o, ok, err)
	}
	want := orders.State{OrderID: "ochan.ev_1", Status: "paid", ChannelID: "ch_1", Amount: 1150, PartnerReference: "psp-1",
		BuyerName: "A", BuyerEmail: "a@example.com"}
	if o != want {
		t.Fatalf("Order(ochan) = %+v, want %+v", o, want)
	}
	o, ok, err = s.Order(ctx, "oshop.ev_1")
	if err != nil || !ok || o.ChannelID != "" || o.Amount != 2000 || o.PartnerReference != "" {
		t.Fatalf("Order(oshop) = %+v, %v, %v; want a storefront order without channel", o, ok, err)
	}
	o, ok, err = s.Order(ctx, "onone.ev_1")
	if err != nil || ok || o != (orders.State{}) {
		t.Fatalf("Order(onone) = %+v, %v, %v; want not found", o, ok, err)
	}

	tix, err := s.Tickets(ctx, "ochan.ev_1")
	if err != nil || len(tix) != 10 {
		t.Fatalf("Tickets = %+v, %v; want 10", tix, err)
	}
	if tix[0] != (orders.Ticket{TicketID: "ochan.ev_1-1", Label: "A-1", Kind: "seat", RefID: "A-1"}) || tix[9].TicketID != "ochan.ev_1-10" {
		t.Fatalf("Tickets not in issue order: first %+v, last %+v", tix[0], tix[9])
	}
}
