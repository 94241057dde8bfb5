package rebuild_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// counters reads what capacity depends on, per event: capacities, sold
// counts, booked seats and used discount codes.
func counters(t *testing.T, s *servertest.Server, events ...string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	ctx := context.Background()
	for _, ev := range events {
		for name, key := range map[string]string{"cap": s.Space.Caps(ev), "sold": s.Space.Sold(ev),
			"booked": s.Space.Booked(ev), "dcused": s.Space.DiscountUsed(ev)} {
			m, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(key).Build()).AsStrMap()
			if err != nil {
				t.Fatal(err)
			}
			out[ev+" "+name] = m
		}
	}
	return out
}

func equalCounters(t *testing.T, got, want map[string]map[string]string) {
	t.Helper()
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", k, g, w)
			continue
		}
		for f, v := range w {
			if g[f] != v {
				t.Errorf("%s: got %v, want %v", k, g, w)
				break
			}
		}
	}
}

type hold struct {
	HoldToken string `json:"holdToken"`
}

// sellEverything sells one of each kind of thing the catalog has and
// returns a paid order (its id, amount and reference) and a pending one.
func sellEverything(t *testing.T, s *servertest.Server) (paid servertest.Reserved, paidRef, paidKey string, pending servertest.Reserved) {
	t.Helper()
	buy := func(event string, body map[string]any) (servertest.Reserved, string, string) {
		key := servertest.NewKey()
		r := s.ReserveWithKey(t, "a", event, key, body)
		if r.Status != 200 {
			t.Fatalf("reserve on %s: %s", event, r)
		}
		var o servertest.Reserved
		r.Decode(t, &o)
		ref := "psp-" + o.OrderID
		if c := s.Confirm(t, "a", o.OrderID, o.Amount, ref); c.Status != 200 {
			t.Fatalf("confirm on %s: %s", event, c)
		}
		return o, ref, key
	}
	paid, paidRef, paidKey = buy("ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 2,
		"extras": []map[string]any{{"extraId": "ex_parking", "quantity": 1}}, "discountCode": "ONCE"})
	buy("ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 3})
	buy("ev_show", map[string]any{"selectedTicketId": "tk", "quantity": 2, "showingId": "sh_1"})
	tr := s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold-token", servertest.Keyed("a"), nil)
	var tok hold
	tr.Decode(t, &tok)
	if r := s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold", servertest.Keyed("a"),
		map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"A-1", "A-2"}}); r.Status != 200 {
		t.Fatalf("hold: %s", r)
	}
	buy("ev_seated", map[string]any{"seatLabels": []string{"A-1", "A-2"}, "seatHoldToken": tok.HoldToken,
		"gaSelections": []map[string]any{{"areaId": "floor", "quantity": 2}}, "tableSelections": []map[string]any{{"tableId": "T1"}}})
	pending = s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 1})
	return paid, paidRef, paidKey, pending
}

// loseAllButStreams deletes every key of the server's space except the
// paid streams and the orders their entries name: Redis lost its catalog,
// counters, other orders and markers, and a paid order that Postgres has
// not got yet is only on its stream (as when Postgres was behind).
func loseAllButStreams(t *testing.T, s *servertest.Server) {
	t.Helper()
	ctx := context.Background()
	keep := map[string]bool{}
	for p := range keys.Partitions {
		es, err := s.Redis.Do(ctx, s.Redis.B().Xrange().Key(s.Space.Paid(p)).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if okey, ok := s.Space.Order(e.FieldValues["order"]); ok {
				keep[okey] = true
			}
		}
	}
	ks := append(redistest.Keys(t, s.Redis, s.Space), s.Space.State())
	for p := range keys.Partitions {
		ks = append(ks, s.Space.Live(p))
	}
	for _, k := range ks {
		if strings.HasSuffix(k, ":paid") || keep[k] {
			continue
		}
		if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

func waitStatus(t *testing.T, s *servertest.Server, want redisstate.Status) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Monitor.View().Status != want {
		if time.Now().After(deadline) {
			t.Fatalf("Redis state is %s after 10s, want %s", s.Monitor.View().Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Redis that lost its state is noticed, sells nothing and answers no
// 401, and a rebuild gives back exactly what capacity depends on: the
// catalog, capacities, sold counts of every level, booked seats and used
// codes, counting the paid orders Postgres has and the one only the stream
// has, each once. Afterwards paid orders replay, the lost pending order is
// failed, and the event sells exactly what is left.
func TestRebuildRestoresWhatCapacityDependsOn(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	paid, paidRef, paidKey, pending := sellEverything(t, s)
	s.Drain(t)
	// One more paid order that only the stream holds when Redis is lost.
	late := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1})
	if c := s.Confirm(t, "a", late.OrderID, late.Amount, "psp-late"); c.Status != 200 {
		t.Fatalf("confirm: %s", c)
	}
	events := []string{"ev_ga", "ev_seated", "ev_show"}
	before := counters(t, s, events...)

	loseAllButStreams(t, s)
	waitStatus(t, s, redisstate.Lost)
	if r := s.Do(t, "GET", "/v1/channel/events", servertest.Keyed("a"), nil); r.Status != 503 || r.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("catalog while Redis' state is lost: %s, want 503 SERVICE_UNAVAILABLE (never 401)", r)
	}
	if r := s.Confirm(t, "a", pending.OrderID, pending.Amount, "psp-pending"); r.Status != 503 || r.Code != "ACCRUAL_FAILED_RETRY" {
		t.Fatalf("confirm while Redis' state is lost: %s, want 503 ACCRUAL_FAILED_RETRY", r)
	}
	if r := s.Do(t, "GET", "/readyz", nil, nil); r.Status != 503 || r.Code != "NOT_READY" {
		t.Fatalf("readyz while Redis' state is lost: %s", r)
	}

	rep, err := s.Rebuilder.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PaidOrders != 5 || rep.StreamOnly != 1 || rep.BookedSeats != 2 || rep.DiscountCodes != 1 || rep.Orders != 5 || rep.IdempotencyKeys != 5 {
		t.Errorf("report %+v: want 5 paid orders (1 only on the stream), 2 booked seats, 1 used code, 5 orders and keys restored", rep)
	}
	equalCounters(t, counters(t, s, events...), before)
	waitStatus(t, s, redisstate.Current)

	// Paid orders replay; the retried reserve of one replays it too.
	if r := s.Confirm(t, "a", paid.OrderID, paid.Amount, paidRef); r.Status != 200 || r.Raw["data"].(map[string]any)["duplicate"] != true {
		t.Fatalf("confirm replay of a paid order after the rebuild: %s", r)
	}
	r := s.ReserveWithKey(t, "a", "ev_ga", paidKey, map[string]any{"selectedTicketId": "tk_a", "quantity": 2,
		"extras": []map[string]any{{"extraId": "ex_parking", "quantity": 1}}, "discountCode": "ONCE"})
	var again servertest.Reserved
	if r.Status == 200 {
		r.Decode(t, &again)
	}
	if r.Status != 200 || !again.Duplicate || again.OrderID != paid.OrderID {
		t.Fatalf("retried reserve of a paid order after the rebuild: %s, want a replay of %s", r, paid.OrderID)
	}
	// The pending order is gone: refund, never 404.
	c := s.Confirm(t, "a", pending.OrderID, pending.Amount, "psp-pending")
	if c.Status != 409 || c.Code != "CONFIRM_FAILED" || c.Reason != "lost" || c.Raw["refundRequired"] != true {
		t.Fatalf("confirm of a lost pending order: %s, want 409 CONFIRM_FAILED lost refundRequired", c)
	}
	if st := s.Status(t, "a", pending.OrderID); st.Status != 200 || st.Raw["data"].(map[string]any)["status"] != "failed" {
		t.Fatalf("status of a lost pending order: %s, want failed", st)
	}
	// ev_ga holds 10 and sold 6: four more sell, the fifth does not.
	for i := range 4 {
		o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1})
		if c := s.Confirm(t, "a", o.OrderID, o.Amount, fmt.Sprint("psp-after-", i)); c.Status != 200 {
			t.Fatalf("confirm %d after the rebuild: %s", i, c)
		}
	}
	if r := s.Reserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1}); r.Status != 409 || r.Code != "EVENT_SOLD_OUT" {
		t.Fatalf("reserve past the capacity after the rebuild: %s, want EVENT_SOLD_OUT", r)
	}
	if r := s.Reserve(t, "a", "ev_show", map[string]any{"selectedTicketId": "tk", "quantity": 1, "showingId": "sh_1"}); r.Status != 409 {
		t.Fatalf("reserve past the showing's capacity after the rebuild: %s, want 409", r)
	}
	if r := s.Do(t, "POST", "/v1/channel/events/ev_ga/quote", servertest.Keyed("a"),
		map[string]any{"selectedTicketId": "tk_a", "discountCode": "ONCE"}); r.Code != "INVALID_DISCOUNT_CODE" {
		t.Fatalf("quote of a used-up code after the rebuild: %s", r)
	}
	tr := s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold-token", servertest.Keyed("a"), nil)
	var tok hold
	tr.Decode(t, &tok)
	if r := s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold", servertest.Keyed("a"),
		map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"A-2"}}); r.Status != 409 || r.Code != "SEAT_CONFLICT" {
		t.Fatalf("hold of a booked seat after the rebuild: %s, want SEAT_CONFLICT", r)
	}

	// Rebuilding again changes nothing.
	s.Drain(t)
	before = counters(t, s, events...)
	if _, err := s.Rebuilder.Run(ctx); err != nil {
		t.Fatal(err)
	}
	equalCounters(t, counters(t, s, events...), before)
}

// A Redis that came back from an older snapshot (its sequence number went
// back, and its sold counts with it) is noticed and rebuilt by ticketd
// itself: the sold counts are Postgres' again, and no node sells from the
// old ones meanwhile.
func TestRolledBackRedisIsRebuiltByItself(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{})
	ctx := context.Background()
	for i := range 3 {
		o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 1})
		if c := s.Confirm(t, "a", o.OrderID, o.Amount, fmt.Sprint("psp-", i)); c.Status != 200 {
			t.Fatalf("confirm: %s", c)
		}
	}
	s.Drain(t)
	before := counters(t, s, "ev_ga")
	gen := s.Monitor.View().Gen

	// The snapshot: fewer sold, a lower sequence number, the same generation.
	rc := s.Redis
	for seq := int64(0); seq < 5; time.Sleep(10 * time.Millisecond) {
		var err error
		if seq, err = rc.Do(ctx, rc.B().Hget().Key(s.Space.State()).Field("seq").Build()).AsInt64(); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []rueidis.Completed{
		rc.B().Hset().Key(s.Space.Sold("ev_ga")).FieldValue().FieldValue("ev", "1").FieldValue("t:tk_a", "1").Build(),
		rc.B().Hset().Key(s.Space.State()).FieldValue().FieldValue("seq", "0").Build(),
	} {
		if err := rc.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	waitNewGeneration(t, s, gen)
	equalCounters(t, counters(t, s, "ev_ga"), before)
	var gen2 string
	var seq int64
	if err := s.Pool.QueryRow(ctx, `SELECT gen, seq FROM redis_generations WHERE key_prefix = $1`, s.Space.Prefix).Scan(&gen2, &seq); err != nil {
		t.Fatal(err)
	}
	if gen2 != s.Monitor.View().Gen {
		t.Fatalf("Postgres records generation %s, Redis serves %s", gen2, s.Monitor.View().Gen)
	}
	// ev_ga: capacity 10, tk_a 5 of which 3 sold: two more tk_a, no third.
	for i := range 2 {
		o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 1})
		if c := s.Confirm(t, "a", o.OrderID, o.Amount, fmt.Sprint("psp-after-", i)); c.Status != 200 {
			t.Fatalf("confirm: %s", c)
		}
	}
	if r := s.Reserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 1}); r.Code != "TICKET_SOLD_OUT" {
		t.Fatalf("reserve past tk_a's capacity: %s, want TICKET_SOLD_OUT", r)
	}
}

// waitNewGeneration waits until the node's state is current under a
// generation other than gen: a rebuild ran and published.
func waitNewGeneration(t *testing.T, s *servertest.Server, gen string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := s.Monitor.View()
		if v.Status == redisstate.Current && v.Gen != gen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new generation within 15s: state %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A rebuild that stopped sales and then died (ticketctl killed, Postgres
// gone in the middle of the read) leaves the state "rebuilding" with
// nobody at work: automatic recovery finishes it once the dead rebuild's
// lock is gone, and sales resume with the counts intact.
func TestRebuildThatDiedIsFinishedByRecovery(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{})
	ctx := context.Background()
	o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 2})
	if c := s.Confirm(t, "a", o.OrderID, o.Amount, "psp-1"); c.Status != 200 {
		t.Fatalf("confirm: %s", c)
	}
	before := counters(t, s, "ev_ga")
	gen := s.Monitor.View().Gen

	// What a rebuild does first, and then nothing more.
	if err := redisstate.MarkRebuilding(ctx, s.Redis, s.Space); err != nil {
		t.Fatal(err)
	}
	waitNewGeneration(t, s, gen)
	equalCounters(t, counters(t, s, "ev_ga"), before)
	if c := s.Confirm(t, "a", o.OrderID, o.Amount, "psp-1"); c.Status != 200 {
		t.Fatalf("confirm replay after the recovery: %s", c)
	}
}

// A Redis that came back from a snapshot taken while an Idempotency-Key
// was claimed by an earlier attempt (one that then failed and gave it
// back) still holds that claim; the key's paid order is in Postgres. The
// rebuild points the key at the paid order, so a retried reserve replays
// it instead of making a second order.
func TestRebuildPointsAKeyAtItsPaidOrder(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	key := servertest.NewKey()
	body := map[string]any{"selectedTicketId": "tk_a", "quantity": 1}
	r := s.ReserveWithKey(t, "a", "ev_ga", key, body)
	var paid servertest.Reserved
	r.Decode(t, &paid)
	if c := s.Confirm(t, "a", paid.OrderID, paid.Amount, "psp-1"); c.Status != 200 {
		t.Fatalf("confirm: %s", c)
	}
	s.Drain(t)

	// The old snapshot's claim: the same caller and request, an order of
	// the attempt that failed.
	idem := s.Space.Idempotency(key)
	rec, err := s.Redis.Do(ctx, s.Redis.B().Get().Key(idem).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	earlier := orders.NewOrderID("ev_ga")
	stale := strings.TrimSuffix(rec, paid.OrderID) + earlier
	if err := s.Redis.Do(ctx, s.Redis.B().Set().Key(idem).Value(stale).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuilder.Run(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, redisstate.Current)
	r = s.ReserveWithKey(t, "a", "ev_ga", key, body)
	var again servertest.Reserved
	if r.Status == 200 {
		r.Decode(t, &again)
	}
	if r.Status != 200 || !again.Duplicate || again.OrderID != paid.OrderID {
		t.Fatalf("retried reserve after the rebuild: %s, want a replay of %s", r, paid.OrderID)
	}
}
