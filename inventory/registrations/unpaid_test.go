package registrations

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/seats"
)

// hash reads a Redis hash whole (empty when the key is gone).
func (b *bundle) hash(t *testing.T, key string) map[string]string {
	t.Helper()
	m, err := b.rc.Do(b.ctx, b.rc.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// score is member's score in a zset, -1 when it has none.
func (b *bundle) score(t *testing.T, key, member string) int64 {
	t.Helper()
	f, err := b.rc.Do(b.ctx, b.rc.B().Zscore().Key(key).Member(member).Build()).AsFloat64()
	if rueidis.IsRedisNil(err) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return int64(f)
}

func (b *bundle) exists(t *testing.T, key string) bool {
	t.Helper()
	n, err := b.rc.Do(b.ctx, b.rc.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// window checks that a held registration's end is the same in its hash
// and in the expiry zset, and returns it (ms).
func (b *bundle) window(t *testing.T, id string) int64 {
	t.Helper()
	okey, _ := b.sp.Order(id)
	ev, _ := keys.OrderEvent(id)
	h := b.hash(t, okey)
	exp, _ := strconv.ParseInt(h["exp"], 10, 64)
	if z := b.score(t, b.sp.Expiry(keys.Partition(ev)), id); z != exp {
		t.Fatalf("%s: hash exp %d, expiry zset score %d: they must move together", id, exp, z)
	}
	return exp
}

// A registration holds for the register hold until a checkout session is
// opened for it, then until the checkout window counted from the
// registration; the hash's exp and the expiry zset's score move together,
// and Get's ExpiresAt shows the current end. One nobody opens a session
// for is given back once the register hold ends.
func TestRegisterHoldUntilASessionThenTheCheckoutWindow(t *testing.T) {
	b := setup(t)
	b.regs.HoldTTL, b.regs.CheckoutTTL = 300*time.Millisecond, time.Hour
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	start := time.Now()
	paying, err := b.regs.Register(b.ctx, gaReq(2, 1000, "pays@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	idle, err := b.regs.Register(b.ctx, gaReq(3, 1000, "idle@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	exp := b.window(t, paying.ID)
	if d := time.UnixMilli(exp).Sub(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("register hold ends %v after the registration, want the 300ms hold", d)
	}
	if !paying.ExpiresAt.Equal(time.UnixMilli(exp)) || paying.PayBy.Sub(paying.ExpiresAt) != time.Hour-300*time.Millisecond {
		t.Fatalf("register answered expiresAt %v payBy %v (hash exp %d)", paying.ExpiresAt, paying.PayBy, exp)
	}
	okey, _ := b.sp.Order(paying.ID)
	cexp, _ := strconv.ParseInt(b.hash(t, okey)["cexp"], 10, 64)
	if cexp != exp-300+time.Hour.Milliseconds() {
		t.Fatalf("cexp %d, want the registration's time + the checkout TTL (%d)", cexp, exp-300+time.Hour.Milliseconds())
	}

	if err := b.regs.AttachSession(b.ctx, paying.ID, "card", "cs_1"); err != nil {
		t.Fatal(err)
	}
	if got := b.window(t, paying.ID); got != cexp {
		t.Fatalf("after a session: window ends %d, want the checkout window %d", got, cexp)
	}
	reg, _, err := b.regs.Get(b.ctx, paying.ID)
	if err != nil || !reg.ExpiresAt.Equal(time.UnixMilli(cexp)) || !reg.PayBy.Equal(time.UnixMilli(cexp)) {
		t.Fatalf("Get after a session: expiresAt %v payBy %v %v", reg.ExpiresAt, reg.PayBy, err)
	}
	// a second session changes nothing more
	if err := b.regs.AttachSession(b.ctx, paying.ID, "wallet", "wp_2"); err != nil || b.window(t, paying.ID) != cexp {
		t.Fatalf("second session: %v", err)
	}

	// the idle one ends with its register hold; the paying one holds on
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := b.regs.Sweep(b.ctx, nil); err != nil {
			t.Fatal(err)
		}
		if b.sold(t, evGA)["ev"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a registration without a session was not given back after the register hold")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := b.sold(t, evGA); s["ev"] != 2 || s["t:tk"] != 2 {
		t.Fatalf("sold %v, want the paying registration's 2", s)
	}
	okeyIdle, _ := b.sp.Order(idle.ID)
	if st := b.hash(t, okeyIdle)["st"]; st != "expired" {
		t.Fatalf("the registration without a session: %q", st)
	}
	if got, _, _ := b.regs.Get(b.ctx, paying.ID); got.Status != StatusAwaitingPayment {
		t.Fatalf("the registration with a session: %s", got.Status)
	}
}

// The register hold is never longer than the checkout window.
func TestHoldTTLNeverOutlastsTheCheckoutTTL(t *testing.T) {
	s := &Service{CheckoutTTL: time.Minute, HoldTTL: time.Hour}
	if s.holdTTL() != time.Minute {
		t.Fatalf("hold TTL %v, want the checkout TTL", s.holdTTL())
	}
	if (&Service{}).holdTTL() != DefaultHoldTTL {
		t.Fatal("default hold TTL")
	}
}

// One unpaid registration per buyer and event: the spellings of one inbox
// are one buyer, and a new registration releases the older one (its
// checkout sessions closed first), whose inventory is back at once. The
// older one reads expired, reason "replaced".
func TestANewRegistrationReplacesTheBuyersUnpaidOne(t *testing.T) {
	b := setup(t)
	b.caps(t, evSeated, "ev", "20")
	x := &fakeExpirer{paid: map[string]bool{}}
	b.regs.Expirer = x
	tok := b.hold(t, "C-1", "C-2")
	old, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-1", "C-2"), HoldToken: tok,
		Buyer: Buyer{Email: "Ann.Lee+first@gmail.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.regs.AttachSession(b.ctx, old.ID, "card", "cs_old"); err != nil {
		t.Fatal(err)
	}
	tok2 := b.hold(t, "C-5")
	replacing, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-5"), HoldToken: tok2,
		Buyer: Buyer{Email: "annlee@googlemail.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(x.calls) != 1 || x.calls[0] != "card:cs_old" {
		t.Fatalf("the older registration's sessions closed: %v", x.calls)
	}
	got, _, _ := b.regs.Get(b.ctx, old.ID)
	if got.Status != StatusExpired || got.Reason != "replaced" {
		t.Fatalf("older registration: %s %q, want expired, replaced", got.Status, got.Reason)
	}
	if s := b.sold(t, evSeated); s["ev"] != 1 {
		t.Fatalf("sold %v, want the new registration's one seat", s)
	}
	for _, l := range []string{"C-1", "C-2"} {
		if v := b.seat(t, evSeated, l); v != "" {
			t.Fatalf("%s still held by %q", l, v)
		}
	}
	if u := b.hash(t, b.sp.Unpaid(evSeated)); len(u) != 1 || u[orders.BuyerKey("ann.lee@gmail.com")] != replacing.ID {
		t.Fatalf("unpaid hash %v, want the buyer's new registration only", u)
	}
	if z := b.score(t, b.sp.Expiry(keys.Partition(evSeated)), old.ID); z != -1 {
		t.Fatal("the released registration is still in the expiry zset")
	}

	// The new one paid: the buyer has none unpaid, and the hash is gone.
	b.opened(t, replacing.ID, "cs_new")
	if out, err := pay(b, replacing.ID, "cs_new", 1000); err != nil || out.Status != StatusConfirmed {
		t.Fatalf("pay: %+v %v", out, err)
	}
	if b.exists(t, b.sp.Unpaid(evSeated)) {
		t.Fatalf("unpaid hash left after the buyer paid: %v", b.hash(t, b.sp.Unpaid(evSeated)))
	}
}

// When the processor says the older registration's session was paid, the
// older one is kept (its webhook is on its way) and the new one refused
// with a code saying so; nothing of the new one is held.
func TestAPaidEarlierRegistrationIsKept(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	x := &fakeExpirer{paid: map[string]bool{"cs_paid": true}}
	b.regs.Expirer = x
	old, err := b.regs.Register(b.ctx, gaReq(2, 1000, "bo@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.regs.AttachSession(b.ctx, old.ID, "card", "cs_paid"); err != nil {
		t.Fatal(err)
	}
	_, err = b.regs.Register(b.ctx, gaReq(1, 1000, "BO+2@x.test"))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != "PREVIOUS_REGISTRATION_PAID" || ae.Status != 409 {
		t.Fatalf("new registration while the old one's session is paid: %v", err)
	}
	if got, _, _ := b.regs.Get(b.ctx, old.ID); got.Status != StatusAwaitingPayment {
		t.Fatalf("older registration: %s", got.Status)
	}
	if s := b.sold(t, evGA); s["ev"] != 2 {
		t.Fatalf("sold %v, want the older registration's 2 only", s)
	}
	if out, err := pay(b, old.ID, "cs_paid", 2000); err != nil || out.Status != StatusConfirmed {
		t.Fatalf("the paid session's webhook: %+v %v", out, err)
	}

	// A processor that cannot be asked: the older one is kept too, and the
	// caller is told to retry.
	x.err = errors.New("processor down")
	old2, err := b.regs.Register(b.ctx, gaReq(1, 1000, "bo@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.regs.AttachSession(b.ctx, old2.ID, "card", "cs_2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.regs.Register(b.ctx, gaReq(1, 1000, "bo@x.test")); codeOf(err) != "PAYMENT_PROCESSOR_ERROR" {
		t.Fatalf("processor down: %v", err)
	}
	if got, _, _ := b.regs.Get(b.ctx, old2.ID); got.Status != StatusAwaitingPayment {
		t.Fatalf("older registration with the processor down: %s", got.Status)
	}
}

// Registers of one buyer at once end with at most one registration
// awaiting payment holding inventory: each answers a registration, or
// that another is being made; the sold count is the one left's.
func TestRegistersOfOneBuyerAtOnceLeaveOneHeld(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	const n = 12
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg, err := b.regs.Register(b.ctx, gaReq(2, 1000, fmt.Sprintf("same+%d@x.test", i)))
			ids[i], errs[i] = reg.ID, err
		}()
	}
	wg.Wait()
	held := 0
	for i := range n {
		if errs[i] != nil {
			if codeOf(errs[i]) != "DUPLICATE_IN_PROGRESS" {
				t.Fatalf("register %d: %v", i, errs[i])
			}
			continue
		}
		if got, _, _ := b.regs.Get(b.ctx, ids[i]); got.Status == StatusAwaitingPayment {
			held++
		}
	}
	if held != 1 {
		t.Fatalf("%d registrations of one buyer await payment, want 1", held)
	}
	if s := b.sold(t, evGA); s["ev"] != 2 {
		t.Fatalf("sold %v, want one registration's 2", s)
	}
	if u := b.hash(t, b.sp.Unpaid(evGA)); len(u) != 1 {
		t.Fatalf("unpaid hash %v", u)
	}
}

// A client holds at most its limit of registrations awaiting payment and
// live hold tokens per event. A registration stops counting the moment it
// is paid, refunded, expired or replaced; a token counts while it lives
// (an extend moves its score with it). Once all have ended the counting
// keys are gone.
func TestClientLimitCountsUnpaidRegistrationsAndTokens(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	b.caps(t, evSeated, "ev", "100")
	client := holds.For(nil, "203.0.113.9", 3)
	other := holds.For(nil, "203.0.113.10", 3)
	reg := func(c holds.Client, email string) (Registration, error) {
		r := gaReq(1, 1000, email)
		r.Client = c
		return b.regs.Register(b.ctx, r)
	}
	r1, err := reg(client, "one@x.test")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := reg(client, "two@x.test")
	if err != nil {
		t.Fatal(err)
	}
	quick := &seats.Engine{Redis: b.rc, Space: b.sp, TTL: 400 * time.Millisecond}
	tok := seats.NewToken()
	if _, err := quick.CreateTokenFor(b.ctx, evGA, tok, client); err != nil {
		t.Fatal(err)
	}
	var ae *apierr.Error
	if _, err := reg(client, "three@x.test"); !errors.As(err, &ae) || ae.Code != "HOLD_LIMIT_REACHED" || ae.Status != 409 {
		t.Fatalf("a fourth hold: %v", err)
	}
	if _, err := quick.CreateTokenFor(b.ctx, evGA, seats.NewToken(), client); codeOf(err) != "HOLD_LIMIT_REACHED" {
		t.Fatalf("a fourth hold (a token): %v", err)
	}
	if _, err := reg(other, "elsewhere@x.test"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	if c := b.hash(t, b.sp.IPRegistrations(evGA)); c[client.Key] != "2" || c[other.Key] != "1" {
		t.Fatalf("IP registrations %v", c)
	}
	// the token counts as long as it lives, its score moved by an extend
	exp, err := quick.ExtendFor(b.ctx, evGA, tok, client)
	if err != nil {
		t.Fatal(err)
	}
	if z := b.score(t, b.sp.IPTokens(evGA, client.Key), tok); z != exp.UnixMilli() {
		t.Fatalf("token score %d after extend, want its expiry %d", z, exp.UnixMilli())
	}

	// paid: counts no more at once
	b.opened(t, r1.ID, "cs_1")
	if _, err := pay(b, r1.ID, "cs_1", 1000); err != nil {
		t.Fatal(err)
	}
	r3, err := reg(client, "three@x.test")
	if err != nil {
		t.Fatalf("after a payment: %v", err)
	}
	// refunded (paid while its event was cancelled): counts no more
	b.opened(t, r2.ID, "cs_2")
	events := b.regs.Event
	b.regs.Event = func(ev string) (string, bool, bool) { return tenant, true, ev == evGA }
	if out, err := pay(b, r2.ID, "cs_2", 1000); err != nil || out.Status != StatusRefundRequired {
		t.Fatalf("payment for a cancelled event: %+v %v", out, err)
	}
	b.regs.Event = events
	r4, err := reg(client, "four@x.test")
	if err != nil {
		t.Fatalf("after a refund: %v", err)
	}
	// replaced by the same buyer: one out, one in
	r5, err := reg(client, "four+again@x.test")
	if err != nil {
		t.Fatalf("the same buyer again: %v", err)
	}
	if got, _, _ := b.regs.Get(b.ctx, r4.ID); got.Reason != "replaced" {
		t.Fatalf("replaced registration: %+v", got)
	}
	// the token timed out: counts no more, without any call
	deadline := time.Now().Add(10 * time.Second)
	var r6 Registration
	for {
		if r6, err = reg(client, "six@x.test"); err == nil {
			break
		}
		if codeOf(err) != "HOLD_LIMIT_REACHED" || time.Now().After(deadline) {
			t.Fatalf("after the token's expiry: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// expired: counts no more
	for _, id := range []string{r3.ID, r5.ID, r6.ID} {
		b.expireNow(t, id)
	}
	// the other client's buyer registers again (replacing) and pays
	again, err := reg(other, "elsewhere@x.test")
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, again.ID, "cs_o")
	if _, err := pay(b, again.ID, "cs_o", 1000); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{b.sp.IPRegistrations(evGA), b.sp.Unpaid(evGA)} {
		if b.exists(t, k) {
			t.Fatalf("%s left with nothing held: %v", k, b.hash(t, k))
		}
	}
	if b.exists(t, b.sp.IPTokens(evGA, client.Key)) {
		t.Fatal("the client's tokens zset outlived its last token")
	}
}

// The registration that takes a token's seats does not count that token
// against its own limit check: a token that was the client's last hold can
// still be bought, where it used to be a dead end (seats held, never
// sold). The token still counts for the client while it lives.
func TestATokenThatWasTheClientsLastHoldCanBeBought(t *testing.T) {
	b := setup(t)
	b.caps(t, evSeated, "ev", "100")
	client := holds.For(nil, "203.0.113.11", 1)
	tok := seats.NewToken()
	if _, err := b.seats.CreateTokenFor(b.ctx, evSeated, tok, client); err != nil {
		t.Fatal(err)
	}
	if _, err := b.seats.Hold(b.ctx, b.seated, tok, []string{"C-1", "C-2"}); err != nil {
		t.Fatal(err)
	}
	// The client's limit is reached with the token ...
	if _, err := b.seats.CreateTokenFor(b.ctx, evSeated, seats.NewToken(), client); codeOf(err) != "HOLD_LIMIT_REACHED" {
		t.Fatalf("a second hold: %v", err)
	}
	// ... and the token's own registration goes through,
	r := Request{EventID: evSeated, TenantID: tenant, Buyer: Buyer{Name: "Ann", Email: "ann@x.test"},
		Quote: seatQuote("C-1", "C-2"), HoldToken: tok, Client: client}
	reg, err := b.regs.Register(b.ctx, r)
	if err != nil || reg.Status != StatusAwaitingPayment {
		t.Fatalf("registering the seats of the client's last hold: %+v %v", reg, err)
	}
	// counted with the token while it lives: nothing more is held.
	if _, err := b.seats.CreateTokenFor(b.ctx, evSeated, seats.NewToken(), client); codeOf(err) != "HOLD_LIMIT_REACHED" {
		t.Fatalf("a hold after the registration: %v", err)
	}
}
