package registrations

import (
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/room"
)

// roomOf is a waiting room of evGA (stock units) whose T0 has passed, and
// one admitted buyer's pass (for quantity units).
func roomOf(t *testing.T, b *bundle, stock int64, ttl time.Duration, email string, quantity int64) (*room.Service, *catalog.Room, room.Pass) {
	t.Helper()
	rs := &room.Service{Redis: b.rc, Space: b.sp, Key: []byte("room-key")}
	cfg := &catalog.Room{OpensAt: time.Now().Add(-time.Hour), SalesStartAt: time.Now().Add(-time.Minute),
		PassTTL: ttl, PerBuyer: 4, Stock: stock}
	j, err := rs.Join(b.ctx, cfg, room.JoinRequest{EventID: evGA, Email: email, Quantity: quantity})
	if err != nil {
		t.Fatal(err)
	}
	if j.State != room.Admitted {
		t.Fatalf("join: %+v, want admitted", j)
	}
	p, err := rs.CheckPass(evGA, j.Pass, email)
	if err != nil {
		t.Fatal(err)
	}
	return rs, cfg, p
}

func (b *bundle) roomInt(t *testing.T, field string) int64 {
	t.Helper()
	return b.roomIntOf(t, evGA, field)
}

// A registration burns its buyer's pass in the step that makes it: the
// pass's reserved units become the registration's claim (reserved + sold
// never passes the capacity), and the pass works once.
func TestARegistrationBurnsItsPassOnce(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "2", "ev", "2")
	_, _, p := roomOf(t, b, 2, time.Minute, "ann@x.test", 2)
	if got := b.roomInt(t, "resv"); got != 2 {
		t.Fatalf("reserved %d, want the pass's 2", got)
	}
	req := gaReq(2, 1000, "ann@x.test")
	req.Pass = &p
	if _, err := b.regs.Register(b.ctx, req); err != nil {
		t.Fatal(err)
	}
	if got, sold := b.roomInt(t, "resv"), b.sold(t, evGA)["ev"]; got != 0 || sold != 2 {
		t.Fatalf("after the registration: reserved %d, sold %d; want 0 and 2", got, sold)
	}
	again := gaReq(1, 1000, "ann@x.test")
	again.Pass = &p
	if _, err := b.regs.Register(b.ctx, again); !errors.Is(err, room.ErrPassUsed) {
		t.Fatalf("the pass again: %v, want QUEUE_PASS_USED", err)
	}
}

// A pass is refused, and nothing is written, for another buyer, more units
// than it covers, and once it lapsed.
func TestAPassIsRefusedBeyondWhatItCovers(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "5", "ev", "5")
	_, _, p := roomOf(t, b, 5, 400*time.Millisecond, "ann@x.test", 1)
	for _, c := range []struct {
		email string
		n     int64
		want  error
	}{
		{"bob@x.test", 1, room.ErrPassBuyer},
		{"ann@x.test", 2, room.ErrPassUnits},
	} {
		req := gaReq(c.n, 1000, c.email)
		req.Pass = &p
		if _, err := b.regs.Register(b.ctx, req); !errors.Is(err, c.want) {
			t.Fatalf("%s for %d: %v, want %v", c.email, c.n, err, c.want)
		}
	}
	if sold := b.sold(t, evGA)["ev"]; sold != 0 {
		t.Fatalf("sold %d after refusals", sold)
	}
	time.Sleep(500 * time.Millisecond)
	req := gaReq(1, 1000, "ann@x.test")
	req.Pass = &p
	if _, err := b.regs.Register(b.ctx, req); !errors.Is(err, room.ErrPassLapsed) {
		t.Fatalf("a lapsed pass: %v, want QUEUE_PASS_EXPIRED", err)
	}
	if sold := b.sold(t, evGA)["ev"]; sold != 0 {
		t.Fatalf("sold %d after a lapsed pass", sold)
	}
}

// A pass is its admission's: after it lapsed and its place was admitted
// again, the old pass is refused as lapsed and the new one works, once.
func TestAnOldPassOfAPlaceAdmittedAgainIsLapsed(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "5", "ev", "5")
	rs, cfg, old := roomOf(t, b, 5, 300*time.Millisecond, "ann@x.test", 1)
	time.Sleep(400 * time.Millisecond)
	if err := rs.Admit(b.ctx, cfg, evGA); err != nil { // the old pass lapses
		t.Fatal(err)
	}
	cfg.PassTTL = time.Minute
	j, err := rs.Join(b.ctx, cfg, room.JoinRequest{EventID: evGA, Email: "ann@x.test", Quantity: 1})
	if err != nil || j.State != room.Admitted || j.QueueID != old.QueueID {
		t.Fatalf("joining again: %+v %v, want the same place admitted again", j, err)
	}
	req := gaReq(1, 1000, "ann@x.test")
	req.Pass = &old
	if _, err := b.regs.Register(b.ctx, req); !errors.Is(err, room.ErrPassLapsed) {
		t.Fatalf("the old pass: %v, want QUEUE_PASS_EXPIRED", err)
	}
	fresh, err := rs.CheckPass(evGA, j.Pass, "ann@x.test")
	if err != nil {
		t.Fatal(err)
	}
	req.Pass = &fresh
	if _, err := b.regs.Register(b.ctx, req); err != nil {
		t.Fatalf("the new pass: %v", err)
	}
	if _, err := b.regs.Register(b.ctx, req); !errors.Is(err, room.ErrPassUsed) {
		t.Fatalf("the used pass again: %v, want QUEUE_PASS_USED", err)
	}
}

// A payment that comes after its registration lapsed takes its units back
// only from what the room's live passes do not hold: the buyer the room
// admitted meanwhile keeps the unit, and the late payment is refunded.
func TestALatePaymentDoesNotTakeAUnitAPassHolds(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "1", "ev", "1")
	rs, cfg, p := roomOf(t, b, 1, time.Minute, "ann@x.test", 1)
	req := gaReq(1, 1000, "ann@x.test")
	req.Pass = &p
	reg, err := b.regs.Register(b.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	b.opened(t, reg.ID, "cs_a")
	b.expireNow(t, reg.ID) // the unit goes back to the line
	bob, err := rs.Join(b.ctx, cfg, room.JoinRequest{EventID: evGA, Email: "bob@x.test", Quantity: 1})
	if err != nil || bob.State != room.Admitted {
		t.Fatalf("bob: %+v %v, want admitted with the unit that came back", bob, err)
	}
	out, err := pay(b, reg.ID, "cs_a", 1000)
	if err != nil || out.Status != StatusRefundRequired || out.RefundReason != "sold_out" {
		t.Fatalf("ann's late payment: %+v %v, want a refund (sold_out)", out, err)
	}
	bp, err := rs.CheckPass(evGA, bob.Pass, "bob@x.test")
	if err != nil {
		t.Fatal(err)
	}
	breq := gaReq(1, 1000, "bob@x.test")
	breq.Pass = &bp
	if _, err := b.regs.Register(b.ctx, breq); err != nil {
		t.Fatalf("bob, admitted with a live pass: %v", err)
	}
}
