package registrations

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/seats"
)

// paidOrders reads every paid order of the event off its paid stream.
func (b *bundle) paidOrders(t *testing.T, ev string) []orders.Record {
	t.Helper()
	entries, err := b.rc.Do(b.ctx, b.rc.B().Xrange().Key(b.sp.Paid(keys.Partition(ev))).Start("-").End("+").Build()).AsXRange()
	if err != nil {
		t.Fatal(err)
	}
	fields := make([]map[string]string, len(entries))
	for i, e := range entries {
		fields[i] = e.FieldValues
	}
	if err := orders.FillRecords(b.ctx, b.rc, b.sp, fields); err != nil {
		t.Fatal(err)
	}
	var out []orders.Record
	seen := map[string]bool{}
	for _, f := range fields {
		rec, err := orders.DecodePaid(f)
		if err != nil {
			t.Fatal(err)
		}
		if seen[rec.OrderID] {
			t.Fatalf("order %s queued twice", rec.OrderID)
		}
		seen[rec.OrderID] = true
		out = append(out, rec)
	}
	return out
}

// settle expires every registration still held, so that what stays sold
// is exactly what was paid.
func (b *bundle) settle(t *testing.T, ev string) {
	t.Helper()
	z := b.sp.Expiry(keys.Partition(ev))
	ids, err := b.rc.Do(b.ctx, b.rc.B().Zrange().Key(z).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		b.backdate(t, id)
	}
	if _, err := b.regs.Sweep(b.ctx, nil); err != nil {
		t.Fatal(err)
	}
	b.noneHeld(t, ev)
}

// raceWindow is the checkout window of the race tests: short, so windows
// pass while the race runs and the sweeper expires them as it would.
const raceWindow = 100 * time.Millisecond

// race runs buyer(i) for n buyers at once of event ev, with a sweeper
// running, and waits for all of them. Meanwhile it samples the event: no
// sold count passes capacity or goes below 0, and a registration awaiting
// payment (held, not yet expired or paid) still holds every one of its
// seats, whether or not its window has passed.
func race(t *testing.T, b *bundle, ev string, capacity int64, n int, buyer func(i int)) {
	t.Helper()
	b.regs.CheckoutTTL = raceWindow
	ctx, stop := context.WithCancel(b.ctx)
	sweeping := make(chan struct{})
	go func() { defer close(sweeping); b.regs.Run(ctx, 5*time.Millisecond) }()
	sampling := make(chan struct{})
	samples := 0
	go func() {
		defer close(sampling)
		for ctx.Err() == nil {
			if !b.sample(ctx, t, ev, capacity) {
				return
			}
			samples++
		}
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); buyer(i) }()
	}
	wg.Wait()
	stop()
	<-sweeping
	<-sampling
	if samples == 0 && !t.Failed() {
		t.Fatal("the race was never sampled")
	}
}

// sample checks the event's sold counts and the seats of its held
// registrations once; false when it found a fault (reported) or ctx ended.
func (b *bundle) sample(ctx context.Context, t *testing.T, ev string, capacity int64) bool {
	sold, err := b.rc.Do(ctx, b.rc.B().Hgetall().Key(b.sp.Sold(ev)).Build()).AsIntMap()
	if err != nil {
		return false
	}
	for f, v := range sold {
		if v > capacity || v < 0 {
			t.Errorf("sold %s = %d while the race ran (capacity %d)", f, v, capacity)
			return false
		}
	}
	ids, err := b.rc.Do(ctx, b.rc.B().Zrange().Key(b.sp.Expiry(keys.Partition(ev))).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		return false
	}
	for _, id := range ids {
		okey, _ := b.sp.Order(id)
		labels, err := b.rc.Do(ctx, b.rc.B().Hget().Key(okey).Field("seats").Build()).ToString()
		if err != nil || labels == "" {
			continue // GA, or gone
		}
		// st and the registration's seats read at one instant
		cmds := rueidis.Commands{b.rc.B().Multi().Build(), b.rc.B().Hget().Key(okey).Field("st").Build()}
		for _, l := range strings.Fields(labels) {
			cmds = append(cmds, b.rc.B().Hget().Key(b.sp.RegSeats(ev)).Field(l).Build())
		}
		cmds = append(cmds, b.rc.B().Exec().Build())
		res := b.rc.DoMulti(ctx, cmds...)
		vals, err := res[len(res)-1].ToArray()
		if err != nil {
			return ctx.Err() == nil
		}
		if st, _ := vals[0].ToString(); st != "held" {
			continue
		}
		for i, l := range strings.Fields(labels) {
			if v, _ := vals[1+i].ToString(); v != "o:"+id {
				t.Errorf("seat %s of held registration %s is %q while the race ran", l, id, v)
				return false
			}
		}
	}
	return true
}

// tally counts what the race's buyers were told: admissions confirmed on
// each surface, and every answer a payment may not give.
type tally struct {
	storefront, partner atomic.Int64
}

// paid checks one payment's answer and counts a confirmation. A payment
// of a session ticketd opened never fails; it confirms, or (after its
// window) is refunded because the place or seat went meanwhile; wrong is a
// payment of the wrong amount, refused (PAYMENT_MISMATCH) and changing
// nothing: its registration expires unpaid.
func (c *tally) paid(t *testing.T, out Outcome, err error, wrong bool) {
	switch {
	case wrong:
		if codeOf(err) != "PAYMENT_MISMATCH" {
			t.Errorf("payment of the wrong amount: %+v %v", out, err)
		}
	case err != nil:
		t.Errorf("pay: %v", err)
	case out.Status == StatusConfirmed:
		if !out.Duplicate {
			c.storefront.Add(1)
		}
	case out.Status == StatusRefundRequired && (out.RefundReason == "sold_out" || out.RefundReason == "seat_lost"):
	default:
		t.Errorf("payment: %+v", out)
	}
}

// check compares what stays sold, once every hold has expired, with what
// the buyers were told was confirmed and what the paid stream holds.
func (c *tally) check(t *testing.T, sold, queued int64) {
	t.Helper()
	sf, pt := c.storefront.Load(), c.partner.Load()
	if sold != sf+pt || queued != sold {
		t.Fatalf("sold %d, paid stream %d, confirmed %d storefront + %d partner", sold, queued, sf, pt)
	}
	if sf == 0 {
		t.Fatal("no registration was confirmed")
	}
}

// 200 buyers race for 20 GA places through the storefront (register, then
// pay, pay after the window, never pay, or pay the wrong amount) and the
// partner surface (reserve, confirm), with a sweeper running: never more
// than capacity is sold, and once every hold has expired, sold is exactly
// what the buyers were told was confirmed, and what was paid.
//
// Buyer 0 registers and pays alone before the others set off, so the
// storefront confirms at least one place whatever the machine's load: on a
// fresh Cluster the partners once took every place, and under load the
// first registration, racing 199 others, once saw its window pass before
// it could attach its session; either way the race tested no storefront
// payment.
func TestRaceGA(t *testing.T) {
	b := setup(t)
	const capacity, buyers = 20, 200
	b.caps(t, evGA, "t:tk", strconv.Itoa(capacity), "ev", strconv.Itoa(capacity))
	var c tally
	var registered atomic.Int64
	firstDone := make(chan struct{})
	race(t, b, evGA, capacity, buyers, func(i int) {
		email := fmt.Sprintf("b%d@x.test", i)
		if i == 0 {
			defer close(firstDone)
		} else {
			<-firstDone
		}
		if i%2 == 1 {
			r, err := b.orders.Reserve(b.ctx, partnerReq(1, email, 0))
			if err == nil {
				_, err = b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: 1000, Reference: "p" + strconv.Itoa(i)})
				if err == nil {
					c.partner.Add(1)
				}
			}
			return
		}
		reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, email))
		if err != nil {
			return
		}
		nth := registered.Add(1) - 1 // 0 for buyer 0, which pays at once
		ref := "cs" + strconv.Itoa(i)
		if b.regs.AttachSession(b.ctx, reg.ID, "card", ref) != nil {
			return // its window passed already: it never pays
		}
		switch nth % 4 {
		case 0: // pays at once, twice (the webhook delivered again)
			out, err := pay(b, reg.ID, ref, 1000)
			c.paid(t, out, err, false)
			out, err = pay(b, reg.ID, ref, 1000)
			c.paid(t, out, err, false)
		case 1: // pays after the window, before or after the sweep
			time.Sleep(raceWindow + time.Duration(rand.IntN(20))*time.Millisecond)
			out, err := pay(b, reg.ID, ref, 1000)
			c.paid(t, out, err, false)
		case 2: // never pays
		default:
			out, err := pay(b, reg.ID, ref, 999)
			c.paid(t, out, err, true)
		}
	})
	b.settle(t, evGA)
	paid := b.paidOrders(t, evGA)
	var admissions int64
	for _, rec := range paid {
		for _, l := range rec.Lines {
			admissions += l.Quantity
		}
		if len(rec.Lines) == 0 { // partner records in this test carry no lines
			admissions++
		}
	}
	s := b.sold(t, evGA)
	if s["t:tk"] != s["ev"] {
		t.Fatalf("sold %v", s)
	}
	c.check(t, s["ev"], admissions)
}

// 200 buyers race for 20 seats: each holds a random seat, then registers
// it on the storefront (and pays, pays after the window or not at all) or
// reserves and confirms it as a partner order. Each seat is sold at most
// once, booked for the order that paid it, sold equals the booked seats,
// and a registration awaiting payment keeps its seat past its window.
func TestRaceSeats(t *testing.T) {
	b := setup(t)
	const nseats, buyers = 20, 200
	b.caps(t, evSeated, "ev", strconv.Itoa(nseats))
	var c tally
	race(t, b, evSeated, nseats, buyers, func(i int) {
		label := "C-" + strconv.Itoa(1+rand.IntN(nseats))
		tok := seats.NewToken()
		if _, err := b.seats.CreateToken(b.ctx, evSeated, tok); err != nil {
			t.Error(err)
			return
		}
		if _, err := b.seats.Hold(b.ctx, b.seated, tok, []string{label}); err != nil {
			return // someone else holds it
		}
		q := seatQuote(label)
		if i%2 == 1 {
			r, err := b.orders.Reserve(b.ctx, orders.ReserveRequest{EventID: evSeated, Caller: "ch:c", ChannelID: "c",
				IdempotencyKey: "k" + strconv.Itoa(i), Fingerprint: "fp", Total: q.Total, Claims: q.Claims,
				SeatLabels: q.SeatLabels, HoldToken: tok,
				Record: orders.Record{TenantID: tenant, Source: "channel", ChannelID: "c", Lines: q.Lines,
					Tickets: []orders.Ticket{{Label: label}}}})
			if err == nil {
				_, err = b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: money.Cents(1000), Reference: "p" + strconv.Itoa(i)})
				if err == nil {
					c.partner.Add(1)
				}
			}
			return
		}
		reg, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: q, HoldToken: tok,
			Buyer: Buyer{Email: fmt.Sprintf("b%d@x.test", i)}})
		if err != nil {
			return
		}
		if b.regs.AttachSession(b.ctx, reg.ID, "card", "cs"+strconv.Itoa(i)) != nil {
			return // its window passed already: it never pays
		}
		switch (i / 2) % 3 {
		case 0:
			out, err := pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
			c.paid(t, out, err, false)
		case 1: // after the window: the seat is still its own until the sweep
			time.Sleep(raceWindow + time.Duration(rand.IntN(20))*time.Millisecond)
			out, err := pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
			c.paid(t, out, err, false)
		default: // never pays
		}
	})
	b.settle(t, evSeated)
	paid := b.paidOrders(t, evSeated)
	owner := map[string]string{}
	for _, rec := range paid {
		for _, l := range rec.Lines {
			if prev, ok := owner[l.RefID]; ok {
				t.Fatalf("seat %s sold to %s and %s", l.RefID, prev, rec.OrderID)
			}
			owner[l.RefID] = rec.OrderID
		}
	}
	booked, err := b.rc.Do(b.ctx, b.rc.B().Hgetall().Key(b.sp.Booked(evSeated)).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if len(booked) != len(owner) {
		t.Fatalf("booked %d seats, paid %d", len(booked), len(owner))
	}
	for l, id := range owner {
		if booked[l] != id {
			t.Fatalf("seat %s booked for %q, paid by %s", l, booked[l], id)
		}
	}
	c.check(t, b.sold(t, evSeated)["ev"], int64(len(owner)))
}
