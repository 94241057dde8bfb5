package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func setup(t *testing.T) (*Service, context.Context) {
	rc, space := redistest.New(t)
	return &Service{Redis: rc, Space: space, OrderTTL: time.Minute}, context.Background()
}

func caps(t *testing.T, s *Service, ev string, kv ...string) {
	t.Helper()
	cmd := s.Redis.B().Hset().Key(s.Space.Caps(ev)).FieldValue()
	for i := 0; i < len(kv); i += 2 {
		cmd = cmd.FieldValue(kv[i], kv[i+1])
	}
	if err := s.Redis.Do(context.Background(), cmd.Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

var seq atomic.Int64

func req(ev string, claims map[string]int64) ReserveRequest {
	seq := seq.Add(1)
	return ReserveRequest{EventID: ev, Caller: "ch:c", ChannelID: "c", IdempotencyKey: fmt.Sprint("k", seq, time.Now().UnixNano()),
		Fingerprint: fmt.Sprint("fp", seq), Total: 1000, Claims: claims,
		Record: Record{EventID: ev, Tickets: []Ticket{{Label: "GA"}}}}
}

func code(err error) string {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return fmt.Sprint(err)
}

// A claim is all or nothing across every counter of the order.
func TestConfirmClaimsAllOrNothing(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "10", "t:b", "1", "ev", "100")
	r1, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 2, "t:b": 1, "ev": 3}))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 5, "t:b": 1, "ev": 6}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := confirm(ctx, s, r1.OrderID, "p1"); err != nil {
		t.Fatal(err)
	}
	_, err = confirm(ctx, s, r2.OrderID, "p2")
	if code(err) != "CONFIRM_FAILED" {
		t.Fatalf("want CONFIRM_FAILED, got %v", err)
	}
	sold, _ := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Sold("ev")).Build()).AsIntMap()
	if sold["t:a"] != 2 || sold["t:b"] != 1 || sold["ev"] != 3 {
		t.Fatalf("sold after a failed claim: %v", sold)
	}
	okey, _ := s.Space.Order(r2.OrderID)
	st, _ := s.Redis.Do(ctx, s.Redis.B().Hget().Key(okey).Field("st").Build()).ToString()
	if st != StatusFailed {
		t.Fatalf("failed claim left order %q", st)
	}
	// The paid order is on the stream, once.
	n, _ := s.Redis.Do(ctx, s.Redis.B().Xlen().Key(s.Space.Paid(partitionOf(r1.OrderID))).Build()).AsInt64()
	if n != 1 {
		t.Fatalf("paid stream has %d entries, want 1", n)
	}
	// Confirming again is a duplicate and queues nothing.
	c, err := confirm(ctx, s, r1.OrderID, "p1")
	if err != nil || !c.Duplicate || len(c.Tickets) != 1 || c.Tickets[0].TicketID != r1.OrderID+"-1" {
		t.Fatalf("second confirm: %+v %v", c, err)
	}
	n, _ = s.Redis.Do(ctx, s.Redis.B().Xlen().Key(s.Space.Paid(partitionOf(r1.OrderID))).Build()).AsInt64()
	if n != 1 {
		t.Fatalf("duplicate confirm queued again: %d entries", n)
	}
}

func confirm(ctx context.Context, s *Service, orderID, ref string) (Confirmation, error) {
	return s.Confirm(ctx, ConfirmRequest{ChannelID: "c", OrderID: orderID, Amount: 1000, Reference: ref})
}

// Without a sync worker the paid stream is capped, so it cannot grow
// without bound.
func TestPaidStreamIsCappedWithoutWorker(t *testing.T) {
	s, ctx := setup(t)
	s.StreamCap = 10
	caps(t, s, "ev", "t:a", "1000")
	for i := 0; i < 300; i++ {
		r, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 1}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := confirm(ctx, s, r.OrderID, "p"); err != nil {
			t.Fatal(err)
		}
	}
	// MAXLEN ~ trims whole stream nodes (100 entries by default).
	n, _ := s.Redis.Do(ctx, s.Redis.B().Xlen().Key(s.Space.Paid(keys.Partition("ev"))).Build()).AsInt64()
	if n < 10 || n > 200 {
		t.Fatalf("paid stream holds %d entries, want about 10", n)
	}
}

func partitionOf(id string) int {
	ev, _ := keys.OrderEvent(id)
	return keys.Partition(ev)
}

// A limited discount code is never used more than maxUses times, whatever
// the concurrency; a pending order holds its use until it expires.
func TestDiscountMaxUsesUnderConcurrency(t *testing.T) {
	s, ctx := setup(t)
	// Every reserve below, and the confirm, must run within the TTL on a
	// loaded machine too (at 500 ms an early order could lapse while later
	// ones still reserved, freeing a fourth use).
	s.OrderTTL = 2 * time.Second
	caps(t, s, "ev", "t:a", "1000")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok []Reservation
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req("ev", map[string]int64{"t:a": 1})
			r.DiscountCode, r.DiscountMaxUses = "ONCE3", 3
			res, err := s.Reserve(ctx, r)
			if err != nil {
				if code(err) != "INVALID_DISCOUNT_CODE" {
					t.Errorf("unexpected %v", err)
				}
				return
			}
			mu.Lock()
			ok = append(ok, res)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ok) != 3 {
		t.Fatalf("%d reserves got the code, want 3", len(ok))
	}
	// Pay one; the other two expire and return their uses.
	if _, err := confirm(ctx, s, ok[0].OrderID, "p"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(s.OrderTTL + 300*time.Millisecond) // the expiry is a time (Redis', in the holds' scores)
	got := 0
	for i := 0; i < 5; i++ {
		r := req("ev", map[string]int64{"t:a": 1})
		r.DiscountCode, r.DiscountMaxUses = "ONCE3", 3
		if _, err := s.Reserve(ctx, r); err == nil {
			got++
		}
	}
	if got != 2 {
		t.Fatalf("after expiry %d uses were free again, want 2", got)
	}
}

// An event's discount holds of every code share two keys (lib/cart): a
// code counts only its own live holds, an expired hold stops counting at
// once and is dropped by the next hold's script, and the keys are gone
// with the last hold.
func TestDiscountHoldsCountPerCode(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "100")
	withCode := func(c string) ReserveRequest {
		r := req("ev", map[string]int64{"t:a": 1})
		r.DiscountCode, r.DiscountMaxUses = c, 1
		return r
	}
	held := func() map[string]string {
		m, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.DiscountHeld("ev")).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	s.OrderTTL = 300 * time.Millisecond
	for _, c := range []string{"SAVE", "SAVE2"} {
		if _, err := s.Reserve(ctx, withCode(c)); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if _, err := s.Reserve(ctx, withCode("SAVE")); code(err) != "INVALID_DISCOUNT_CODE" {
		t.Fatalf("a second use of SAVE: %v", err)
	}
	time.Sleep(s.OrderTTL + 200*time.Millisecond) // the holds' scores are Redis' time
	if left, err := s.DiscountLeft(ctx, "ev", "SAVE", 1); err != nil || left != 1 {
		t.Fatalf("SAVE left after its hold expired: %d %v", left, err)
	}
	s.OrderTTL = time.Minute
	r, err := s.Reserve(ctx, withCode("SAVE"))
	if err != nil {
		t.Fatalf("SAVE after its hold expired: %v", err)
	}
	if m := held(); len(m) != 1 || m["SAVE"] != "1" {
		t.Fatalf("held counts after the expired holds were dropped: %v", m)
	}
	if _, err := confirm(ctx, s, r.OrderID, "p"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{s.Space.DiscountHolds("ev"), s.Space.DiscountHeld("ev")} {
		if n, _ := s.Redis.Do(ctx, s.Redis.B().Exists().Key(k).Build()).AsInt64(); n != 0 {
			t.Fatalf("%s stays after the last hold was settled", k)
		}
	}
	if _, err := s.Reserve(ctx, withCode("SAVE")); code(err) != "INVALID_DISCOUNT_CODE" {
		t.Fatalf("SAVE after its one use was paid: %v", err)
	}
}

// A key claimed by an attempt that failed is released, so a retry runs again.
func TestFailedReserveReleasesIdempotencyKey(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "0")
	r := req("ev", map[string]int64{"t:a": 1})
	if _, err := s.Reserve(ctx, r); code(err) != "TICKET_SOLD_OUT" {
		t.Fatalf("want TICKET_SOLD_OUT, got %v", err)
	}
	caps(t, s, "ev", "t:a", "1")
	r.CatalogVersion++ // capacities change by a catalog apply, which moves the version
	res, err := s.Reserve(ctx, r)
	if err != nil || res.Duplicate {
		t.Fatalf("retry after failure: %+v %v", res, err)
	}
}

// A GA reserve pipelines its key claim with the order script; on a Redis
// that has not loaded the script (restarted, or its functions flushed) it
// still creates the order, and a replay of it deletes the order it made on
// the way.
func TestPipelinedReserveLoadsTheScriptAndDiscardsReplays(t *testing.T) {
	// A redis-server of the test's own: FUNCTION FLUSH on the shared one
	// would make other packages' tests count a round trip more (the load).
	rc := redistest.StartServer(t).Client(t)
	space := keys.Space{Prefix: "flush:"}
	ctx := context.Background()
	if err := redisstate.Publish(ctx, rc, space, "test"); err != nil {
		t.Fatal(err)
	}
	s := &Service{Redis: rc, Space: space, OrderTTL: time.Minute}
	caps(t, s, "ev", "t:a", "10")
	if err := s.Redis.Do(ctx, s.Redis.B().FunctionFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r := req("ev", map[string]int64{"t:a": 1})
	first, err := s.Reserve(ctx, r)
	if err != nil || first.Duplicate {
		t.Fatalf("reserve after FUNCTION FLUSH: %+v %v", first, err)
	}
	again, err := s.Reserve(ctx, r)
	if err != nil || !again.Duplicate || again.OrderID != first.OrderID {
		t.Fatalf("replay: %+v %v, first %+v", again, err, first)
	}
	orders := 0
	for _, k := range redistest.Keys(t, s.Redis, s.Space) {
		if strings.Contains(k, ":ord:") {
			orders++
		}
	}
	if orders != 1 {
		t.Fatalf("%d order keys after a reserve and its replay, want 1", orders)
	}
}
