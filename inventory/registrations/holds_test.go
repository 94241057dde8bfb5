package registrations

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/seats"
)

// pastWindow waits until a registration made now with the bundle's
// checkout TTL is past its window by Redis' clock, and a key given that
// TTL as PX would have lapsed.
func (b *bundle) pastWindow() { time.Sleep(b.regs.CheckoutTTL + 50*time.Millisecond) }

// shortWindow is the checkout window of the tests that wait it out: long
// enough that registering and opening a session fit in it on a loaded
// machine or a Redis Cluster (50 ms did not, once), short enough to wait.
const shortWindow = 400 * time.Millisecond

// A seat paid after its checkout window but before the sweep is booked for
// the buyer who paid: nobody could take it in between.
func TestSeatPaidAfterTheWindowBeforeTheSweep(t *testing.T) {
	b := setup(t)
	b.regs.CheckoutTTL = shortWindow
	b.caps(t, evSeated, "ev", "20")
	tok := b.hold(t, "C-1")
	reg, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-1"), HoldToken: tok,
		Buyer: Buyer{Email: "a@x.test"}})
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, reg.ID, "cs_1")
	b.pastWindow()
	other := seats.NewToken()
	if _, err := b.seats.CreateToken(b.ctx, evSeated, other); err != nil {
		t.Fatal(err)
	}
	if _, err := b.seats.Hold(b.ctx, b.seated, other, []string{"C-1"}); codeOf(err) != "SEAT_CONFLICT" {
		t.Fatalf("another buyer held the seat of a registration not yet swept: %v", err)
	}
	out, err := pay(b, reg.ID, "cs_1", 1000)
	if err != nil || out.Status != StatusConfirmed || out.Reclaimed {
		t.Fatalf("payment after the window, before the sweep: %+v %v", out, err)
	}
	booked, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.Booked(evSeated)).Field("C-1").Build()).ToString()
	if booked != reg.ID {
		t.Fatalf("C-1 booked by %q", booked)
	}
}

// A registration's discount use is held until it is expired or paid, even
// past its window, and a payment of one whose use was given back must find
// a use left: maxUses is never exceeded.
func TestDiscountUseIsNeverExceeded(t *testing.T) {
	b := setup(t)
	b.regs.CheckoutTTL = shortWindow
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	withCode := func(code, email string) Request {
		r := gaReq(1, 1000, email)
		r.Quote.DiscountCode, r.Quote.DiscountMaxUses = code, 1
		return r
	}
	partner := func(code string) orders.ReserveRequest {
		r := partnerReq(1, "p@x.test", 0)
		r.DiscountCode, r.DiscountMaxUses = code, 1
		return r
	}
	used := func(code string) int64 {
		n, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.DiscountUsed(evGA)).Field(code).Build()).AsInt64()
		return n
	}

	// Past its window, not swept: the use is still the registration's.
	held, err := b.regs.Register(b.ctx, withCode("ONE", "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, held.ID, "cs_1")
	b.pastWindow()
	if _, err := b.orders.Reserve(b.ctx, partner("ONE")); !errors.Is(err, orders.ErrDiscountUsedUp) {
		t.Fatalf("partner reserve of a code a registration holds: %v", err)
	}
	if left, err := b.orders.DiscountLeft(b.ctx, evGA, "ONE", 1); err != nil || left != 0 {
		t.Fatalf("discount left: %d %v", left, err)
	}
	if out, err := pay(b, held.ID, "cs_1", 1000); err != nil || out.Status != StatusConfirmed {
		t.Fatalf("pay: %+v %v", out, err)
	}
	if n := used("ONE"); n != 1 {
		t.Fatalf("ONE used %d times", n)
	}

	// Expired, the code used up by a partner meanwhile: the late payment
	// is refunded and the code stays at its maximum.
	late, err := b.regs.Register(b.ctx, withCode("TWO", "b@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, late.ID, "cs_2")
	b.expireNow(t, late.ID)
	r, err := b.orders.Reserve(b.ctx, partner("TWO"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: 1000, Reference: "p1"}); err != nil {
		t.Fatal(err)
	}
	out, err := pay(b, late.ID, "cs_2", 1000)
	if err != nil || out.Status != StatusRefundRequired || out.RefundReason != "discount_used_up" || out.Paid != 1000 {
		t.Fatalf("late payment of a used-up code: %+v %v", out, err)
	}
	if n := used("TWO"); n != 1 {
		t.Fatalf("TWO used %d times", n)
	}

	// Expired, the code still free: the late payment takes the use.
	free, err := b.regs.Register(b.ctx, withCode("THREE", "c@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, free.ID, "cs_3")
	b.expireNow(t, free.ID)
	if out, err := pay(b, free.ID, "cs_3", 1000); err != nil || out.Status != StatusConfirmed || !out.Reclaimed {
		t.Fatalf("late payment of a free code: %+v %v", out, err)
	}
	if _, err := b.orders.Reserve(b.ctx, partner("THREE")); !errors.Is(err, orders.ErrDiscountUsedUp) {
		t.Fatalf("partner reserve after the late payment took the last use: %v", err)
	}
	if n := used("THREE"); n != 1 {
		t.Fatalf("THREE used %d times", n)
	}
	// The event's holds keys are left with an expiry, or gone.
	for _, k := range []string{b.sp.DiscountHolds(evGA), b.sp.DiscountHeld(evGA)} {
		if ttl, _ := b.rc.Do(b.ctx, b.rc.B().Pttl().Key(k).Build()).AsInt64(); ttl == -1 {
			t.Fatalf("the discount holds %s never expire", k)
		}
	}
}

// The event's discount holds keys have no expiry while a registration
// holds a use (it never lapses by itself), and take the latest partner
// hold's once none does.
func TestDiscountHoldsExpireOnceNoRegistrationHoldsOne(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	pttl := func() []int64 {
		var out []int64
		for _, k := range []string{b.sp.DiscountHolds(evGA), b.sp.DiscountHeld(evGA)} {
			ttl, err := b.rc.Do(b.ctx, b.rc.B().Pttl().Key(k).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ttl)
		}
		return out
	}
	r := gaReq(1, 1000, "a@x.test")
	r.Quote.DiscountCode, r.Quote.DiscountMaxUses = "SAVE", 5
	reg, err := b.regs.Register(b.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	p := partnerReq(1, "p@x.test", 0)
	p.DiscountCode, p.DiscountMaxUses = "OTHER", 5
	if _, err := b.orders.Reserve(b.ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := pttl(); got[0] != -1 || got[1] != -1 {
		t.Fatalf("PTTL with a registration's hold: %v, want no expiry", got)
	}
	b.expireNow(t, reg.ID)
	if got := pttl(); got[0] <= 0 || got[1] <= 0 || got[0]-got[1] > 50 || got[1]-got[0] > 50 {
		t.Fatalf("PTTL with a partner's hold left: %v, want the same expiry on both", got)
	}
}

// A late payment claims anew only within the buyer's limit.
func TestLatePaymentChecksTheBuyerLimit(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	req := func() Request {
		r := gaReq(2, 1000, "buyer@x.test")
		r.MaxPerBuyer = 3
		return r
	}
	first, err := b.regs.Register(b.ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, first.ID, "cs_1")
	b.expireNow(t, first.ID)
	second, err := b.regs.Register(b.ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, second.ID, "cs_2")
	if out, err := pay(b, second.ID, "cs_2", 2000); err != nil || out.Status != StatusConfirmed {
		t.Fatalf("pay: %+v %v", out, err)
	}
	out, err := pay(b, first.ID, "cs_1", 2000)
	if err != nil || out.Status != StatusRefundRequired || out.RefundReason != "buyer_limit" {
		t.Fatalf("late payment beyond the buyer's limit: %+v %v", out, err)
	}
	if s := b.sold(t, evGA); s["ev"] != 2 {
		t.Fatalf("sold %v", s)
	}
}

// A payment of a registration ticketd knows nowhere finds its tenant in
// the catalog when the processor did not say: only ids minted for that
// tenant are taken for lost, and the tombstone names it.
func TestLostPaymentTakesTheTenantFromTheCatalog(t *testing.T) {
	b := setup(t)
	snap := &catalog.Snapshot{Events: map[string]*catalog.CompiledEvent{
		evGA: {Event: &catalog.Event{ID: evGA, TenantID: tenant, Status: catalog.StatusOnSale}}}}
	b.regs.Event = CatalogEvents(func() *catalog.Snapshot { return snap })
	id := b.orders.NewID(evGA, Owner(tenant))
	out, err := b.regs.Pay(b.ctx, Payment{RegistrationID: id, Processor: "card", PaymentID: "cs_1", Amount: 500, Currency: "USD"})
	if err != nil || out.RefundReason != "lost" || out.TenantID != tenant || out.Paid != 500 {
		t.Fatalf("pay: %+v %v", out, err)
	}
	got, found, err := b.regs.Get(b.ctx, id)
	if err != nil || !found || got.TenantID != tenant || got.Reason != "lost" || got.Paid != 500 {
		t.Fatalf("get after: %+v %v %v", got, found, err)
	}
	other := b.orders.NewID(evGA, "c") // a partner order's id
	if _, err := b.regs.Pay(b.ctx, Payment{RegistrationID: other, Processor: "card", PaymentID: "cs_2", Amount: 500, Currency: "USD"}); codeOf(err) != "NOT_FOUND" {
		t.Fatalf("pay of an id not minted for the event's tenant: %v", err)
	}
	if _, found, _ := b.regs.Get(b.ctx, other); found {
		t.Fatal("a tombstone was left for an id ticketd did not make for the tenant")
	}
}

// While Redis is not current the sweeper gives nothing back.
func TestSweeperWaitsWhileRedisIsNotCurrent(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.backdate(t, reg.ID)
	var gate *apierr.Error = apierr.Unavailable("stale")
	b.regs.Gate = func() *apierr.Error { return gate }
	if n, err := b.regs.Sweep(b.ctx, nil); n != 0 || err == nil {
		t.Fatalf("sweep while stale: %d %v", n, err)
	}
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.regs.Run(ctx, time.Millisecond) }()
	time.Sleep(20 * time.Millisecond)
	stop()
	<-done
	if s := b.sold(t, evGA); s["ev"] != 1 {
		t.Fatalf("sold while stale %v", s)
	}
	if got, _, _ := b.regs.Get(b.ctx, reg.ID); got.Status != StatusExpired || got.PaymentStatus != PaymentUnpaid {
		t.Fatalf("registration while stale: %+v", got)
	}
	okey, _ := b.sp.Order(reg.ID)
	if st, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(okey).Field("st").Build()).ToString(); st != "held" {
		t.Fatalf("st %q while stale", st)
	}
	gate = nil
	if n, err := b.regs.Sweep(b.ctx, nil); n != 1 || err != nil {
		t.Fatalf("sweep once current: %d %v", n, err)
	}
	if s := b.sold(t, evGA); s["ev"] != 0 {
		t.Fatalf("sold after the sweep %v", s)
	}
}

// A payment for a cancelled event is refunded ("cancelled"), and a held
// registration gives its hold back.
func TestPaymentOfACancelledEventIsRefunded(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	cancelled := false
	b.regs.Event = func(ev string) (string, bool, bool) { return tenant, cancelled, ev == evGA }
	held, err := b.regs.Register(b.ctx, gaReq(2, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	expired, err := b.regs.Register(b.ctx, gaReq(1, 1000, "b@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, held.ID, "cs_"+held.ID[:6])
	b.opened(t, expired.ID, "cs_"+expired.ID[:6])
	b.expireNow(t, expired.ID)
	cancelled = true
	for _, c := range []struct {
		id     string
		amount int64
	}{{held.ID, 2000}, {expired.ID, 1000}} {
		out, err := pay(b, c.id, "cs_"+c.id[:6], money.Cents(c.amount))
		if err != nil || out.Status != StatusRefundRequired || out.RefundReason != "cancelled" || out.Reason != "cancelled" {
			t.Fatalf("payment for a cancelled event: %+v %v", out, err)
		}
	}
	if s := b.sold(t, evGA); s["t:tk"] != 0 {
		t.Fatalf("sold %v", s)
	}
	b.nothingKept(t, evGA)
}

// Sessions opened during the grace period are closed by the sweep that
// ends it.
func TestSweeperClosesSessionsOpenedDuringTheGrace(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	reg := b.dueWithSession(t, "cs_paid")
	x := &fakeExpirer{paid: map[string]bool{"cs_paid": true}}
	if n, err := b.regs.Sweep(b.ctx, x); n != 0 || err != nil {
		t.Fatalf("first sweep: %d %v", n, err)
	}
	if err := b.regs.AttachSession(b.ctx, reg.ID, "wallet", "w_new"); err != nil {
		t.Fatalf("attach during the grace: %v", err)
	}
	b.backdate(t, reg.ID)
	x.calls = nil
	if n, err := b.regs.Sweep(b.ctx, x); n != 1 || err != nil {
		t.Fatalf("sweep after the grace: %d %v", n, err)
	}
	closed := map[string]bool{}
	for _, c := range x.calls {
		closed[c] = true
	}
	if !closed["wallet:w_new"] {
		t.Fatalf("the session opened during the grace was not closed: %v", x.calls)
	}
}

// hangingExpirer answers only when its context ends.
type hangingExpirer struct{ deadline chan time.Duration }

func (h hangingExpirer) Expire(ctx context.Context, _, _ string) (bool, error) {
	dl, ok := ctx.Deadline()
	left := time.Duration(-1)
	if ok {
		left = time.Until(dl)
	}
	h.deadline <- left
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(30 * time.Second):
		return false, errors.New("never cut")
	}
}

// A processor that does not answer is cut at ExpireTimeout; its
// registration is tried again at a later sweep.
func TestSweeperCutsAProcessorThatHangs(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	b.regs.ExpireTimeout = 100 * time.Millisecond
	b.dueWithSession(t, "cs_1")
	h := hangingExpirer{deadline: make(chan time.Duration, 1)}
	if n, err := b.regs.Sweep(b.ctx, h); n != 0 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if left := <-h.deadline; left < 0 || left > b.regs.ExpireTimeout {
		t.Fatalf("the processor's call had %v left", left)
	}
	if s := b.sold(t, evGA); s["ev"] != 1 {
		t.Fatalf("sold %v", s)
	}
}
