package registrations

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/seats"
)

const (
	evGA     = "ev_ga"
	evSeated = "ev_seated"
	tenant   = "t1"
)

type bundle struct {
	rc     rueidis.Client
	sp     keys.Space
	ctx    context.Context
	regs   *Service
	orders *orders.Service
	seats  *seats.Engine
	seated *catalog.CompiledEvent
}

func setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	rc, sp := redistest.New(t)
	return bundleOn(t, rc, sp)
}

// bundleOn is setup's bundle on rc and sp.
func bundleOn(t *testing.T, rc rueidis.Client, sp keys.Space) *bundle {
	t.Helper()
	o := &orders.Service{Redis: rc, Space: sp, OrderTTL: time.Minute, IDKey: []byte("test-id-key")}
	b := &bundle{rc: rc, sp: sp, ctx: context.Background(), orders: o,
		regs:  &Service{Redis: rc, Space: sp, Orders: o, CheckoutTTL: time.Minute},
		seats: &seats.Engine{Redis: rc, Space: sp, TTL: time.Minute, MaxTTL: 5 * time.Minute}}
	price := money.Cents(1000)
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: tenant, Events: []catalog.Event{{ID: evSeated, Status: catalog.StatusOnSale,
		SeatMap: &catalog.SeatMap{Categories: []catalog.Category{{ID: "std", Name: "Std", Price: &price}},
			Rows: []catalog.Row{{Label: "C", Seats: 20, Category: "std"}}}}}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.seated = snap.Events[evSeated]
	return b
}

func (b *bundle) caps(t *testing.T, ev string, kv ...string) {
	t.Helper()
	cmd := b.rc.B().Hset().Key(b.sp.Caps(ev)).FieldValue()
	for i := 0; i < len(kv); i += 2 {
		cmd = cmd.FieldValue(kv[i], kv[i+1])
	}
	if err := b.rc.Do(b.ctx, cmd.Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) sold(t *testing.T, ev string) map[string]int64 {
	t.Helper()
	m, err := b.rc.Do(b.ctx, b.rc.B().Hgetall().Key(b.sp.Sold(ev)).Build()).AsIntMap()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (b *bundle) zcard(t *testing.T, key string) int64 {
	t.Helper()
	n, err := b.rc.Do(b.ctx, b.rc.B().Zcard().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// noneHeld fails unless the event's partition has no registration awaiting
// payment left in its expiry zset.
func (b *bundle) noneHeld(t *testing.T, ev string) {
	t.Helper()
	if n := b.zcard(t, b.sp.Expiry(keys.Partition(ev))); n != 0 {
		t.Fatalf("%d registrations left in the expiry zset", n)
	}
}

func (b *bundle) streamLen(t *testing.T, ev string) int64 {
	t.Helper()
	n, err := b.rc.Do(b.ctx, b.rc.B().Xlen().Key(b.sp.Paid(keys.Partition(ev))).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// backdate puts a held registration's window in the past, as if its
// checkout TTL had passed (its seat keys expire by themselves later).
func (b *bundle) backdate(t *testing.T, id string) {
	t.Helper()
	okey, _ := b.sp.Order(id)
	ev, _ := keys.OrderEvent(id)
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	res := b.rc.DoMulti(b.ctx,
		b.rc.B().Hset().Key(okey).FieldValue().FieldValue("exp", past).Build(),
		b.rc.B().Zadd().Key(b.sp.Expiry(keys.Partition(ev))).Xx().ScoreMember().ScoreMember(float64(time.Now().Add(-time.Second).UnixMilli()), id).Build())
	for _, r := range res {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// expireNow puts a held registration's window in the past and expires it.
func (b *bundle) expireNow(t *testing.T, id string) {
	t.Helper()
	b.backdate(t, id)
	if ok, err := b.regs.Expire(b.ctx, id); err != nil || !ok {
		t.Fatalf("expire %s: %v %v", id, ok, err)
	}
}

// dueWithSession registers one GA ticket at 10.00 with a card session
// attached, its window passed.
func (b *bundle) dueWithSession(t *testing.T, session string) Registration {
	t.Helper()
	reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.regs.AttachSession(b.ctx, reg.ID, "card", session); err != nil {
		t.Fatal(err)
	}
	b.backdate(t, reg.ID)
	return reg
}

// nothingKept fails unless the event has nothing sold, nothing on its paid
// stream and no registration awaiting payment.
func (b *bundle) nothingKept(t *testing.T, ev string) {
	t.Helper()
	if s := b.sold(t, ev); s["ev"] != 0 {
		t.Fatalf("sold %v", s)
	}
	if n := b.streamLen(t, ev); n != 0 {
		t.Fatalf("paid stream holds %d", n)
	}
	b.noneHeld(t, ev)
}

// gaQuote is n GA tickets of type tk at unit cents each.
func gaQuote(n int64, unit money.Cents) pricing.Quote {
	q := pricing.Quote{Total: money.Cents(n) * unit, Subtotal: money.Cents(n) * unit,
		Lines:  []orders.Line{{Kind: orders.LineTicket, RefID: "tk", Quantity: n, UnitPrice: unit, Amount: money.Cents(n) * unit}},
		Claims: map[string]int64{"t:tk": n, "ev": n, capacity.Storefront: n}} // as pricing claims a storefront sale
	for range n {
		q.Admissions = append(q.Admissions, pricing.Admission{Kind: orders.LineTicket, RefID: "tk", Label: "GA"})
	}
	return q
}

// seatQuote is the seats at 10.00 each.
func seatQuote(labels ...string) pricing.Quote {
	q := pricing.Quote{Claims: map[string]int64{"ev": int64(len(labels)), capacity.Storefront: int64(len(labels))}, SeatLabels: labels}
	for _, l := range labels {
		q.Lines = append(q.Lines, orders.Line{Kind: orders.LineSeat, RefID: l, Quantity: 1, UnitPrice: 1000, Amount: 1000})
		q.Admissions = append(q.Admissions, pricing.Admission{Kind: orders.LineSeat, RefID: l, Label: l})
		q.Total += 1000
	}
	q.Subtotal = q.Total
	return q
}

var partnerSeq atomic.Int64

// partnerReq is a partner reserve of n GA tickets of type tk at 10.00 by
// channel c for the buyer, under a buyer limit (0: none).
func partnerReq(n int64, email string, limit int64) orders.ReserveRequest {
	return orders.ReserveRequest{EventID: evGA, Caller: "ch:c", ChannelID: "c", IdempotencyKey: fmt.Sprint("k", partnerSeq.Add(1)),
		Fingerprint: "fp", Total: 1000 * money.Cents(n), Claims: map[string]int64{"t:tk": n, "ev": n, capacity.ChannelField("c"): n}, MaxPerBuyer: limit,
		Record: orders.Record{TenantID: tenant, Source: "channel", ChannelID: "c", BuyerEmail: email, Tickets: []orders.Ticket{{Label: "GA"}}}}
}

func gaReq(n int64, unit money.Cents, email string) Request {
	return Request{EventID: evGA, TenantID: tenant, Buyer: Buyer{Name: "Ann", Email: email}, Quote: gaQuote(n, unit)}
}

// hold holds labels under a fresh token of the seated event.
func (b *bundle) hold(t *testing.T, labels ...string) string {
	t.Helper()
	tok := seats.NewToken()
	if _, err := b.seats.CreateToken(b.ctx, evSeated, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := b.seats.Hold(b.ctx, b.seated, tok, labels); err != nil {
		t.Fatal(err)
	}
	return tok
}

func codeOf(err error) string {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return fmt.Sprint(err)
}

// opened attaches card checkout sessions to a registration awaiting
// payment, as the storefront does before a buyer can pay one: Pay takes
// no other.
func (b *bundle) opened(t *testing.T, id string, sessions ...string) {
	t.Helper()
	for _, sess := range sessions {
		if err := b.regs.AttachSession(b.ctx, id, "card", sess); err != nil {
			t.Fatalf("attach %s to %s: %v", sess, id, err)
		}
	}
}

func pay(b *bundle, id, pid string, amount money.Cents) (Outcome, error) {
	return b.regs.Pay(b.ctx, Payment{RegistrationID: id, Processor: "card", PaymentID: pid, Amount: amount, Currency: "usd"})
}

// A free registration is confirmed at once: claimed, booked, on the paid
// stream with its record and tickets in its hash, never in the expiry zset.
func TestFreeRegistrationIsPaidAtOnce(t *testing.T) {
	b := setup(t)
	var told []int // the partitions the node's sync worker is told to read (orders.Service.Paid)
	b.orders.Paid = func(p int) { told = append(told, p) }
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	reg, err := b.regs.Register(b.ctx, gaReq(2, 0, "ann@example.test"))
	if err != nil {
		t.Fatal(err)
	}
	if reg.Status != StatusConfirmed || reg.PaymentStatus != PaymentNotRequired || len(reg.Tickets) != 2 {
		t.Fatalf("free registration: %+v", reg)
	}
	if p := keys.Partition(evGA); !slices.Equal(told, []int{p}) {
		t.Fatalf("the sync worker was told of partitions %v, want [%d]", told, p)
	}
	if s := b.sold(t, evGA); s["t:tk"] != 2 || s["ev"] != 2 {
		t.Fatalf("sold %v", s)
	}
	if n := b.streamLen(t, evGA); n != 1 {
		t.Fatalf("paid stream holds %d entries", n)
	}
	b.noneHeld(t, evGA)
	entries, err := b.rc.Do(b.ctx, b.rc.B().Xrange().Key(b.sp.Paid(keys.Partition(evGA))).Start("-").End("+").Build()).AsXRange()
	if err != nil {
		t.Fatal(err)
	}
	fields := []map[string]string{entries[0].FieldValues}
	if err := orders.FillRecords(b.ctx, b.rc, b.sp, fields); err != nil {
		t.Fatal(err)
	}
	rec, err := orders.DecodePaid(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	if rec.OrderID != reg.ID || rec.Source != "storefront" || rec.ChannelID != "" || rec.TenantID != tenant || len(rec.Tickets) != 2 {
		t.Fatalf("paid record %+v", rec)
	}
	got, found, err := b.regs.Get(b.ctx, reg.ID)
	if err != nil || !found || got.Status != StatusConfirmed || got.BuyerEmail != "ann@example.test" {
		t.Fatalf("get: %+v %v %v", got, found, err)
	}
	okey, _ := b.sp.Order(reg.ID)
	if ttl, _ := b.rc.Do(b.ctx, b.rc.B().Pttl().Key(okey).Build()).AsInt64(); ttl != -1 {
		t.Fatalf("a paid registration's record may expire before the worker has it: pttl %d", ttl)
	}
}

// A paid registration claims at once: a partner order reserved for the
// last places fails its confirm, and a partner confirm of the last places
// refuses the registration.
func TestRegistrationAndPartnerConfirmShareCapacity(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "3", "ev", "3")
	partner := func(n int64) orders.ReserveRequest { return partnerReq(n, "a@x.test", 0) }
	r, err := b.orders.Reserve(b.ctx, partner(2))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := b.regs.Register(b.ctx, gaReq(2, 1000, "a@x.test"))
	if err != nil || reg.Status != StatusAwaitingPayment {
		t.Fatalf("register: %+v %v", reg, err)
	}
	b.opened(t, reg.ID, "cs_1", "cs_2")
	_, err = b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: 2000, Reference: "p1"})
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != "CONFIRM_FAILED" || ae.Reason != "sold_out" {
		t.Fatalf("partner confirm against a storefront hold: %v", err)
	}
	// the other way: the partner confirms the last place first
	r2, err := b.orders.Reserve(b.ctx, partner(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r2.OrderID, Amount: 1000, Reference: "p2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.regs.Register(b.ctx, gaReq(1, 1000, "b@x.test")); codeOf(err) != "EVENT_SOLD_OUT" {
		t.Fatalf("register after the partner sold the last place: %v", err)
	}
	if s := b.sold(t, evGA); s["ev"] != 3 {
		t.Fatalf("sold %v", s)
	}
	// A partner cannot confirm a registration.
	if _, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: reg.ID, Amount: 2000, Reference: "p3"}); codeOf(err) != "NOT_FOUND" {
		t.Fatalf("partner confirm of a registration: %v", err)
	}
	// Paying it books it, once.
	out, err := pay(b, reg.ID, "cs_1", 2000)
	if err != nil || out.Status != StatusConfirmed || out.Duplicate || out.Reclaimed || len(out.Tickets) != 2 {
		t.Fatalf("pay: %+v %v", out, err)
	}
	out, err = pay(b, reg.ID, "cs_1", 2000)
	if err != nil || !out.Duplicate || out.Status != StatusConfirmed {
		t.Fatalf("pay again: %+v %v", out, err)
	}
	out, err = pay(b, reg.ID, "cs_2", 2000)
	if err != nil || out.RefundReason != "already_paid" || out.Status != StatusConfirmed {
		t.Fatalf("a second payment: %+v %v", out, err)
	}
	// A session ticketd never opened is refused, paid or not.
	if _, err := pay(b, reg.ID, "cs_forged", 2000); codeOf(err) != "PAYMENT_MISMATCH" {
		t.Fatalf("a payment of a session never opened for a paid registration: %v", err)
	}
	// A paid hash a rebuild wrote back has no sessions to check against: a
	// payment other than its own is to be refunded, never refused for good
	// (the processor took the money; a refusal would be retried for days
	// and then forgotten).
	okey, _ := b.sp.Order(reg.ID)
	if err := b.rc.Do(b.ctx, b.rc.B().Hdel().Key(okey).Field("sess").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	out, err = pay(b, reg.ID, "cs_3", 2000)
	if err != nil || out.RefundReason != "already_paid" || out.Status != StatusConfirmed {
		t.Fatalf("another payment of a rebuilt paid registration: %+v %v", out, err)
	}
	if n := b.streamLen(t, evGA); n != 2 { // the partner order and the registration
		t.Fatalf("paid stream holds %d entries", n)
	}
	if s := b.sold(t, evGA); s["ev"] != 3 {
		t.Fatalf("sold after payments %v", s)
	}
	b.noneHeld(t, evGA)
}

// Expiry gives everything back: sold counts, seats, the discount use, the
// buyer's admissions; the zset empties, and a second expire changes nothing.
func TestExpiryGivesEverythingBack(t *testing.T) {
	b := setup(t)
	b.caps(t, evSeated, "ev", "20")
	tok := b.hold(t, "C-1", "C-2")
	q := seatQuote("C-1", "C-2")
	q.DiscountCode, q.DiscountMaxUses = "SAVE", 1
	reg, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Buyer: Buyer{Email: " Ann@X.test "},
		Quote: q, HoldToken: tok, MaxPerBuyer: 4})
	if err != nil {
		t.Fatal(err)
	}
	if v := b.seat(t, evSeated, "C-1"); v != "o:"+reg.ID {
		t.Fatalf("seat key %q", v)
	}
	left, err := b.orders.DiscountLeft(b.ctx, evSeated, "SAVE", 1)
	if err != nil || left != 0 {
		t.Fatalf("discount left while held: %d %v", left, err)
	}
	buyers := func() int64 {
		n, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.Buyers(evSeated)).Field(orders.BuyerKey("ann@x.test")).Build()).AsInt64()
		return n
	}
	if buyers() != 2 {
		t.Fatalf("buyer count %d", buyers())
	}
	if ok, err := b.regs.Expire(b.ctx, reg.ID); err != nil || ok {
		t.Fatalf("expire before the window passed: %v %v", ok, err)
	}
	b.backdate(t, reg.ID)
	n, err := b.regs.Sweep(b.ctx, nil)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if s := b.sold(t, evSeated); s["ev"] != 0 {
		t.Fatalf("sold after expiry %v", s)
	}
	if v := b.seat(t, evSeated, "C-1"); v != "" {
		t.Fatalf("seat key after expiry %q", v)
	}
	if left, _ := b.orders.DiscountLeft(b.ctx, evSeated, "SAVE", 1); left != 1 {
		t.Fatalf("discount left after expiry %d", left)
	}
	if buyers() != 0 {
		t.Fatalf("buyer count after expiry %d", buyers())
	}
	b.noneHeld(t, evSeated)
	got, _, _ := b.regs.Get(b.ctx, reg.ID)
	if got.Status != StatusExpired {
		t.Fatalf("status %q", got.Status)
	}
	if ok, err := b.regs.Expire(b.ctx, reg.ID); err != nil || ok {
		t.Fatalf("second expire: %v %v", ok, err)
	}
	if s := b.sold(t, evSeated); s["ev"] != 0 {
		t.Fatalf("sold after a second expire %v", s)
	}
	// The seats sell again.
	tok2 := b.hold(t, "C-1")
	if _, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Buyer: Buyer{Email: "b@x.test"},
		Quote: seatQuote("C-1"), HoldToken: tok2}); err != nil {
		t.Fatal(err)
	}
}

type fakeExpirer struct {
	mu    sync.Mutex
	paid  map[string]bool
	calls []string
	err   error
}

func (f *fakeExpirer) Expire(_ context.Context, processor, session string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, processor+":"+session)
	return f.paid[session], f.err
}

// The sweeper closes the processor's session first; a session already paid
// keeps the hold once, for the webhook on its way, which then books it.
func TestSweeperAsksTheProcessorFirstAndKeepsAPaidSession(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "5", "ev", "5")
	open, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	paidSess, err := b.regs.Register(b.ctx, gaReq(1, 1000, "b@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	for id, sess := range map[string]string{open.ID: "cs_open", paidSess.ID: "cs_paid"} {
		if err := b.regs.AttachSession(b.ctx, id, "card", sess); err != nil {
			t.Fatal(err)
		}
		b.backdate(t, id)
	}
	x := &fakeExpirer{paid: map[string]bool{"cs_paid": true}}
	n, err := b.regs.Sweep(b.ctx, x)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if len(x.calls) != 2 {
		t.Fatalf("expirer calls %v", x.calls)
	}
	if got, _, _ := b.regs.Get(b.ctx, open.ID); got.Status != StatusExpired {
		t.Fatalf("unpaid session's registration: %s", got.Status)
	}
	got, _, _ := b.regs.Get(b.ctx, paidSess.ID)
	if got.Status != StatusAwaitingPayment || !got.ExpiresAt.After(time.Now().Add(5*time.Minute)) {
		t.Fatalf("paid session's registration: %s until %v", got.Status, got.ExpiresAt)
	}
	if s := b.sold(t, evGA); s["ev"] != 1 {
		t.Fatalf("sold %v", s)
	}
	out, err := pay(b, paidSess.ID, "cs_paid", 1000)
	if err != nil || out.Status != StatusConfirmed || out.Reclaimed {
		t.Fatalf("webhook after the grace began: %+v %v", out, err)
	}
	// A session can no longer be opened for what is not awaiting payment.
	var ae *apierr.Error
	if err := b.regs.AttachSession(b.ctx, open.ID, "card", "cs_x"); !errors.As(err, &ae) || ae.Code != "REGISTRATION_NOT_PAYABLE" || ae.Reason != "expired" {
		t.Fatalf("attach to an expired registration: %v", err)
	}
	b.noneHeld(t, evGA)
}

// A processor that cannot be asked holds the expiry back until a grace
// period past the window, not forever.
func TestSweeperRetriesAProcessorThatFails(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "ev", "5")
	b.dueWithSession(t, "cs_1")
	x := &fakeExpirer{err: errors.New("processor down")}
	if n, err := b.regs.Sweep(b.ctx, x); err != nil || n != 0 {
		t.Fatalf("sweep with the processor down: %d %v", n, err)
	}
	if s := b.sold(t, evGA); s["ev"] != 1 {
		t.Fatalf("sold %v", s)
	}
	b.regs.Grace = time.Millisecond
	if n, err := b.regs.Sweep(b.ctx, x); err != nil || n != 1 {
		t.Fatalf("sweep past the grace: %d %v", n, err)
	}
}

// A payment after expiry claims anew when it can (Reclaimed); otherwise the
// registration needs a refund: sold_out for GA, seat_lost for a seat.
func TestLatePaymentReclaimsOrIsRefunded(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "2", "ev", "2")
	b.caps(t, evSeated, "ev", "20")
	a, _ := b.regs.Register(b.ctx, gaReq(2, 1000, "a@x.test"))
	b.opened(t, a.ID, "cs_a")
	b.expireNow(t, a.ID)
	out, err := pay(b, a.ID, "cs_a", 2000)
	if err != nil || out.Status != StatusConfirmed || !out.Reclaimed {
		t.Fatalf("late payment with capacity free: %+v %v", out, err)
	}
	if s := b.sold(t, evGA); s["ev"] != 2 {
		t.Fatalf("sold %v", s)
	}
	c, _ := b.regs.Register(b.ctx, gaReq(1, 1000, "c@x.test"))
	if c.ID != "" {
		t.Fatal("registered beyond capacity")
	}
	// GA sold out meanwhile
	b.caps(t, evGA, "t:tk", "3", "ev", "3")
	d, err := b.regs.Register(b.ctx, gaReq(1, 1000, "d@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, d.ID, "cs_d")
	b.expireNow(t, d.ID)
	if _, err := b.regs.Register(b.ctx, gaReq(1, 1000, "e@x.test")); err != nil {
		t.Fatal(err)
	}
	out, err = pay(b, d.ID, "cs_d", 1000)
	if err != nil || out.Status != StatusRefundRequired || out.Reason != "sold_out" || out.RefundReason != "sold_out" {
		t.Fatalf("late payment, sold out: %+v %v", out, err)
	}
	// the same seat taken by another buyer meanwhile
	tok := b.hold(t, "C-5")
	s1, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-5"), HoldToken: tok, Buyer: Buyer{Email: "s@x.test"}})
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, s1.ID, "cs_s")
	b.expireNow(t, s1.ID)
	b.hold(t, "C-5")
	out, err = pay(b, s1.ID, "cs_s", 1000)
	if err != nil || out.Status != StatusRefundRequired || out.Reason != "seat_lost" {
		t.Fatalf("late payment, seat lost: %+v %v", out, err)
	}
	// the same seat still free
	tok = b.hold(t, "C-6")
	s2, _ := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-6"), HoldToken: tok, Buyer: Buyer{Email: "s@x.test"}})
	b.opened(t, s2.ID, "cs_s2")
	b.expireNow(t, s2.ID)
	out, err = pay(b, s2.ID, "cs_s2", 1000)
	if err != nil || out.Status != StatusConfirmed || !out.Reclaimed {
		t.Fatalf("late payment, seat free: %+v %v", out, err)
	}
	booked, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.Booked(evSeated)).Field("C-6").Build()).ToString()
	if booked != s2.ID {
		t.Fatalf("C-6 booked by %q", booked)
	}
	// a refund stays a refund, and says so to the same webhook again
	out, err = pay(b, d.ID, "cs_d", 1000)
	if err != nil || !out.Duplicate || out.Status != StatusRefundRequired {
		t.Fatalf("refunded registration paid again: %+v %v", out, err)
	}
}

// A payment confirms a registration only for a checkout session ticketd
// opened for it, of its total in USD. Anything else (a wrong amount or
// currency, a session never opened, another registration's session) is
// refused with PAYMENT_MISMATCH and changes nothing: the registration still
// awaits payment with its hold, nothing is queued, and the right payment
// then books it.
func TestPaymentNotOpenedIsRefusedAndChangesNothing(t *testing.T) {
	b := setup(t)
	var told []int // the partitions the node's sync worker is told to read (orders.Service.Paid)
	b.orders.Paid = func(p int) { told = append(told, p) }
	b.caps(t, evGA, "ev", "5")
	reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.regs.Register(b.ctx, gaReq(1, 1000, "b@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, reg.ID, "cs_mine")
	b.opened(t, other.ID, "cs_theirs")
	for _, c := range []struct {
		name, why string
		p         Payment
	}{
		{"amount", "amount", Payment{PaymentID: "cs_mine", Amount: 999, Currency: "USD"}},
		{"currency", "currency", Payment{PaymentID: "cs_mine", Amount: 1000, Currency: "EUR"}},
		{"a session never opened", "session", Payment{PaymentID: "cs_forged", Amount: 1000, Currency: "USD"}},
		{"another registration's session", "session", Payment{PaymentID: "cs_theirs", Amount: 1000, Currency: "USD"}},
		{"the session of another processor", "session", Payment{Processor: "wallet", PaymentID: "cs_mine", Amount: 1000, Currency: "USD"}},
	} {
		c.p.RegistrationID = reg.ID
		if c.p.Processor == "" {
			c.p.Processor = "card"
		}
		out, err := b.regs.Pay(b.ctx, c.p)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != "PAYMENT_MISMATCH" || ae.Status != 409 || ae.Reason != c.why {
			t.Fatalf("%s: %+v %v, want 409 PAYMENT_MISMATCH (%s)", c.name, out, err, c.why)
		}
		got, _, err := b.regs.Get(b.ctx, reg.ID)
		if err != nil || got.Status != StatusAwaitingPayment || got.Paid != 0 {
			t.Fatalf("%s: the registration became %+v (%v)", c.name, got, err)
		}
		if s := b.sold(t, evGA); s["ev"] != 2 {
			t.Fatalf("%s: sold %v: the hold was given back", c.name, s)
		}
		if n := b.streamLen(t, evGA); n != 0 {
			t.Fatalf("%s: %d entries on the paid stream", c.name, n)
		}
	}
	if len(told) != 0 {
		t.Fatalf("refused payments told the sync worker of partitions %v", told)
	}
	out, err := pay(b, reg.ID, "cs_mine", 1000)
	if err != nil || out.Status != StatusConfirmed || out.Reclaimed {
		t.Fatalf("the session ticketd opened: %+v %v", out, err)
	}
	if p := keys.Partition(evGA); !slices.Equal(told, []int{p}) {
		t.Fatalf("the payment told the sync worker of partitions %v, want [%d]", told, p)
	}
	// Paid: a forged payment is refused as well, not turned into a refund
	// of money nobody paid.
	if _, err := pay(b, reg.ID, "cs_forged", 1000); codeOf(err) != "PAYMENT_MISMATCH" {
		t.Fatalf("a forged payment of a paid registration: %v", err)
	}
	if got, _, _ := b.regs.Get(b.ctx, reg.ID); got.Status != StatusConfirmed || got.SessionID != "cs_mine" {
		t.Fatalf("after a forged payment the paid registration is %+v", got)
	}
}

// A payment for a registration ticketd knows nowhere needs a refund
// ("lost"), and a later read says so.
func TestPaymentOfALostRegistration(t *testing.T) {
	b := setup(t)
	id := b.orders.NewID(evGA, Owner(tenant))
	if _, found, err := b.regs.Get(b.ctx, id); err != nil || found {
		t.Fatalf("unknown registration found: %v %v", found, err)
	}
	out, err := b.regs.Pay(b.ctx, Payment{RegistrationID: id, Processor: "card", PaymentID: "cs_1", Amount: 500, Currency: "USD", TenantID: tenant})
	if err != nil || out.Status != StatusRefundRequired || out.Reason != "lost" {
		t.Fatalf("pay: %+v %v", out, err)
	}
	got, found, err := b.regs.Get(b.ctx, id)
	if err != nil || !found || got.Status != StatusRefundRequired || got.Reason != "lost" {
		t.Fatalf("get after: %+v %v %v", got, found, err)
	}
	// an id not minted for the tenant is not ticketd's
	other := b.orders.NewID(evGA, "c")
	if _, err := b.regs.Pay(b.ctx, Payment{RegistrationID: other, Processor: "card", PaymentID: "cs_2", Amount: 500, Currency: "USD", TenantID: tenant}); codeOf(err) != "NOT_FOUND" {
		t.Fatalf("pay of a foreign id: %v", err)
	}
}

// The per-buyer limit counts normalised e-mails over both surfaces:
// registrations (held and paid) and paid partner orders. A buyer holds one
// registration awaiting payment, so the limit meets a held one together
// with what the buyer paid.
func TestBuyerLimitOnBothSurfaces(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	register := func(n int64, email string) (Registration, error) {
		r := gaReq(n, 1000, email)
		r.MaxPerBuyer = 4
		return b.regs.Register(b.ctx, r)
	}
	first, err := register(2, "Buyer@Example.test")
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, first.ID, "cs_first")
	if out, err := pay(b, first.ID, "cs_first", 2000); err != nil || out.Status != StatusConfirmed {
		t.Fatalf("pay: %+v %v", out, err)
	}
	// 2 paid + 2 held fit; the buyer's next registration replaces the held
	// one, so 2 paid + 3 do not, whatever the spelling of the address
	if _, err := register(2, "buyer+again@example.test"); err != nil {
		t.Fatal(err)
	}
	_, err = register(3, "  buyer@example.TEST ")
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != "BUYER_LIMIT_REACHED" || ae.Status != 409 {
		t.Fatalf("beyond the limit: %v", err)
	}
	if d := ae.Data.(map[string]any); d["limit"] != int64(4) || d["remaining"] != int64(2) {
		t.Fatalf("data %v", d)
	}
	if _, err := register(1, "buyer@example.test"); err != nil { // 2 paid + 1 held
		t.Fatal(err)
	}
	partner := func(n int64, email string) orders.ReserveRequest { return partnerReq(n, email, 4) }
	if _, err := b.orders.Reserve(b.ctx, partner(2, "BUYER@example.test")); codeOf(err) != "BUYER_LIMIT_REACHED" {
		t.Fatalf("partner reserve beyond the limit: %v", err)
	}
	res, err := b.orders.Reserve(b.ctx, partner(1, "buyer@example.test"))
	if err != nil {
		t.Fatal(err)
	}
	// a second order reserved before the first is confirmed is refused at
	// its confirm
	res2, err := b.orders.Reserve(b.ctx, partner(1, "buyer@example.test"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: res.OrderID, Amount: 1000, Reference: "p1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: res2.OrderID, Amount: 1000, Reference: "p2"}); !errors.As(err, &ae) || ae.Reason != "buyer_limit" {
		t.Fatalf("confirm beyond the limit: %v", err)
	}
	// the paid partner order counts for the storefront: 2 + 1 paid, and 2
	// more (replacing the held one) do not fit
	if _, err := register(2, "buyer@example.test"); codeOf(err) != "BUYER_LIMIT_REACHED" {
		t.Fatalf("storefront after the partner order: %v", err)
	}
	// another buyer is not limited by this one
	if _, err := register(4, "other@example.test"); err != nil {
		t.Fatal(err)
	}
}

// Register refuses seats its token does not hold, or that another holds,
// with the codes of a partner reserve.
func TestRegisterSeatChecks(t *testing.T) {
	b := setup(t)
	b.caps(t, evSeated, "ev", "20")
	mine := b.hold(t, "C-1")
	b.hold(t, "C-2")
	req := func(tok string, labels ...string) Request {
		return Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote(labels...), HoldToken: tok, Buyer: Buyer{Email: "a@x.test"}}
	}
	if _, err := b.regs.Register(b.ctx, req(mine, "C-1", "C-2")); codeOf(err) != "SEAT_CONFLICT" {
		t.Fatalf("someone else's seat: %v", err)
	}
	if _, err := b.regs.Register(b.ctx, req(mine, "C-1", "C-3")); codeOf(err) != "SEAT_NOT_HELD" {
		t.Fatalf("a seat not held: %v", err)
	}
	if _, err := b.regs.Register(b.ctx, req(seats.NewToken(), "C-3")); codeOf(err) != "HOLD_EXPIRED" {
		t.Fatalf("a gone token: %v", err)
	}
	if s := b.sold(t, evSeated); s["ev"] != 0 {
		t.Fatalf("a refused registration claimed %v", s)
	}
}

// A free registration of seats books them at once; the hold token no
// longer holds them and nobody can hold them again.
func TestFreeSeatRegistrationBooksItsSeats(t *testing.T) {
	b := setup(t)
	b.caps(t, evSeated, "ev", "20")
	tok := b.hold(t, "C-3")
	q := seatQuote("C-3")
	q.Total, q.Subtotal, q.Lines[0].UnitPrice, q.Lines[0].Amount = 0, 0, 0, 0
	reg, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: q, HoldToken: tok, Buyer: Buyer{Email: "a@x.test"}})
	if err != nil || reg.Status != StatusConfirmed {
		t.Fatalf("register: %+v %v", reg, err)
	}
	booked, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.Booked(evSeated)).Field("C-3").Build()).ToString()
	if booked != reg.ID || b.seat(t, evSeated, "C-3") != "" {
		t.Fatalf("seat C-3 booked by %q, seat key %q", booked, b.seat(t, evSeated, "C-3"))
	}
	tok2 := seats.NewToken()
	if _, err := b.seats.CreateToken(b.ctx, evSeated, tok2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.seats.Hold(b.ctx, b.seated, tok2, []string{"C-3"}); codeOf(err) != "SEAT_CONFLICT" {
		t.Fatalf("hold of a seat a free registration booked: %v", err)
	}
}

// Sessions attach only to a registration awaiting payment of the storefront;
// reads never show a partner order as a registration.
func TestAttachSessionAndGetRefuseOthers(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	free, err := b.regs.Register(b.ctx, gaReq(1, 0, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	var ae *apierr.Error
	if err := b.regs.AttachSession(b.ctx, free.ID, "card", "cs_1"); !errors.As(err, &ae) || ae.Status != 409 || ae.Reason != "paid" {
		t.Fatalf("session for a paid registration: %v", err)
	}
	if err := b.regs.AttachSession(b.ctx, b.orders.NewID(evGA, Owner(tenant)), "card", "cs_1"); codeOf(err) != "NOT_FOUND" {
		t.Fatalf("session for an unknown registration: %v", err)
	}
	r, err := b.orders.Reserve(b.ctx, partnerReq(1, "p@x.test", 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.regs.AttachSession(b.ctx, r.OrderID, "card", "cs_1"); codeOf(err) != "NOT_FOUND" {
		t.Fatalf("session for a partner order: %v", err)
	}
	if _, found, err := b.regs.Get(b.ctx, r.OrderID); err != nil || found {
		t.Fatalf("a partner order read as a registration: %v %v", found, err)
	}
	if _, err := pay(b, r.OrderID, "cs_1", 1000); codeOf(err) != "NOT_FOUND" {
		t.Fatalf("a payment of a partner order: %v", err)
	}
	held, err := b.regs.Register(b.ctx, gaReq(1, 1000, "b@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxSessions {
		if err := b.regs.AttachSession(b.ctx, held.ID, "card", "cs_"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.regs.AttachSession(b.ctx, held.ID, "card", "cs_0"); err != nil {
		t.Fatalf("the same session again: %v", err)
	}
	if err := b.regs.AttachSession(b.ctx, held.ID, "wallet", "w_1"); !errors.As(err, &ae) || ae.Reason != "too_many_sessions" {
		t.Fatalf("one session too many: %v", err)
	}
	got, _, _ := b.regs.Get(b.ctx, held.ID)
	if got.Processor != "card" || got.SessionID != "cs_"+strconv.Itoa(MaxSessions-1) {
		t.Fatalf("latest session %s %s", got.Processor, got.SessionID)
	}
}

// While the partition's marker is missing (Redis lost its state, or a
// rebuild runs) nothing registers and nothing is paid; a payment is to be
// retried (503), not refunded.
func TestRegisterAndPayRefuseWhileTheMarkerIsMissing(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	held, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.rc.Do(b.ctx, b.rc.B().Del().Key(b.sp.Live(keys.Partition(evGA))).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for _, total := range []money.Cents{0, 1000} {
		if _, err := b.regs.Register(b.ctx, gaReq(1, total, "b@x.test")); !errors.Is(err, redisstate.ErrSalesStopped) {
			t.Fatalf("register (unit %d) without the marker: %v", total, err)
		}
	}
	if _, err := pay(b, held.ID, "cs_1", 1000); !errors.Is(err, redisstate.ErrSalesStopped) {
		t.Fatalf("pay without the marker: %v", err)
	}
	if s := b.sold(t, evGA); s["ev"] != 1 {
		t.Fatalf("sold %v", s)
	}
	if n := b.streamLen(t, evGA); n != 0 {
		t.Fatalf("paid stream holds %d", n)
	}
}

// A payment answers the registration as a read right after it does: its
// script makes that view of what it read and wrote (lib/regview
// regview_of) instead of reading the hash again, so every field a read
// answers must come out the same, for a GA and a seated registration,
// paid in its window or after it (claimed anew), with a sync worker
// draining the paid stream (the record kept) or without one (dropped).
func TestAPaymentAnswersTheRegistrationAsAReadDoes(t *testing.T) {
	for _, capped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream cap %v", capped), func(t *testing.T) {
			b := setup(t)
			if capped {
				b.regs.StreamCap, b.orders.StreamCap = 100, 100
			}
			b.caps(t, evGA, "t:tk", "10", "ev", "10")
			check := func(what, id, sess string, amount money.Cents) {
				t.Helper()
				// the payment's reply as Pay reads it, and its view raw: the
				// parsed registration leaves some fields out ('paid', a paid
				// one's 'exp' and 'cexp'), the raw view has them all
				ev, _ := keys.OrderEvent(id)
				arr, err := b.regs.runPay(b.ctx, ev, id, "card:"+sess, Payment{RegistrationID: id, Processor: "card", PaymentID: sess,
					Amount: amount, Currency: "usd"}, Mark{})
				if err != nil {
					t.Fatalf("%s: pay: %v", what, err)
				}
				out, err := b.regs.outcome(b.ctx, id, arr, payView, Outcome{})
				if err != nil || out.Status != StatusConfirmed {
					t.Fatalf("%s: paid %+v %v", what, out, err)
				}
				got, found, err := b.regs.Get(b.ctx, id)
				if err != nil || !found {
					t.Fatalf("%s: read %v %v", what, found, err)
				}
				if !reflect.DeepEqual(out.Registration, got) {
					t.Fatalf("%s: the payment answered\n%+v\nand a read\n%+v", what, out.Registration, got)
				}
				if len(got.Tickets) == 0 || got.Paid != amount || got.SessionID != sess {
					t.Fatalf("%s: read %+v", what, got)
				}
				view, err := arr[payView].ToArray()
				if err != nil {
					t.Fatal(err)
				}
				okey, _ := b.sp.Order(id)
				read, err := eval.Array(b.ctx, b.rc, statusScript, []string{okey}, nil)
				if err != nil {
					t.Fatal(err)
				}
				// past the code and the clock: every field as stored
				if p, r := messageStrings(t, view)[2:], messageStrings(t, read)[2:]; !slices.Equal(p, r) {
					t.Fatalf("%s: the payment's view %q, a read's %q", what, p, r)
				}
			}
			ga, err := b.regs.Register(b.ctx, gaReq(2, 1000, "ga@x.test"))
			if err != nil {
				t.Fatal(err)
			}
			b.opened(t, ga.ID, "cs_ga1", "cs_ga2")
			check("GA", ga.ID, "cs_ga2", 2000)

			tok := b.hold(t, "C-1", "C-2")
			seated, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-1", "C-2"),
				HoldToken: tok, Buyer: Buyer{Name: "Sam", Email: "seated@x.test"}})
			if err != nil {
				t.Fatal(err)
			}
			b.opened(t, seated.ID, "cs_seated")
			check("seated", seated.ID, "cs_seated", 2000)

			late, err := b.regs.Register(b.ctx, gaReq(1, 1000, "late@x.test"))
			if err != nil {
				t.Fatal(err)
			}
			b.opened(t, late.ID, "cs_late")
			b.expireNow(t, late.ID)
			check("paid after its window", late.ID, "cs_late", 1000)
		})
	}
}

// messageStrings is a reply's elements as strings, an integer as "int:<n>".
func messageStrings(t *testing.T, arr []rueidis.RedisMessage) []string {
	t.Helper()
	out := make([]string, len(arr))
	for i, m := range arr {
		if n, err := m.AsInt64(); err == nil && !m.IsString() {
			out[i] = "int:" + strconv.FormatInt(n, 10)
			continue
		}
		s, err := m.ToString()
		if err != nil {
			t.Fatalf("element %d: %v", i, err)
		}
		out[i] = s
	}
	return out
}
