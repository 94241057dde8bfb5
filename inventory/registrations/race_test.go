package registrations

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

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

// race runs buyer(i) for n buyers at once, with a sweeper running, and
// waits for all of them.
func race(b *bundle, n int, buyer func(i int)) {
	ctx, stop := context.WithCancel(b.ctx)
	sweeping := make(chan struct{})
	go func() { defer close(sweeping); b.regs.Run(ctx, 5*time.Millisecond) }()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); buyer(i) }()
	}
	wg.Wait()
	stop()
	<-sweeping
}

// 200 buyers race for 20 GA places through the storefront (register, then
// pay, pay late, or let it expire) and the partner surface (reserve,
// confirm), with a sweeper running: never more than capacity is sold, and
// once every hold has expired, sold is exactly what was paid.
func TestRaceGA(t *testing.T) {
	b := setup(t)
	const capacity, buyers = 20, 200
	b.caps(t, evGA, "t:tk", strconv.Itoa(capacity), "ev", strconv.Itoa(capacity))
	race(b, buyers, func(i int) {
		email := fmt.Sprintf("b%d@x.test", i)
		if i%2 == 1 {
			r, err := b.orders.Reserve(b.ctx, partnerReq(1, email, 0))
			if err == nil {
				_, _ = b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: 1000, Reference: "p" + strconv.Itoa(i)})
			}
			return
		}
		reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, email))
		if err != nil {
			return
		}
		switch rand.IntN(4) {
		case 0: // pays in time, twice (the webhook delivered again)
			_, _ = pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
			_, _ = pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
		case 1: // pays after the window
			b.backdate(t, reg.ID)
			_, _ = b.regs.Expire(b.ctx, reg.ID)
			_, _ = pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
		case 2: // never pays
			b.backdate(t, reg.ID)
		default: // pays the wrong amount
			_, _ = pay(b, reg.ID, "cs"+strconv.Itoa(i), 999)
		}
	})
	if s := b.sold(t, evGA); s["ev"] > capacity || s["t:tk"] > capacity {
		t.Fatalf("oversold: %v", s)
	}
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
	if admissions > capacity || s["ev"] != admissions || s["t:tk"] != admissions {
		t.Fatalf("paid %d admissions, sold %v", admissions, s)
	}
	if admissions == 0 {
		t.Fatal("nothing sold")
	}
}

// 200 buyers race for 20 seats: each holds a random seat, then registers
// it on the storefront (and pays, pays late or not at all) or reserves and
// confirms it as a partner order. Each seat is sold at most once, booked
// for the order that paid it, and sold equals the booked seats.
func TestRaceSeats(t *testing.T) {
	b := setup(t)
	const nseats, buyers = 20, 200
	b.caps(t, evSeated, "ev", strconv.Itoa(nseats))
	race(b, buyers, func(i int) {
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
				_, _ = b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: money.Cents(1000), Reference: "p" + strconv.Itoa(i)})
			}
			return
		}
		reg, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: q, HoldToken: tok,
			Buyer: Buyer{Email: fmt.Sprintf("b%d@x.test", i)}})
		if err != nil {
			return
		}
		switch rand.IntN(3) {
		case 0:
			_, _ = pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
		case 1:
			b.backdate(t, reg.ID)
			_, _ = b.regs.Expire(b.ctx, reg.ID)
			// the seat key is gone now, as after its PX: others may take it
			_, _ = pay(b, reg.ID, "cs"+strconv.Itoa(i), 1000)
		default:
			b.backdate(t, reg.ID)
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
	if s := b.sold(t, evSeated); s["ev"] != int64(len(owner)) {
		t.Fatalf("sold %v for %d booked seats", s, len(owner))
	}
	if len(owner) == 0 {
		t.Fatal("nothing sold")
	}
}
