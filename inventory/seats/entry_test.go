package seats

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// seat is the holder of label's live entry in ev's seat holds or order
// seats hash, at Redis' time ("" for a free seat).
func (b *bundle) seat(t *testing.T, ev, label string) string {
	t.Helper()
	v, now := b.entry(t, ev, label)
	if h := HolderAt(v, now); h != "" {
		return h
	}
	ord, err := b.rc.Do(b.ctx, b.rc.B().Hget().Key(b.sp.OrderSeats(ev)).Field(label).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return HolderAt(ord, now)
}

// seatExp is the expiry (ms) of label's entry, 0 when it has none.
func (b *bundle) seatExp(t *testing.T, ev, label string) int64 {
	t.Helper()
	v, _ := b.entry(t, ev, label)
	_, exp, _ := strings.Cut(v, " ")
	ms, _ := strconv.ParseInt(exp, 10, 64)
	return ms
}

// entry reads label's raw entry in the seat holds hash and Redis' time (ms).
func (b *bundle) entry(t *testing.T, ev, label string) (string, int64) {
	t.Helper()
	res := b.rc.DoMulti(b.ctx, b.rc.B().Hget().Key(b.sp.SeatHolds(ev)).Field(label).Build(), b.rc.B().Time().Build())
	v, err := res[0].ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	now, err := redisNow(res[1])
	if err != nil {
		t.Fatal(err)
	}
	return v, now
}

// setSeat gives label to holder (a token "h:...", or an order "o:...") for
// a minute, as a script would: an order takes it from the token holding it.
func (b *bundle) setSeat(t *testing.T, ev, label, holder string) {
	t.Helper()
	cmds := rueidis.Commands{b.setSeatCmd(ev, label, holder)}
	if strings.HasPrefix(holder, "o:") {
		cmds = append(cmds, b.rc.B().Hdel().Key(b.sp.SeatHolds(ev)).Field(label).Build())
	}
	for _, r := range b.rc.DoMulti(b.ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// freeSeat deletes label's entries, whoever holds it.
func (b *bundle) freeSeat(ev, label string) {
	b.rc.DoMulti(b.ctx, b.rc.B().Hdel().Key(b.sp.SeatHolds(ev)).Field(label).Build(),
		b.rc.B().Hdel().Key(b.sp.OrderSeats(ev)).Field(label).Build())
}

func (b *bundle) setSeatCmd(ev, label, holder string) rueidis.Completed {
	key := b.sp.SeatHolds(ev)
	if strings.HasPrefix(holder, "o:") {
		key = b.sp.OrderSeats(ev)
	}
	return b.rc.B().Hset().Key(key).FieldValue().FieldValue(label, HoldEntry(holder, time.Now().Add(time.Minute))).Build()
}

// A hold that timed out leaves its entries in the event's seat holds hash
// until a script meets them (Redis 7.0 has no expiry per field): its seats
// count as free at once, for availability, best-available and a new hold,
// and the scripts that read an expired entry delete it.
func TestExpiredHoldEntryIsFreeAndRemoved(t *testing.T) {
	b := ruleSetup(t)
	ev := b.evs["ev_lenient"]
	b.eng.TTL = 300 * time.Millisecond
	short := b.token(t, ev.ID)
	b.eng.TTL = time.Minute
	long := b.token(t, ev.ID)
	if _, err := b.eng.Hold(b.ctx, ev, short, []string{"A-1", "A-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Hold(b.ctx, ev, long, []string{"A-9", "A-10"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)

	raw := func(l string) string {
		v, _ := b.entry(t, ev.ID, l)
		return v
	}
	// expired, still stored (the hash lives on for the long token's seats)
	for _, l := range []string{"A-1", "A-2"} {
		if b.seat(t, ev.ID, l) != "" || !strings.HasPrefix(raw(l), "h:"+short+" ") {
			t.Fatalf("%s: holder %q, entry %q; want free with the expired entry still there", l, b.seat(t, ev.ID, l), raw(l))
		}
	}
	av, err := b.eng.Availability(b.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(av.Held, []string{"A-9", "A-10"}) {
		t.Fatalf("held %v, want only the live token's", av.Held)
	}
	taken, _, err := b.eng.takenSeats(b.ctx, ev, []*catalog.Row{&ev.SeatMap.Rows[1]}, 10, nil)
	if err != nil || taken[0] || taken[1] || !taken[8] {
		t.Fatalf("best-available reads A-1 %v, A-2 %v, A-9 %v (%v)", taken[0], taken[1], taken[8], err)
	}

	// A hold of A-4 reads its neighbours for the rule:
	// A-2's expired entry goes; A-1, not read, stays until a script meets it.
	other := b.token(t, ev.ID)
	if _, err := b.eng.Hold(b.ctx, ev, other, []string{"A-3", "A-4"}); err != nil {
		t.Fatal(err)
	}
	if v := raw("A-2"); v != "" {
		t.Fatalf("A-2's expired entry %q is still there", v)
	}
	// A new hold of an expired seat takes it.
	if _, err := b.eng.Hold(b.ctx, ev, other, []string{"A-1", "A-2"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"A-1", "A-2"} {
		if v := b.seat(t, ev.ID, l); v != "h:"+other {
			t.Fatalf("%s held by %q, want h:%s", l, v, other)
		}
	}
}
