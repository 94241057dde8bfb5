package registrations

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// scriptCounter is a client that counts the runs of the scripts that
// change a seated sale (FCALL; one answered "Function not found" ran
// nothing: Redis had not loaded the script, and the FCALL after it
// counts).
type scriptCounter struct {
	rueidis.Client
	n      atomic.Int64
	counts map[string]bool // the function name of each counted script
}

func newScriptCounter(t *testing.T, c rueidis.Client) *scriptCounter {
	sc := &scriptCounter{Client: c, counts: map[string]bool{}}
	for _, name := range []string{"seat_extend", "seat_release", "order_confirm", "reg_pay", "reg_expire"} {
		_, fn, err := eval.Library(name)
		if err != nil {
			t.Fatal(err)
		}
		sc.counts[fn] = true
	}
	return sc
}

func (c *scriptCounter) isScript(cmd rueidis.Completed) bool {
	a := cmd.Commands()
	return strings.EqualFold(a[0], "FCALL") && len(a) > 1 && c.counts[a[1]]
}

// ran counts a run of a counted script (script: isScript of its command,
// read before the command ran: rueidis recycles a command once it is done).
func (c *scriptCounter) ran(script bool, res rueidis.RedisResult) {
	if script && !eval.IsNotLoaded(res.Error()) {
		c.n.Add(1)
	}
}

func (c *scriptCounter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	script := c.isScript(cmd)
	res := c.Client.Do(ctx, cmd)
	c.ran(script, res)
	return res
}

func (c *scriptCounter) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	script := make([]bool, len(multi))
	for i, cmd := range multi {
		script[i] = c.isScript(cmd)
	}
	res := c.Client.DoMulti(ctx, multi...)
	for i := range res {
		c.ran(script[i], res[i])
	}
	return res
}

// Every script knows its keys before it runs (issue 19): a seated or
// discounted partner confirm, a seated or discounted registration's
// payment and expiry, and a token's extend and releases each take one
// script call, never a second run with keys the first one named.
func TestSeatedStateChangesRunOneScript(t *testing.T) {
	t.Parallel()
	rc, sp := redistest.New(t)
	sc := newScriptCounter(t, rc)
	b := bundleOn(t, sc, sp)
	b.caps(t, evSeated, "ev", "100")
	warm := b.hold(t, "C-20")
	if _, err := b.seats.Extend(b.ctx, evSeated, warm); err != nil {
		t.Fatal(err)
	}
	if _, err := b.seats.Release(b.ctx, b.seated, warm, nil); err != nil {
		t.Fatal(err)
	}
	calls := func(what string, f func() error) {
		t.Helper()
		before := sc.n.Load()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := sc.n.Load() - before; n != 1 {
			t.Errorf("%s ran %d scripts, want 1", what, n)
		}
	}

	tok := b.hold(t, "C-1", "C-2", "C-3")
	calls("extend", func() error {
		_, err := b.seats.ExtendFor(b.ctx, evSeated, tok, holds.Client{})
		return err
	})
	calls("release of some", func() error {
		_, err := b.seats.Release(b.ctx, b.seated, tok, []string{"C-3"})
		return err
	})
	calls("release of all", func() error {
		_, err := b.seats.Release(b.ctx, b.seated, tok, nil)
		return err
	})

	tok = b.hold(t, "C-5", "C-6")
	q := seatQuote("C-5", "C-6")
	r, err := b.orders.Reserve(b.ctx, orders.ReserveRequest{EventID: evSeated, Caller: "ch:c", ChannelID: "c",
		IdempotencyKey: "k1", Fingerprint: "fp", Total: q.Total, Claims: q.Claims, SeatLabels: q.SeatLabels, HoldToken: tok,
		Record: orders.Record{TenantID: tenant, Source: "channel", ChannelID: "c", Lines: q.Lines,
			Tickets: []orders.Ticket{{Label: "C-5"}, {Label: "C-6"}}}})
	if err != nil {
		t.Fatal(err)
	}
	calls("seated confirm", func() error {
		_, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: r.OrderID, Amount: q.Total, Reference: "p1"})
		return err
	})

	tok = b.hold(t, "C-8")
	reg, err := b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-8"), HoldToken: tok,
		Buyer: Buyer{Email: "pay@x.test"}})
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, reg.ID, "cs_1")
	calls("seated pay", func() error {
		_, err := b.regs.Pay(b.ctx, Payment{RegistrationID: reg.ID, Processor: "card", PaymentID: "cs_1", Amount: money.Cents(1000), Currency: "USD"})
		return err
	})

	tok = b.hold(t, "C-10")
	reg, err = b.regs.Register(b.ctx, Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-10"), HoldToken: tok,
		Buyer: Buyer{Email: "late@x.test"}})
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, reg.ID, "cs_2")
	b.backdate(t, reg.ID)
	calls("seated expire", func() error {
		ok, err := b.regs.Expire(b.ctx, reg.ID)
		if err == nil && !ok {
			t.Error("not expired")
		}
		return err
	})
	if v := b.seat(t, evSeated, "C-10"); v != "" {
		t.Fatalf("C-10 still held by %q after expiry", v)
	}
	// the late payment claims the same seat anew: one script too
	calls("late seated pay (re-claim)", func() error {
		out, err := b.regs.Pay(b.ctx, Payment{RegistrationID: reg.ID, Processor: "card", PaymentID: "cs_2", Amount: money.Cents(1000), Currency: "USD"})
		if err == nil && out.Registration.Status != StatusConfirmed {
			t.Errorf("late payment: %+v", out)
		}
		return err
	})

	// A limited discount code: its holds are the event's keys too.
	b.caps(t, evGA, "t:tk", "100", "ev", "100")
	pr := partnerReq(1, "p@x.test", 0)
	pr.IdempotencyKey, pr.DiscountCode, pr.DiscountMaxUses = "kd", "SAVE", 5
	o, err := b.orders.Reserve(b.ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	calls("discounted confirm", func() error {
		_, err := b.orders.Confirm(b.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: o.OrderID, Amount: pr.Total, Reference: "p2"})
		return err
	})
	discounted := func(email, sess string) string {
		r := gaReq(1, 1000, email)
		r.Quote.DiscountCode, r.Quote.DiscountMaxUses = "SAVE", 5
		reg, err := b.regs.Register(b.ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		b.opened(t, reg.ID, sess)
		return reg.ID
	}
	id := discounted("dpay@x.test", "cs_3")
	calls("discounted pay", func() error {
		out, err := pay(b, id, "cs_3", 1000)
		if err == nil && out.Registration.Status != StatusConfirmed {
			t.Errorf("discounted payment: %+v", out)
		}
		return err
	})
	id = discounted("dlate@x.test", "cs_4")
	b.backdate(t, id)
	calls("discounted expire", func() error {
		ok, err := b.regs.Expire(b.ctx, id)
		if err == nil && !ok {
			t.Error("not expired")
		}
		return err
	})
	calls("late discounted pay (re-claim)", func() error {
		out, err := pay(b, id, "cs_4", 1000)
		if err == nil && (out.Registration.Status != StatusConfirmed || !out.Reclaimed) {
			t.Errorf("late discounted payment: %+v", out)
		}
		return err
	})
	if n, _ := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.DiscountUsed(evGA)).Field("SAVE").Build()).AsInt64(); n != 3 {
		t.Fatalf("SAVE used %d times, want 3", n)
	}
}
