package rebuild_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/registrations"
)

func gaQuote(ticket string, n int64, unit money.Cents) pricing.Quote {
	q := pricing.Quote{Total: money.Cents(n) * unit, Subtotal: money.Cents(n) * unit,
		Lines:  []orders.Line{{Kind: orders.LineTicket, RefID: ticket, Quantity: n, UnitPrice: unit, Amount: money.Cents(n) * unit}},
		Claims: map[string]int64{"t:" + ticket: n, "ev": n, capacity.Storefront: n}} // as pricing claims a storefront sale
	for range n {
		q.Admissions = append(q.Admissions, pricing.Admission{Kind: orders.LineTicket, RefID: ticket, Label: ticket})
	}
	return q
}

// A rebuild restores what storefront sales sold: paid registrations count
// like partner orders, the per-buyer counts come back from Postgres (both
// surfaces, by normalised e-mail: ann@ and ANN+partner@ are one buyer),
// the restored copy of a paid registration answers its webhook again as a
// duplicate, and a
// registration held across the rebuild (its claim not in Postgres, so not
// counted) gives nothing back when it expires.
func TestRebuildRestoresStorefrontSales(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	s.Apply(t, []byte(strings.Replace(servertest.Catalog, `"capacity": 10,`, `"capacity": 10, "maxTicketsPerBuyer": 4,`, 1)))
	ctx := context.Background()
	regs := &registrations.Service{Redis: s.Redis, Space: s.Space, Orders: &orders.Service{Redis: s.Redis, Space: s.Space}}
	register := func(ticket string, n int64, unit money.Cents, email string) (registrations.Registration, error) {
		return regs.Register(ctx, registrations.Request{EventID: "ev_ga", TenantID: "t1", Buyer: registrations.Buyer{Name: "Ann", Email: email},
			Quote: gaQuote(ticket, n, unit), MaxPerBuyer: 4})
	}
	paid, err := register("tk_a", 2, 2500, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := regs.AttachSession(ctx, paid.ID, "card", "cs_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := regs.Pay(ctx, registrations.Payment{RegistrationID: paid.ID, Processor: "card", PaymentID: "cs_1", Amount: 5000, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	free, err := register("tk_b", 1, 0, "fred@example.com")
	if err != nil || free.Status != registrations.StatusConfirmed {
		t.Fatalf("free registration: %+v %v", free, err)
	}
	o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1, "buyerEmail": "ANN+partner@Example.com"})
	if c := s.Confirm(t, "a", o.OrderID, o.Amount, "psp-1"); c.Status != 200 {
		t.Fatalf("confirm: %s", c)
	}
	s.Drain(t)
	before := counters(t, s, "ev_ga")
	held, err := register("tk_b", 1, 1000, "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	// Redis loses the paid registration's copy: the rebuild brings it back.
	okey, _ := s.Space.Order(paid.ID)
	if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(okey).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuilder.Run(ctx); err != nil {
		t.Fatal(err)
	}
	after := counters(t, s, "ev_ga")
	equalCounters(t, after, before)
	if after["ev_ga sold"]["ev"] != "4" {
		t.Fatalf("sold after the rebuild %v, want 4 (2 + 1 storefront, 1 partner)", after["ev_ga sold"])
	}
	buyers, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Buyers("ev_ga")).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if buyers[orders.BuyerKey("ann@example.com")] != "3" || buyers[orders.BuyerKey("fred@example.com")] != "1" || len(buyers) != 2 {
		t.Fatalf("buyer counts after the rebuild: %v", buyers)
	}
	out, err := regs.Pay(ctx, registrations.Payment{RegistrationID: paid.ID, Processor: "card", PaymentID: "cs_1", Amount: 5000, Currency: "USD"})
	if err != nil || !out.Duplicate || out.Status != registrations.StatusConfirmed || len(out.Tickets) != 2 {
		t.Fatalf("webhook again after the rebuild: %+v %v", out, err)
	}
	if _, err := s.Redis.Do(ctx, s.Redis.B().Hset().Key(func() string { k, _ := s.Space.Order(held.ID); return k }()).
		FieldValue().FieldValue("exp", "1").Build()).AsInt64(); err != nil {
		t.Fatal(err)
	}
	if ok, err := regs.Expire(ctx, held.ID); err != nil || !ok {
		t.Fatalf("expire of the registration held across the rebuild: %v %v", ok, err)
	}
	equalCounters(t, counters(t, s, "ev_ga"), before)
	// The restored counts limit the buyer: 3 of 4 taken.
	_, err = register("tk_b", 2, 1000, " Ann@example.com")
	if ae, ok := err.(*apierr.Error); !ok || ae.Code != "BUYER_LIMIT_REACHED" {
		t.Fatalf("register beyond the limit after the rebuild: %v", err)
	}
	if _, err := register("tk_b", 1, 1000, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, redisstate.Current)
	if r := s.Reserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1, "buyerEmail": "ann@example.com"}); r.Code != "BUYER_LIMIT_REACHED" {
		t.Fatalf("partner reserve beyond the limit: %s", r)
	}
}

// Redis back from a snapshot taken while a registration was held, and
// paid after it: the rebuild writes the registration back as paid, and
// what the held copy claimed (its seats, its client's count, its buyer's
// unpaid slot) is released first, so nothing of it is left outside the
// counts: the address is not held back, the buyer registers again, the
// seats are the paid registration's only.
func TestRebuildReleasesARegistrationAnOlderSnapshotStillHolds(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	regs := &registrations.Service{Redis: s.Redis, Space: s.Space, Orders: &orders.Service{Redis: s.Redis, Space: s.Space}}
	client := holds.For(nil, "203.0.113.9", 8)
	register := func(email string) (registrations.Registration, error) {
		return regs.Register(ctx, registrations.Request{EventID: "ev_ga", TenantID: "t1",
			Buyer: registrations.Buyer{Name: "Ann", Email: email}, Quote: gaQuote("tk_a", 2, 2500), Client: client})
	}
	reg, err := register("ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := regs.AttachSession(ctx, reg.ID, "card", "cs_1"); err != nil {
		t.Fatal(err)
	}
	// The snapshot: the held registration and what counts it.
	okey, _ := s.Space.Order(reg.ID)
	snapshot := []string{okey, s.Space.IPRegistrations("ev_ga"), s.Space.Unpaid("ev_ga")}
	dumps := make([]string, len(snapshot))
	for i, k := range snapshot {
		if dumps[i], err = s.Redis.Do(ctx, s.Redis.B().Dump().Key(k).Build()).ToString(); err != nil {
			t.Fatalf("dump %s: %v", k, err)
		}
	}
	if _, err := regs.Pay(ctx, registrations.Payment{RegistrationID: reg.ID, Processor: "card", PaymentID: "cs_1", Amount: 5000, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	s.Drain(t)
	// Redis comes back with the older copies (the payment lost), and is rebuilt.
	for i, k := range snapshot {
		if err := s.Redis.Do(ctx, s.Redis.B().Restore().Key(k).Ttl(0).SerializedValue(dumps[i]).Replace().Build()).Error(); err != nil {
			t.Fatalf("restore %s: %v", k, err)
		}
	}
	if _, err := s.Rebuilder.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got, found, err := regs.Get(ctx, reg.ID)
	if err != nil || !found || got.Status != registrations.StatusConfirmed || got.Reason != "" {
		t.Fatalf("after the rebuild: %+v %v %v, want confirmed", got, found, err)
	}
	for _, k := range snapshot[1:] {
		if n, err := s.Redis.Do(ctx, s.Redis.B().Exists().Key(k).Build()).AsInt64(); err != nil || n != 0 {
			t.Errorf("%s is left after the rebuild (%d, %v): the held copy still counts", k, n, err)
		}
	}
	// The buyer registers again, from the same address, at once.
	if again, err := register("ann@example.com"); err != nil || again.Status != registrations.StatusAwaitingPayment {
		t.Fatalf("the buyer's next registration: %+v %v", again, err)
	}
}
