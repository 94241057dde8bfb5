package worker

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/outbox"
)

// A paid storefront order queues the buyer's e-mail and the host's notice
// (to the tenant's notifyEmail); a partner order the buyer's only (interface.md,
// partner rule 5). Written twice, each stays one row.
func TestPaidOrdersQueueBuyerAndHostMail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `INSERT INTO tenants (id, doc) VALUES
		('t_1', '{"name": "Acme", "notifyEmail": "host@acme.test"}'),
		('t_quiet', '{"name": "Quiet", "notifyEmail": ""}')`); err != nil {
		t.Fatal(err)
	}
	shop := record("ev_shop", 2)
	shop.ChannelID, shop.Source = "", orders.SourceStorefront
	quiet := record("ev_shop", 1)
	quiet.ChannelID, quiet.Source, quiet.TenantID = "", orders.SourceStorefront, "t_quiet"
	partner := record("ev_partner", 1)
	for range 2 {
		b.confirm(t, shop, "", 1_700_000_000_000)
		b.confirm(t, quiet, "", 1_700_000_000_000)
		b.confirm(t, partner, "ref", 1_700_000_000_000)
		drain(t, b.worker("w"))
	}
	want := map[string]string{
		shop.OrderID + "/" + outbox.BuyerTickets:    "ada@example.com",
		shop.OrderID + "/" + outbox.HostNotify:      "host@acme.test",
		quiet.OrderID + "/" + outbox.BuyerTickets:   "ada@example.com",
		partner.OrderID + "/" + outbox.BuyerTickets: "ada@example.com",
	}
	rows, err := b.pool.Query(ctx, `SELECT order_id || '/' || kind, recipient FROM outbox`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	n := 0
	for rows.Next() {
		var k, r string
		if err := rows.Scan(&k, &r); err != nil {
			t.Fatal(err)
		}
		got[k] = r
		n++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if n != len(want) {
		t.Fatalf("%d outbox rows %v, want %v", n, got, want)
	}
	for k, r := range want {
		if got[k] != r {
			t.Errorf("outbox %s: recipient %q, want %q", k, got[k], r)
		}
	}
}
