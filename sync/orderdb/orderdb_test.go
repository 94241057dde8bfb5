package orderdb_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/pgtest"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, event_id, tenant_id, channel_id, source, status, buyer_name, buyer_email, currency,
		subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
		created_at, paid_at, stream_id) VALUES
		('o07chan', 'ev_1', 't_1', 'ch_1', 'channel', 'paid', 'A', 'a@example.com', 'USD', 1000, 0, 0, 150, 0, 0, 1150, now(), now(), '1-0'),
		('o07shop', 'ev_1', 't_1', NULL, 'storefront', 'paid', 'B', 'b@example.com', 'USD', 2000, 0, 0, 0, 0, 0, 2000, now(), now(), '1-1')`)
	if err != nil {
		t.Fatal(err)
	}

	o, ok, err := orderdb.Lookup(ctx, pool, "o07chan")
	if err != nil || !ok {
		t.Fatalf("Lookup(o07chan) = %+v, %v, %v", o, ok, err)
	}
	if want := (orderdb.Order{ID: "o07chan", Status: "paid", ChannelID: "ch_1", EventID: "ev_1", TotalCents: 1150}); o != want {
		t.Fatalf("Lookup(o07chan) = %+v, want %+v", o, want)
	}

	o, ok, err = orderdb.Lookup(ctx, pool, "o07shop")
	if err != nil || !ok || o.ChannelID != "" || o.TotalCents != 2000 {
		t.Fatalf("Lookup(o07shop) = %+v, %v, %v; want a storefront order without channel", o, ok, err)
	}

	o, ok, err = orderdb.Lookup(ctx, pool, "o07none")
	if err != nil || ok || o != (orderdb.Order{}) {
		t.Fatalf("Lookup(o07none) = %+v, %v, %v; want not found", o, ok, err)
	}
}
