package registrations

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/pgtest"
	"github.com/ticketd/ticketd/sync/worker"
)

// The sync worker writes a paid registration to Postgres as it writes a
// partner order: an orders row of source storefront without a channel,
// its tickets and one buyer e-mail in the outbox, however often the webhook
// came. Once its Redis copy is gone, Get answers from Postgres and a
// repeated webhook is still a duplicate.
func TestWorkerWritesAPaidRegistration(t *testing.T) {
	b := setup(t)
	pool := pgtest.New(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	reg, err := b.regs.Register(b.ctx, gaReq(2, 1500, "ann@example.test"))
	if err != nil {
		t.Fatal(err)
	}
	free, err := b.regs.Register(b.ctx, gaReq(1, 0, "fred@example.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, reg.ID, "cs_1", "cs_9") // the buyer opened two checkouts
	for range 2 {
		if _, err := pay(b, reg.ID, "cs_1", 3000); err != nil {
			t.Fatal(err)
		}
	}
	drainToPostgres(t, b, pool)
	for _, want := range []struct {
		id    string
		total int64
		ref   *string
		n     int
	}{{reg.ID, 3000, ptr("card:cs_1"), 2}, {free.ID, 0, nil, 1}} {
		var source, tenantID string
		var channel, ref *string
		var total int64
		err := pool.QueryRow(b.ctx, `SELECT source, tenant_id, channel_id, total_cents, partner_reference FROM orders WHERE id = $1`, want.id).
			Scan(&source, &tenantID, &channel, &total, &ref)
		if err != nil {
			t.Fatalf("order %s: %v", want.id, err)
		}
		if source != "storefront" || tenantID != tenant || channel != nil || total != want.total || (ref == nil) != (want.ref == nil) ||
			(ref != nil && *ref != *want.ref) {
			t.Fatalf("order row: %s %s %v %d %v", source, tenantID, channel, total, ref)
		}
		var tickets, mails int
		_ = pool.QueryRow(b.ctx, `SELECT count(*) FROM tickets WHERE order_id = $1`, want.id).Scan(&tickets)
		_ = pool.QueryRow(b.ctx, `SELECT count(*) FROM outbox WHERE order_id = $1 AND kind = 'buyer_tickets'`, want.id).Scan(&mails)
		if tickets != want.n || mails != 1 {
			t.Fatalf("order %s: %d tickets, %d buyer e-mails", want.id, tickets, mails)
		}
	}
	// The worker dropped the record from the hash: a second charge's refund
	// notice still names the buyer, from Postgres.
	b.regs.Archive = orderdb.Store{Pool: pool}
	out, err := pay(b, reg.ID, "cs_9", 3000)
	if err != nil || out.RefundReason != "already_paid" || out.BuyerEmail != "ann@example.test" || out.BuyerName != "Ann" {
		t.Fatalf("another payment once the record is in Postgres: %+v %v", out, err)
	}
	// The Redis copy ages out: Postgres answers.
	okey, _ := b.sp.Order(reg.ID)
	if err := b.rc.Do(b.ctx, b.rc.B().Del().Key(okey).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	got, found, err := b.regs.Get(b.ctx, reg.ID)
	if err != nil || !found || got.Status != StatusConfirmed || got.PaymentStatus != PaymentPaid || got.Total != 3000 ||
		len(got.Tickets) != 2 || got.TenantID != tenant || got.BuyerEmail != "ann@example.test" || got.BuyerName != "Ann" {
		t.Fatalf("get from Postgres: %+v %v %v", got, found, err)
	}
	out, err = pay(b, reg.ID, "cs_1", 3000)
	if err != nil || !out.Duplicate || out.Status != StatusConfirmed {
		t.Fatalf("webhook again after the Redis copy went: %+v %v", out, err)
	}
	out, err = pay(b, reg.ID, "cs_2", 3000)
	if err != nil || out.RefundReason != "already_paid" || out.BuyerEmail != "ann@example.test" {
		t.Fatalf("another payment after the Redis copy went: %+v %v", out, err)
	}
}

func ptr[T any](v T) *T { return &v }

// A registration of a showing names its showing wherever it is read from:
// as it is made, in Redis with its record, in Redis after the sync worker
// dropped the record, and from Postgres once the Redis copy is gone. (The
// shop's success page dates the order by it.)
func TestARegistrationNamesItsShowingFromEverySource(t *testing.T) {
	b := setup(t)
	pool := pgtest.New(t)
	b.regs.Archive = orderdb.Store{Pool: pool}
	b.caps(t, evGA, "t:tk", "4", "ev", "4", "sh:sh_a", "2", "sh:sh_b", "2")
	req := gaReq(1, 1000, "ann@example.test")
	req.ShowingID, req.Quote.Claims["sh:sh_b"] = "sh_b", 1
	reg, err := b.regs.Register(b.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := b.regs.Register(b.ctx, gaReq(1, 1000, "bob@example.test"))
	if err != nil {
		t.Fatal(err)
	}
	if reg.ShowingID != "sh_b" || plain.ShowingID != "" {
		t.Fatalf("as made: showings %q and %q, want sh_b and none", reg.ShowingID, plain.ShowingID)
	}
	read := func(when string) {
		t.Helper()
		for id, want := range map[string]string{reg.ID: "sh_b", plain.ID: ""} {
			got, found, err := b.regs.Get(b.ctx, id)
			if err != nil || !found || got.ShowingID != want {
				t.Fatalf("%s: %s reads showing %q (found %v, %v), want %q", when, id, got.ShowingID, found, err, want)
			}
		}
	}
	read("awaiting payment")
	for _, id := range []string{reg.ID, plain.ID} {
		b.opened(t, id, "cs_"+id)
		if _, err := pay(b, id, "cs_"+id, 1000); err != nil {
			t.Fatal(err)
		}
	}
	read("paid")
	drainToPostgres(t, b, pool)
	okey, _ := b.sp.Order(reg.ID)
	if rec, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(okey).Field("rec").Build()).ToString(); rec != "" {
		t.Fatalf("the worker left the record in Redis: %s", rec)
	}
	read("synced, the record dropped from Redis")
	for _, id := range []string{reg.ID, plain.ID} {
		k, _ := b.sp.Order(id)
		if err := b.rc.Do(b.ctx, b.rc.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	read("from Postgres")
}

// drainToPostgres has a sync worker write every paid sale to pool.
func drainToPostgres(t *testing.T, b *bundle, pool *pgxpool.Pool) {
	t.Helper()
	w := &worker.Worker{Redis: b.rc, Space: b.sp, Pool: pool, Consumer: "test", Retention: time.Minute}
	if err := w.EnsureGroups(b.ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := w.DrainOnce(ctx); err != nil {
		t.Fatal(err)
	}
}
