package registrations

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/room"
	"github.com/ticketd/ticketd/inventory/roompass"
	"github.com/ticketd/ticketd/inventory/seats"
)

// seatedRoom is a room of stock seats on the bundle's seated event, its
// passes lasting passTTL, 2 seats a buyer, T0 passed; ev is the event with
// it (seats.Engine takes the room from the event).
func seatedRoom(t *testing.T, b *bundle, stock int64, passTTL time.Duration) (*room.Service, *catalog.Room, *catalog.CompiledEvent) {
	t.Helper()
	rs := &room.Service{Redis: b.rc, Space: b.sp, Key: []byte("room-key")}
	cfg := &catalog.Room{OpensAt: time.Now().Add(-time.Hour), SalesStartAt: time.Now().Add(-time.Minute),
		PassTTL: passTTL, PerBuyer: 2, Stock: stock, Seated: true}
	ev := *b.seated
	ev.Room = cfg
	b.caps(t, evSeated, "ev", "20", "sf", strconv.FormatInt(stock, 10))
	return rs, cfg, &ev
}

func (b *bundle) joinRoom(t *testing.T, rs *room.Service, cfg *catalog.Room, email string, n int64) room.Joined {
	t.Helper()
	j, err := rs.Join(b.ctx, cfg, room.JoinRequest{EventID: evSeated, Email: email, Quantity: n})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// tickAfter waits d, then runs the room's admission step, as a node's tick
// does: lapsed passes and tokens give their units back, the line moves.
func (b *bundle) tickAfter(t *testing.T, rs *room.Service, cfg *catalog.Room, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if err := rs.Admit(b.ctx, cfg, evSeated); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) placeState(t *testing.T, rs *room.Service, cfg *catalog.Room, j room.Joined) room.Status {
	t.Helper()
	st, err := rs.Status(b.ctx, cfg, evSeated, j.QueueID)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// On a seated event a pass becomes a hold token, which keeps the pass's
// units reserved past the pass's own expiry for as long as it lives (an
// extend included), holds at most those units, and gives them back to the
// line when it lapses; a token made without a pass holds nothing.
func TestASeatedPassTokenReservesWhileItLives(t *testing.T) {
	b := setup(t)
	b.seats.TTL = 900 * time.Millisecond
	rs, cfg, ev := seatedRoom(t, b, 4, 300*time.Millisecond)
	ann := b.joinRoom(t, rs, cfg, "ann@x.test", 2)
	bob := b.joinRoom(t, rs, cfg, "bob@x.test", 2)
	cat := b.joinRoom(t, rs, cfg, "cat@x.test", 2)
	if ann.State != room.Admitted || bob.State != room.Admitted || cat.State != room.Waiting {
		t.Fatalf("4 seats for 2+2+2: %s %s %s", ann.State, bob.State, cat.State)
	}

	plain := seats.NewToken()
	if _, err := b.seats.CreateToken(b.ctx, evSeated, plain); err != nil {
		t.Fatal(err)
	}
	if _, err := b.seats.Hold(b.ctx, ev, plain, []string{"C-9"}); !errors.Is(err, roompass.ErrRequired) {
		t.Fatalf("a token made without a pass: %v, want QUEUE_REQUIRED", err)
	}

	tok, p := b.passToken(t, rs, ann)
	if _, err := b.seats.Hold(b.ctx, ev, tok, []string{"C-1", "C-2", "C-3"}); err == nil {
		t.Fatal("the pass's token held 3 seats on a pass for 2")
	}
	if _, err := b.seats.Hold(b.ctx, ev, tok, []string{"C-1", "C-2"}); err != nil {
		t.Fatal(err)
	}

	// both passes lapse (300 ms); ann's token (900 ms) keeps her 2 units:
	// cat gets bob's, and dan waits
	b.tickAfter(t, rs, cfg, 400*time.Millisecond)
	if st := b.placeState(t, rs, cfg, cat); st.State != room.Admitted {
		t.Fatalf("cat once bob's pass lapsed: %+v", st)
	}
	dan := b.joinRoom(t, rs, cfg, "dan@x.test", 1)
	if dan.State != room.Waiting {
		t.Fatalf("dan while ann's token and cat's pass hold all 4: %+v", dan)
	}
	if _, err := b.seats.Extend(b.ctx, evSeated, tok); err != nil { // now + 900 ms
		t.Fatal(err)
	}

	// cat's pass lapses; ann's token outlives its first 900 ms, extended:
	// dan gets 1 of cat's 2 units, and ann's 2 stay reserved
	b.tickAfter(t, rs, cfg, 700*time.Millisecond)
	if st := b.placeState(t, rs, cfg, dan); st.State != room.Admitted {
		t.Fatalf("dan once cat's pass lapsed: %+v", st)
	}
	if st := b.placeState(t, rs, cfg, ann); st.State != room.Admitted || !st.PassUsed {
		t.Fatalf("ann while her extended token lives: %+v, want admitted, her pass used", st)
	}
	if got := b.roomIntOf(t, evSeated, "resv"); got != 3 {
		t.Fatalf("reserved %d, want ann's token's 2 and dan's pass's 1", got)
	}

	// the token lapses: its units leave the reservation, its pass is lapsed
	b.tickAfter(t, rs, cfg, 700*time.Millisecond)
	if st := b.placeState(t, rs, cfg, ann); st.State != room.Expired {
		t.Fatalf("ann once her token lapsed: %+v, want expired", st)
	}
	if got := b.roomIntOf(t, evSeated, "resv"); got > 1 {
		t.Fatalf("reserved %d after ann's token lapsed, want dan's 1 at most", got)
	}
	if _, err := b.seats.Hold(b.ctx, ev, tok, []string{"C-3"}); !errors.Is(err, seats.ErrHoldExpired) {
		t.Fatalf("the lapsed token: %v, want HOLD_EXPIRED", err)
	}
	if _, err := b.seats.CreatePassToken(b.ctx, evSeated, tok, holds.Client{}, &p); !errors.Is(err, roompass.ErrLapsed) {
		t.Fatalf("the pass again after its token lapsed: %v, want QUEUE_PASS_EXPIRED", err)
	}
	// a pass whose token lapsed counts as lapsed, not used: nothing bought
	if st, err := rs.Stats(b.ctx, evSeated); err != nil || st.Used != 0 {
		t.Fatalf("stats %+v (%v), want no pass used", st, err)
	}
}

// passToken makes the hold token of j's pass (seats.Engine.CreatePassToken,
// as hold-token does).
func (b *bundle) passToken(t *testing.T, rs *room.Service, j room.Joined) (string, roompass.Pass) {
	t.Helper()
	p, err := rs.CheckPass(evSeated, j.Pass, "")
	if err != nil {
		t.Fatal(err)
	}
	tok := rs.PassToken(evSeated, p)
	if _, err := b.seats.CreatePassToken(b.ctx, evSeated, tok, holds.Client{}, &p); err != nil {
		t.Fatal(err)
	}
	return tok, p
}

// A registration through a pass's token for some of its seats uses the
// place (its units leave the reservation, as sold or given back) and lets
// the token's other seats go in the same step: none stays held for nobody
// while the room admits the next buyer to it. The token holds no more.
func TestARegistrationOfSomeOfAPassTokensSeatsLetsTheRestGo(t *testing.T) {
	b := setup(t)
	rs, cfg, ev := seatedRoom(t, b, 2, time.Minute)
	ann := b.joinRoom(t, rs, cfg, "ann@x.test", 2)
	tok, _ := b.passToken(t, rs, ann)
	if _, err := b.seats.Hold(b.ctx, ev, tok, []string{"C-1", "C-2"}); err != nil {
		t.Fatal(err)
	}
	req := Request{EventID: evSeated, TenantID: tenant, Quote: seatQuote("C-1"), HoldToken: tok,
		Buyer: Buyer{Email: "ann@x.test"}, PassInHold: true}
	if _, err := b.regs.Register(b.ctx, req); err != nil {
		t.Fatal(err)
	}
	if resv, sold := b.roomIntOf(t, evSeated, "resv"), b.sold(t, evSeated)["sf"]; resv != 0 || sold != 1 {
		t.Fatalf("reserved %d, sold %d; want 0 and the registration's 1", resv, sold)
	}
	if _, err := b.seats.Hold(b.ctx, ev, tok, []string{"C-3"}); !errors.Is(err, roompass.ErrUsed) {
		t.Fatalf("the used token holds again: %v, want QUEUE_PASS_USED", err)
	}
	// the room's one unit left goes to bob, who finds C-2 free
	bob := b.joinRoom(t, rs, cfg, "bob@x.test", 1)
	if bob.State != room.Admitted {
		t.Fatalf("bob: %+v, want admitted to the unit left", bob)
	}
	bobTok, _ := b.passToken(t, rs, bob)
	if _, err := b.seats.Hold(b.ctx, ev, bobTok, []string{"C-2"}); err != nil {
		t.Fatalf("C-2, which ann's registration let go: %v", err)
	}
	st, err := rs.Stats(b.ctx, evSeated)
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 1 || st.Lapsed != 0 {
		t.Fatalf("stats %+v, want one pass used (the registration), none lapsed", st)
	}
}

func (b *bundle) roomIntOf(t *testing.T, ev, field string) int64 {
	t.Helper()
	n, err := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.Room(ev)).Field(field).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
