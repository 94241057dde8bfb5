package registrations

import (
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/seats"
)

// seat is who holds label of ev now ("" free): a registration awaiting
// payment (the registration seats hash), else a live entry of the seat
// holds or order seats hash, at Redis' time.
func (b *bundle) seat(t *testing.T, ev, label string) string {
	t.Helper()
	res := b.rc.DoMulti(b.ctx, b.rc.B().Hget().Key(b.sp.RegSeats(ev)).Field(label).Build(),
		b.rc.B().Hget().Key(b.sp.SeatHolds(ev)).Field(label).Build(),
		b.rc.B().Hget().Key(b.sp.OrderSeats(ev)).Field(label).Build(), b.rc.B().Time().Build())
	var vals [3]string
	for i := range vals {
		v, err := res[i].ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
		vals[i] = v
	}
	if vals[0] != "" {
		return vals[0]
	}
	tm, err := res[3].AsStrSlice()
	if err != nil || len(tm) != 2 {
		t.Fatalf("TIME: %v %v", tm, err)
	}
	s, _ := strconv.ParseInt(tm[0], 10, 64)
	us, _ := strconv.ParseInt(tm[1], 10, 64)
	now := s*1000 + us/1000
	if h := seats.HolderAt(vals[1], now); h != "" {
		return h
	}
	return seats.HolderAt(vals[2], now)
}
