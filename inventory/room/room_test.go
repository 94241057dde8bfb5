package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/reply"
)

const ev = "ev_room"

type fixture struct {
	t   *testing.T
	ctx context.Context
	rc  rueidis.Client
	sp  keys.Space
	s   *Service
	// stock is the event's (catalog Room.Stock)
	stock int64
}

// setup is a room service on a fresh key space whose event has capacity
// units ('ev') and nothing sold.
func setup(t *testing.T, capacity int) *fixture {
	t.Helper()
	rc, sp := redistest.New(t)
	f := &fixture{t: t, ctx: context.Background(), rc: rc, sp: sp,
		s: &Service{Redis: rc, Space: sp, Key: []byte("room-test-key")}, stock: int64(capacity)}
	return f
}

func (f *fixture) cmd(args ...string) {
	f.t.Helper()
	if err := f.rc.Do(f.ctx, f.rc.B().Arbitrary(args[0]).Args(args[1:]...).Build()).Error(); err != nil {
		f.t.Fatalf("%v: %v", args, err)
	}
}

func (f *fixture) int(args ...string) int64 {
	f.t.Helper()
	n, err := f.rc.Do(f.ctx, f.rc.B().Arbitrary(args[0]).Args(args[1:]...).Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		f.t.Fatalf("%v: %v", args, err)
	}
	return n
}

// open is a room of the event whose T0 has passed.
func (f *fixture) open(fair bool, ttl time.Duration) *catalog.Room {
	return &catalog.Room{OpensAt: time.Now().Add(-time.Hour), SalesStartAt: time.Now().Add(-time.Minute),
		PassTTL: ttl, PerBuyer: 4, Fair: fair, Stock: f.stock}
}

func (f *fixture) join(cfg *catalog.Room, email string) Joined {
	f.t.Helper()
	j, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: email, Quantity: 1})
	if err != nil {
		f.t.Fatalf("join %s: %v", email, err)
	}
	return j
}

// joinAll joins n buyers, <prefix><i>@x.test in order, and gives their
// poll tokens.
func (f *fixture) joinAll(cfg *catalog.Room, prefix string, n int) []string {
	f.t.Helper()
	tokens := make([]string, n)
	for i := range n {
		tokens[i] = f.join(cfg, fmt.Sprintf("%s%d@x.test", prefix, i)).PollToken
	}
	return tokens
}

func (f *fixture) status(cfg *catalog.Room, qid string) Status {
	f.t.Helper()
	st, err := f.s.Status(f.ctx, cfg, ev, qid)
	if err != nil {
		f.t.Fatalf("status %s: %v", qid, err)
	}
	return st
}

// call is one join of email (from device, "" none) for a batch.
func (f *fixture) call(email, device string) *joinCall {
	bk := orders.BuyerKey(email)
	return &joinCall{args: joinArgs{f.s.placeID(ev, bk), bk, device, "1", ""}}
}

// sendBatch sends calls as one batch of room_join under cfg and fails
// the test on its error.
func (f *fixture) sendBatch(cfg *catalog.Room, calls []*joinCall) {
	f.t.Helper()
	if err := f.s.sendJoins(f.ctx, f.s.joinQueueOf(ev, cfg), calls); err != nil {
		f.t.Fatalf("room_join of %d: %v", len(calls), err)
	}
}

// joinAtOnce joins n buyers, <prefix><i>@x.test, each from a goroutine of
// its own, and runs then on each one's answer there; it fails the test
// on the first error of either once all are done.
func (f *fixture) joinAtOnce(cfg *catalog.Room, prefix string, n int, then func(i int, j Joined) error) {
	f.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: fmt.Sprintf("%s%d@x.test", prefix, i), Quantity: 1})
			if err == nil {
				err = then(i, j)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Fatal(err)
	}
}

// A first-come room admits in the order of arrival, as many places as
// there are units, and tells the rest where they stand.
func TestFifoAdmitsInArrivalOrderUpToTheStock(t *testing.T) {
	f := setup(t, 3)
	cfg := f.open(false, time.Minute)
	var ids []string
	for i := range 5 {
		ids = append(ids, f.join(cfg, fmt.Sprintf("b%d@x.test", i)).QueueID)
	}
	last := f.status(cfg, ids[4])
	if last.State != Waiting || last.Position != 2 || last.Ahead != 1 {
		t.Fatalf("the fifth arrival: %+v, want waiting at position 2", last)
	}
	for i, id := range ids[:3] {
		st := f.status(cfg, id)
		if st.State != Admitted || st.Pass == "" || st.Quantity != 1 {
			t.Fatalf("arrival %d: %+v, want admitted with a pass", i, st)
		}
	}
	if st := f.status(cfg, ids[3]); st.State != Waiting || st.Position != 1 {
		t.Fatalf("the fourth arrival: %+v, want waiting at the head", st)
	}
	if got := f.int("HGET", f.sp.Room(ev), "resv"); got != 3 {
		t.Fatalf("units reserved by passes: %d, want 3", got)
	}
}

// Nobody is admitted before T0, and a fair room's pre-queue is admitted in
// the order of the committed shuffle key: anyone given the key (shown
// after T0) recomputes it. Later arrivals come after the whole pre-queue.
func TestFairRoomAdmitsThePreQueueInTheCommittedOrder(t *testing.T) {
	const n = 30
	f := setup(t, n+5)
	cfg := f.open(true, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour)
	var ids []string
	for i := range n {
		ids = append(ids, f.join(cfg, fmt.Sprintf("b%d@x.test", i)).QueueID)
	}
	if st := f.status(cfg, ids[0]); st.State != Waiting || st.Pass != "" {
		t.Fatalf("before T0: %+v, want waiting without a pass", st)
	}
	if f.int("HGET", f.sp.Room(ev), "admitted") != 0 {
		t.Fatal("a place was admitted before T0")
	}
	// T0 passes; one more buyer arrives after it
	cfg.SalesStartAt = time.Now().Add(-time.Second)
	f.s.AdmitPerCall = 1                       // one a poll: the order of admission is observable
	late := f.join(cfg, "late@x.test").QueueID // behind a line: a join admits nobody
	if f.int("HGET", f.sp.Room(ev), "admitted") != 0 {
		t.Fatal("a join behind a line admitted a place")
	}
	var order []string
	for range n + 1 {
		f.status(cfg, late)
		passes, err := f.rc.Do(f.ctx, f.rc.B().Zrange().Key(f.sp.RoomPasses(ev)).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range passes {
			if !slices.Contains(order, p) {
				order = append(order, p)
			}
		}
	}
	key := f.s.ShuffleKey(ev)
	sum := sha256.Sum256(key)
	if f.s.Commitment(ev) != hex.EncodeToString(sum[:]) {
		t.Fatal("the commitment is not the SHA-256 of the shuffle key")
	}
	want := slices.Clone(ids)
	sort.Slice(want, func(i, j int) bool { return Rank(key, want[i]) < Rank(key, want[j]) })
	want = append(want, late)
	if !slices.Equal(order, want) {
		t.Fatalf("admitted in the order\n%v\nwant the shuffle's, then the late arrival\n%v", order, want)
	}
	if slices.Equal(want[:n], ids) {
		t.Fatal("the shuffle kept the order of arrival: the test shows nothing")
	}
}

// One place per identity: the same e-mail (however spelt) or the same
// device answers the place it joined with.
func TestOnePlacePerIdentity(t *testing.T) {
	f := setup(t, 10)
	cfg := f.open(false, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour)
	first, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "Ann.Lee+vip@gmail.com", Device: "dev-1", Quantity: 2})
	if err != nil || first.Again {
		t.Fatalf("first join: %+v %v", first, err)
	}
	for _, again := range []JoinRequest{
		{EventID: ev, Email: "annlee@gmail.com", Quantity: 1},
		{EventID: ev, Email: "someone-else@x.test", Device: "dev-1", Quantity: 1},
	} {
		j, err := f.s.Join(f.ctx, cfg, again)
		if err != nil || j.QueueID != first.QueueID || !j.Again || j.Quantity != 2 {
			t.Fatalf("join %+v: %+v %v, want the first place again", again, j, err)
		}
	}
	if n := f.int("HLEN", f.sp.RoomPlaces(ev)); n != 1 {
		t.Fatalf("%d places, want 1", n)
	}
}

// The joins of one batch (room_join takes a node's joins of a room
// together) are taken in order: a second join of an e-mail, or of a
// device, the batch placed already answers that place, and the line
// counts each place once.
func TestABatchOfJoinsKeepsOnePlacePerIdentity(t *testing.T) {
	f := setup(t, 10)
	cfg := f.open(false, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour)
	batch := []*joinCall{f.call("ann@x.test", ""), f.call("Ann@x.test", ""), f.call("bob@x.test", "dev-9"),
		f.call("cy@x.test", "dev-9"), f.call("dee@x.test", "")}
	f.sendBatch(cfg, batch)
	want := []struct {
		code reply.Code
		of   int // the join whose place it answers
	}{{reply.OK, 0}, {reply.Exists, 0}, {reply.OK, 2}, {reply.Exists, 2}, {reply.OK, 4}}
	for i, c := range batch {
		code, _ := reply.Of(c.ans)
		qid, _ := eval.Str(c.ans, 1)
		if code != want[i].code || qid != batch[want[i].of].args[0] {
			t.Fatalf("join %d: code %d, place %s; want %d, join %d's place", i, code, qid, want[i].code, want[i].of)
		}
	}
	if n, w := f.int("HLEN", f.sp.RoomPlaces(ev)), f.int("ZCARD", f.sp.RoomLine(ev)); n != 3 || w != 3 ||
		f.int("HGET", f.sp.Room(ev), "wn") != 3 {
		t.Fatalf("%d places, %d in the line; want 3 each, and 3 counted waiting", n, w)
	}
}

// In a batch, a second join of an e-mail the batch placed is answered with
// that e-mail's place even when it comes from a device whose place was
// live before the batch (as a join after the batch would be); and a join
// whose caller stopped waiting before its batch went is not sent.
func TestABatchAnswersTheEmailsPlaceFirstAndDropsAbandonedJoins(t *testing.T) {
	f := setup(t, 10)
	cfg := f.open(false, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour)
	dee, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "dee@x.test", Device: "dev-1", Quantity: 1})
	if err != nil {
		t.Fatal(err)
	}
	batch := []*joinCall{f.call("ann@x.test", ""), f.call("ann@x.test", "dev-1")}
	f.sendBatch(cfg, batch)
	ann := batch[0].args[0]
	for i, c := range batch {
		qid, _ := eval.Str(c.ans, 1)
		if qid != ann {
			t.Fatalf("ann's join %d: place %s; want ann's own %s (not dee's %s)", i, qid, ann, dee.QueueID)
		}
	}
	// abe's caller stops waiting before the join goes; eve's, queued
	// after it, is answered once abe's is dealt with.
	q := f.s.joinQueueOf(ev, cfg)
	gone, cancel := context.WithCancel(f.ctx)
	cancel()
	if err := q.Do(gone, f.call("abe@x.test", "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("abe's abandoned join: %v, want its context's error", err)
	}
	if err := q.Do(f.ctx, f.call("eve@x.test", "")); err != nil {
		t.Fatal(err)
	}
	if n := f.int("HLEN", f.sp.RoomPlaces(ev)); n != 3 {
		t.Fatalf("%d places, want dee's, ann's and eve's (the abandoned join not sent)", n)
	}
}

// A busy room's batch waits longer for joins before T0, when no pass can
// come, than from t0Margin before it (a node's clock may run behind
// Redis'); a room joined one at a time waits none.
func TestABusyRoomWaitsLongerForABatchBeforeT0(t *testing.T) {
	for _, c := range []struct {
		idle, toT0, want time.Duration
	}{
		{time.Millisecond, time.Hour, joinLingerEarly},
		{time.Millisecond, t0Margin + time.Millisecond, joinLingerEarly},
		{time.Millisecond, t0Margin, joinLinger},
		{time.Millisecond, -time.Hour, joinLinger},
		{joinBusy, time.Hour, 0},
		{joinBusy, -time.Hour, 0},
	} {
		if got := lingerOf(c.idle, c.toT0); got != c.want {
			t.Errorf("last batch %v ago, T0 in %v: waits %v, want %v", c.idle, c.toT0, got, c.want)
		}
	}
	if joinLingerEarly <= joinLinger {
		t.Fatalf("before T0 a batch waits %v, from T0 %v: want longer before", joinLingerEarly, joinLinger)
	}
}

// Joins that come together go to Redis in fewer calls than joins, each
// answered with its own place and the places ahead of it.
func TestConcurrentJoinsGoInBatches(t *testing.T) {
	const buyers = 300
	f := setup(t, 10)
	cfg := f.open(false, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour)
	ids := make([]string, buyers)
	ahead := make([]int64, buyers)
	f.joinAtOnce(cfg, "c", buyers, func(i int, j Joined) error { ids[i], ahead[i] = j.QueueID, j.Ahead; return nil })
	if calls := f.s.joinCalls.Load(); calls >= buyers || calls == 0 {
		t.Fatalf("%d joins took %d room_join calls, want fewer", buyers, calls)
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if id != f.s.placeID(ev, orders.BuyerKey(fmt.Sprintf("c%d@x.test", i))) || seen[id] {
			t.Fatalf("join %d answered place %s", i, id)
		}
		seen[id] = true
		// nobody left: the places ahead at the join are those ahead now
		if r := f.int("ZRANK", f.sp.RoomLine(ev), id); ahead[i] != r {
			t.Fatalf("join %d was told %d ahead; %d are", i, ahead[i], r)
		}
	}
	if w := f.int("ZCARD", f.sp.RoomLine(ev)); w != buyers {
		t.Fatalf("%d in the line, want %d", w, buyers)
	}
}

// 1,000 buyers join at once and poll: exactly the units are admitted,
// never more, and the reserve is what the passes hold.
func TestAdmissionNeverPassesTheStockUnderARace(t *testing.T) {
	const capacity, buyers = 50, 1000
	f := setup(t, capacity)
	cfg := f.open(false, time.Minute)
	var mu sync.Mutex
	admitted := map[string]bool{}
	f.joinAtOnce(cfg, "r", buyers, func(_ int, j Joined) error {
		st, err := f.s.Status(f.ctx, cfg, ev, j.QueueID)
		if err != nil {
			return err
		}
		if st.State == Admitted {
			mu.Lock()
			admitted[j.QueueID] = true
			mu.Unlock()
		}
		return nil
	})
	passes := f.int("ZCARD", f.sp.RoomPasses(ev))
	resv := f.int("HGET", f.sp.Room(ev), "resv")
	if passes != capacity || resv != capacity || len(admitted) > capacity {
		t.Fatalf("passes %d, reserved %d, buyers told admitted %d; want %d each at most", passes, resv, len(admitted), capacity)
	}
	if w := f.int("ZCARD", f.sp.RoomLine(ev)); w != buyers-capacity {
		t.Fatalf("%d waiting, want %d", w, buyers-capacity)
	}
}

// A pass that lapses unused gives its units to the head of the line at
// the next poll; its holder is told it expired, and may join again at the
// back.
func TestALapsedPassGoesToTheNextInLine(t *testing.T) {
	f := setup(t, 1)
	cfg := f.open(false, 300*time.Millisecond)
	a := f.join(cfg, "a@x.test").QueueID
	b := f.join(cfg, "b@x.test").QueueID
	if st := f.status(cfg, b); st.State != Waiting || st.Position != 1 {
		t.Fatalf("b: %+v, want waiting at the head", st)
	}
	if st := f.status(cfg, a); st.State != Admitted {
		t.Fatalf("a: %+v, want admitted", st)
	}
	time.Sleep(400 * time.Millisecond)
	if st := f.status(cfg, b); st.State != Admitted {
		t.Fatalf("b after a's pass lapsed: %+v, want admitted", st)
	}
	if st := f.status(cfg, a); st.State != Expired {
		t.Fatalf("a after its pass lapsed: %+v, want expired", st)
	}
	again := f.join(cfg, "a@x.test")
	if again.QueueID != a || again.State != Waiting || again.Position != 1 {
		t.Fatalf("a joining again: %+v, want its place back in the line", again)
	}
}

// When every unit is sold (or held by a buyer paying) and no pass may give
// one back, waiters are told sold out, and a new join is refused; when a
// hold lapses they are told again that a ticket came back.
func TestSoldOutIsToldAndTakenBack(t *testing.T) {
	f := setup(t, 1)
	cfg := f.open(false, time.Minute)
	a := f.join(cfg, "a@x.test").QueueID
	b := f.join(cfg, "b@x.test").QueueID
	if st := f.status(cfg, b); st.State != Waiting || st.Odds != 0 {
		t.Fatalf("b while a's pass is live: %+v, want waiting (a's unit may come back)", st)
	}
	// a registers (its unit becomes sold) and leaves its pass behind
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	if _, err := f.s.Leave(f.ctx, ev, a); err != nil {
		t.Fatal(err)
	}
	// (Leave gave the pass's unit back to resv; sold now holds it)
	if st := f.status(cfg, b); st.State != SoldOut || st.Reason != "sold_out" {
		t.Fatalf("b once the unit is sold: %+v, want sold_out", st)
	}
	_, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "c@x.test", Quantity: 1})
	if !errors.Is(err, ErrSoldOut) {
		t.Fatalf("a join when sold out: %v, want QUEUE_SOLD_OUT", err)
	}
	// a's registration lapses unpaid: the unit is back
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "0")
	if st := f.status(cfg, b); st.State != Admitted {
		t.Fatalf("b once the unit came back: %+v, want admitted", st)
	}
}

// A pass works for the event, the place and the buyer it was given to,
// and nothing else.
func TestPassesAreBoundToEventPlaceAndBuyer(t *testing.T) {
	f := setup(t, 1)
	cfg := f.open(false, time.Minute)
	j := f.join(cfg, "a@x.test")
	st := f.status(cfg, j.QueueID)
	p, err := f.s.CheckPass(ev, st.Pass, "A@X.test")
	if err != nil || p.QueueID != j.QueueID || !p.ExpiresAt.Equal(st.PassExpiresAt) {
		t.Fatalf("the buyer's own pass: %+v %v", p, err)
	}
	bad := []struct{ name, ev, pass, email string }{
		{"another buyer", ev, st.Pass, "b@x.test"},
		{"no buyer (a seated event's hold-token checks a p2 pass so)", ev, st.Pass, ""},
		{"another event", "ev_other", st.Pass, "a@x.test"},
		{"tampered expiry", ev, tamper(st.Pass, 2), "a@x.test"},
		{"tampered place", ev, tamper(st.Pass, 1), "a@x.test"},
		{"not a pass", ev, "hello", "a@x.test"},
		{"empty", ev, "", "a@x.test"},
	}
	for _, c := range bad {
		if _, err := f.s.CheckPass(c.ev, c.pass, c.email); !errors.Is(err, ErrPassBad) {
			t.Errorf("%s: %v, want QUEUE_PASS_INVALID", c.name, err)
		}
	}
	other := &Service{Redis: f.rc, Space: f.sp, Key: []byte("another deployment")}
	if _, err := other.CheckPass(ev, st.Pass, "a@x.test"); !errors.Is(err, ErrPassBad) {
		t.Errorf("a pass of another key: %v", err)
	}
	// a poll token names its place for its event only
	if q, ok := f.s.PlaceOf(ev, j.PollToken); !ok || q.QueueID != j.QueueID || !math.IsNaN(q.Rank) || q.Quantity != 1 {
		t.Fatalf("poll token of an admitted place: %+v %v", q, ok)
	}
	if _, ok := f.s.PlaceOf("ev_other", j.PollToken); ok {
		t.Fatal("a poll token of another event was taken")
	}
	for i := range 5 {
		if _, ok := f.s.PlaceOf(ev, tamper(j.PollToken, i)); ok {
			t.Fatalf("a poll token with part %d changed was taken", i)
		}
	}
}

// tamper changes the i-th dot-separated part of a token.
func tamper(tok string, i int) string {
	parts := strings.Split(tok, ".")
	parts[i] += "x"
	return strings.Join(parts, ".")
}

// Joins are refused before the room opens and for more units than a
// buyer may ask for, each with its code.
func TestJoinRefusals(t *testing.T) {
	f := setup(t, 5)
	cfg := f.open(false, time.Minute)
	cfg.OpensAt = time.Now().Add(time.Hour)
	cfg.SalesStartAt = time.Now().Add(2 * time.Hour)
	_, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "a@x.test", Quantity: 1})
	if code(err) != "QUEUE_NOT_OPEN" {
		t.Fatalf("before it opens: %v", err)
	}
	cfg = f.open(false, time.Minute)
	for _, q := range []int64{0, 5} {
		_, err = f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "a@x.test", Quantity: q})
		if code(err) != "INVALID_QUANTITY" {
			t.Fatalf("quantity %d: %v", q, err)
		}
	}
}

func code(err error) string {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return fmt.Sprint(err)
}

// Stats count what operators watch: arrivals, the line, units reserved
// by live passes, and each pass's fate.
func TestStatsCountThePasses(t *testing.T) {
	f := setup(t, 2)
	cfg := f.open(false, time.Minute)
	a := f.join(cfg, "a@x.test").QueueID
	f.join(cfg, "b@x.test")
	f.join(cfg, "c@x.test")
	if _, err := f.s.Leave(f.ctx, ev, a); err != nil {
		t.Fatal(err)
	}
	st, err := f.s.Stats(f.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	// a left its pass; c is admitted at the next step (no poll yet)
	want := Stats{Arrivals: 3, Waiting: 1, WaitingUnits: 1, Reserved: 1, LivePasses: 1, Admitted: 2}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}

// The nodes' tick admits without anyone polling: a pass that lapses goes
// to the next in line within a tick, from T0 on.
func TestRunAdmitsWithoutPolls(t *testing.T) {
	f := setup(t, 1)
	ttl := int64(1) // seconds, the catalog's unit
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: "t1", Events: []catalog.Event{{ID: ev, Status: catalog.StatusOnSale,
		Storefront: true, Tickets: []catalog.Ticket{{ID: "tk", Name: "T", Price: 100, Capacity: 1}},
		WaitingRoom: &catalog.WaitingRoom{OpensAt: time.Now().Add(-time.Hour).Format(time.RFC3339),
			SalesStartAt: time.Now().Add(-time.Minute).Format(time.RFC3339), PassTTL: &ttl, Mode: catalog.RoomModeFIFO}}}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := snap.Events[ev].Room
	if cfg == nil || cfg.Stock != 1 || cfg.PassTTL != time.Second {
		t.Fatalf("compiled room %+v", cfg)
	}
	a := f.join(cfg, "a@x.test")
	b := f.join(cfg, "b@x.test")
	if a.State != Admitted || b.State != Waiting {
		t.Fatalf("a %s, b %s: want admitted and waiting", a.State, b.State)
	}
	ctx, stop := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.s.Run(ctx, 50*time.Millisecond, func() *catalog.Snapshot { return snap }) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := f.rc.Do(f.ctx, f.rc.B().Hget().Key(f.sp.RoomPlaces(ev)).Field(b.QueueID).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(v, "a ") {
			break // admitted by the tick: nobody polled
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's place is %q 5 s after a's pass lapsed: the tick admitted nobody", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Before T0 nobody can be admitted, so a room's steps there (each lists
// the line's head, which shuffled joins keep changing) run at most every
// earlyStepEvery; from t0Margin before T0 they run every period.
func TestRunStepsARoomBeforeT0Rarely(t *testing.T) {
	f := setup(t, 10)
	const later, soon, now = "ev_room_later", "ev_room_soon", ev
	event := func(id string) catalog.Event {
		return catalog.Event{ID: id, Status: catalog.StatusOnSale, Storefront: true,
			WaitingRoom: &catalog.WaitingRoom{OpensAt: time.Now().Add(-time.Hour).Format(time.RFC3339),
				SalesStartAt: time.Now().Add(time.Hour).Format(time.RFC3339), Mode: catalog.RoomModeFIFO},
			Tickets: []catalog.Ticket{{ID: "tk", Name: "T", Price: 100, Capacity: 10}}}
	}
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: "t1", Events: []catalog.Event{event(later), event(soon), event(now)}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const every = 20 * time.Millisecond
	start := time.Now()
	soonT0 := start.Add(t0Margin + 600*time.Millisecond) // finer than the catalog's seconds
	snap.Events[soon].Room.SalesStartAt = soonT0
	snap.Events[now].Room.SalesStartAt = start.Add(-time.Minute)
	// a buyer waits in each room (in the one past T0, with a pass), so
	// none rests (resting)
	for _, id := range []string{later, soon, now} {
		if _, err := f.s.Join(f.ctx, snap.Events[id].Room, JoinRequest{EventID: id, Email: "a@x.test", Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stop := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.s.Run(ctx, every, func() *catalog.Snapshot { return snap }) }()
	defer func() { stop(); <-done }()
	// each step stores the room's frontier anew: each frontier seen, with
	// when it was first seen
	steps := map[string]map[*frontier]time.Time{later: {}, soon: {}, now: {}}
	for time.Now().Before(soonT0) {
		for id, seen := range steps {
			if v, ok := f.s.frontiers.Load(id); ok && seen[v.(*frontier)].IsZero() {
				seen[v.(*frontier)] = time.Now()
			}
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	<-done
	took := time.Since(start)
	between := 0 // the soon room's steps in the margin before its T0
	for _, at := range steps[soon] {
		if at.After(soonT0.Add(-t0Margin + every)) {
			between++
		}
	}
	most := int(took/(earlyStepEvery-every/2)) + 1
	if got := len(steps[later]); got == 0 || got > most {
		t.Fatalf("the room an hour before T0 took %d steps in %v (the room past T0: %d); want 1 to %d",
			got, took.Round(time.Millisecond), len(steps[now]), most)
	}
	// t0Margin at a period of 20 ms: up to 50 steps; at earlyStepEvery, 5
	if between < 10 || len(steps[now]) < 20 {
		t.Fatalf("in the %v before its T0 the room took %d steps, and the room past T0 %d in %v: want each step of a period",
			t0Margin, between, len(steps[now]), took.Round(time.Millisecond))
	}
}

// A room whose step found nothing to do soon (nobody waiting and no live
// pass, or sold out) is not stepped again at every tick: only after its
// rest, or once this node joined, left or read it in Redis (another node's
// join or leave it cannot see). A sold-out room still hears of units given
// back within its rest, though nobody polls.
func TestRunRestsAQuietRoom(t *testing.T) {
	// Put back after the last Run of the test stops (cleanups run last
	// first): Run reads them.
	t.Cleanup(func(idle, soldOut time.Duration) func() {
		return func() { idleStepEvery, soldOutStepEvery = idle, soldOut }
	}(idleStepEvery, soldOutStepEvery))
	idleStepEvery, soldOutStepEvery = time.Hour, time.Hour // a rest outlasts the test: only a touch ends it
	f := setup(t, 1)
	cfg := f.open(false, time.Minute)
	other := &Service{Redis: f.rc, Space: f.sp, Key: f.s.Key} // another node of the deployment
	current := func() *frontier {
		if v, ok := f.s.frontiers.Load(ev); ok {
			return v.(*frontier)
		}
		return nil
	}
	stepped := func(what string, ok func(*frontier) bool) *frontier {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if fr := current(); fr != nil && ok(fr) {
				return fr
			}
		}
		t.Fatalf("%s: no step within 5 s (frontier %+v)", what, current())
		return nil
	}
	rests := func(what string, fr *frontier) {
		t.Helper()
		time.Sleep(500 * time.Millisecond) // ten ticks
		if current() != fr {
			t.Fatalf("%s: the room was stepped again (the tick is every 50 ms)", what)
		}
	}
	stop := f.run(cfg)
	idle := stepped("the first step", func(*frontier) bool { return true })
	if idle.waiting != 0 || idle.resv != 0 || idle.left != 1 {
		t.Fatalf("first step: %+v, want nobody waiting, no pass, 1 unit left", idle.reading)
	}
	rests("nobody waiting", idle)
	a, err := other.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "a@x.test", Quantity: 1})
	if err != nil || a.State != Admitted {
		t.Fatalf("a's join on another node: %+v, %v; want admitted", a, err)
	}
	rests("after another node's join", idle)
	f.status(cfg, a.QueueID) // this node reads the room in Redis
	stepped("after a read", func(fr *frontier) bool { return fr.resv == 1 })
	b := f.join(cfg, "b@x.test")
	if b.State != Waiting {
		t.Fatalf("b: %+v, want waiting behind a's pass", b)
	}
	// a's unit is sold and a leaves its pass (on the other node): sold
	// out, b waits
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	if _, err := other.Leave(f.ctx, ev, a.QueueID); err != nil {
		t.Fatal(err)
	}
	soldOut := stepped("after a left", func(fr *frontier) bool { return fr.soldOut() && fr.waiting == 1 })
	rests("sold out", soldOut)
	if _, err := f.s.Leave(f.ctx, ev, b.QueueID); err != nil { // this node's leave
		t.Fatal(err)
	}
	empty := stepped("after b left", func(fr *frontier) bool { return fr.waiting == 0 })
	// the unit comes back with nobody waiting: nothing for a step to do
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "0")
	rests("a unit back, nobody waiting", empty)
	c := f.join(cfg, "c@x.test") // this node's join, admitted at once
	if c.State != Admitted {
		t.Fatalf("c: %+v, want admitted", c)
	}
	stepped("after c joined", func(fr *frontier) bool { return fr.resv == 1 })

	// at the shipped rests, units given back reach the head of a
	// sold-out line though nobody polls
	stop()
	idleStepEvery, soldOutStepEvery = time.Second, 250*time.Millisecond
	d := f.join(cfg, "d@x.test")
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	if _, err := other.Leave(f.ctx, ev, c.QueueID); err != nil {
		t.Fatal(err)
	}
	f.run(cfg)
	stepped("sold out again", func(fr *frontier) bool { return fr.soldOut() && fr.waiting == 1 })
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "0")
	stepped("after the unit came back", func(fr *frontier) bool { return fr.resv == 1 && fr.waiting == 0 })
	if v, err := f.rc.Do(f.ctx, f.rc.B().Hget().Key(f.sp.RoomPlaces(ev)).Field(d.QueueID).Build()).ToString(); err != nil || !strings.HasPrefix(v, "a ") {
		t.Fatalf("d's place once the unit came back: %q, %v; want admitted", v, err)
	}
}

// The audit holds the admission order with each place's rank, each pass's
// fate and, from T0, the shuffle key, so the order can be checked later.
func TestAuditHoldsTheOrderAndEachPassesFate(t *testing.T) {
	f := setup(t, 2)
	cfg := f.open(true, time.Minute)
	a := f.join(cfg, "a@x.test").QueueID
	b := f.join(cfg, "b@x.test").QueueID
	c := f.join(cfg, "c@x.test").QueueID
	if _, err := f.s.Leave(f.ctx, ev, a); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil { // c takes a's place; the key is shown
		t.Fatal(err)
	}
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil { // the key once only
		t.Fatal(err)
	}
	got, err := f.s.Audit(f.ctx, ev, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range got {
		lines = append(lines, fmt.Sprintf("%s %s %d %s", e.What, e.QueueID, e.Units, e.Was))
	}
	want := []string{"admitted " + a + " 1 ", "admitted " + b + " 1 ", "left " + a + " 0 admitted", "admitted " + c + " 1 ", "key  0 "}
	if !slices.Equal(lines, want) {
		t.Fatalf("audit\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[0].Rank == "" || got[4].Key != hex.EncodeToString(f.s.ShuffleKey(ev)) {
		t.Fatalf("rank %q, key %q", got[0].Rank, got[4].Key)
	}
	rest, err := f.s.Audit(f.ctx, ev, got[1].ID, 100)
	if err != nil || len(rest) != 3 || rest[0].ID != got[2].ID {
		t.Fatalf("audit after the second entry: %+v %v", rest, err)
	}
}

// A waiting place's poll is answered from the node's frontier (no Redis):
// far from the head with a position within the frontier's sampling of the
// truth, at the head exactly (the tick lists the head); a poll of an
// admitted place, or on a stale frontier, goes to Redis.
func TestWaitingPollsAreAnsweredFromTheFrontier(t *testing.T) {
	const stock, n = 10, 1000
	f := setup(t, stock)
	cfg := f.open(false, time.Minute)
	tokens := f.joinAll(cfg, "f", n)
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil { // the tick: the frontier
		t.Fatal(err)
	}
	poll := func(i int) Status {
		t.Helper()
		p, ok := f.s.PlaceOf(ev, tokens[i])
		if !ok {
			t.Fatalf("token %d refused", i)
		}
		st, err := f.s.Poll(f.ctx, cfg, ev, p)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	step := int64((n-stock)/frontierSamples + 1)
	far := poll(500)
	if !far.Memory || far.State != Waiting || far.Ahead < 490-step || far.Ahead > 490+step || far.Quantity != 1 {
		t.Fatalf("the 501st arrival: %+v, want waiting about 490 ahead, from memory", far)
	}
	near := poll(stock + 5)
	if !near.Memory || near.State != Waiting || near.Ahead != 5 {
		t.Fatalf("the 16th arrival: %+v, want waiting 5 ahead, from memory", near)
	}
	if st := poll(0); st.Memory || st.State != Admitted || st.Pass == "" {
		t.Fatalf("the first arrival: %+v, want admitted, from Redis", st)
	}
	// The next tick, within sampleEvery, reads the figures alone and keeps
	// the scores; the places admitted since count off the positions.
	first, _ := f.s.frontiers.Load(ev)
	for i := range 20 { // 20 admitted places leave: 20 more are admitted
		p, _ := f.s.PlaceOf(ev, tokens[i])
		if _, err := f.s.Leave(f.ctx, ev, p.QueueID); err != nil {
			t.Fatal(err)
		}
		if err := f.s.Admit(f.ctx, cfg, ev); err != nil {
			t.Fatal(err)
		}
	}
	next, _ := f.s.frontiers.Load(ev)
	if a, b := first.(*frontier), next.(*frontier); &b.scores[0] != &a.scores[0] || !b.sampled.Equal(a.sampled) || b.moved != 20 {
		t.Fatalf("a tick within %v read the scores again, or counts %d moved (want 20)", sampleEvery, b.moved)
	}
	if far := poll(500); !far.Memory || far.Ahead < 470-step || far.Ahead > 470+step {
		t.Fatalf("the 501st arrival once 20 more were admitted: %+v, want about 470 ahead, from memory", far)
	}
	f.s.Now = func() time.Time { return time.Now().Add(2 * frontierFresh) }
	if st := poll(500); st.Memory || st.Ahead != 470 {
		t.Fatalf("on a stale frontier: %+v, want the exact place from Redis", st)
	}
}

// Once nothing is left and no pass may give a ticket back, every waiter
// far from the head reads sold out from the frontier at the next tick.
func TestSoldOutReachesFarWaitersFromTheFrontier(t *testing.T) {
	f := setup(t, 1)
	f.s.NearHead = 5
	cfg := f.open(false, time.Minute)
	tokens := f.joinAll(cfg, "s", 20)
	first, _ := f.s.PlaceOf(ev, tokens[0])
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1") // the first buyer's registration holds the unit
	if _, err := f.s.Leave(f.ctx, ev, first.QueueID); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil {
		t.Fatal(err)
	}
	p, _ := f.s.PlaceOf(ev, tokens[15])
	st, err := f.s.Poll(f.ctx, cfg, ev, p)
	if err != nil || !st.Memory || st.State != SoldOut {
		t.Fatalf("a far waiter: %+v %v, want sold_out from memory", st, err)
	}
}

// The frontier's estimate: exact at its samples, interpolated between
// them, the whole line for a place behind the last read, none before the
// head.
func TestFrontierEstimatesThePlacesAhead(t *testing.T) {
	fr := &frontier{reading: reading{waiting: 10}, scores: []float64{5, 9, 13, 14}, pos: []int64{0, 4, 8, 9}}
	for _, c := range []struct {
		rank  float64
		ahead int64
		ok    bool
	}{{5, 0, true}, {7, 2, true}, {9, 4, true}, {12, 7, true}, {14, 9, true}, {20, 10, true}, {4, 0, false}} {
		if a, ok := fr.ahead(c.rank); a != c.ahead || ok != c.ok {
			t.Errorf("rank %v: %d %v, want %d %v", c.rank, a, ok, c.ahead, c.ok)
		}
	}
}

// A device names its place while that place is live; once it left, a
// join from the device with another e-mail makes that e-mail's own place
// and never takes the first one over: no e-mail gets two places, and the
// first e-mail finds its own place again.
func TestADeviceNeverMovesAPlaceToAnotherEmail(t *testing.T) {
	f := setup(t, 5)
	cfg := f.open(false, time.Minute)
	a, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "ann@x.test", Device: "D", Quantity: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Leave(f.ctx, ev, a.QueueID); err != nil {
		t.Fatal(err)
	}
	b1, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "bob@x.test", Device: "D", Quantity: 1})
	if err != nil || b1.QueueID == a.QueueID || b1.Again {
		t.Fatalf("bob from ann's device after she left: %+v %v, want a new place of his own", b1, err)
	}
	b2, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "bob@x.test", Quantity: 1})
	if err != nil || b2.QueueID != b1.QueueID || !b2.Again {
		t.Fatalf("bob again without the device: %+v %v, want his one place", b2, err)
	}
	back, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "ann@x.test", Quantity: 1})
	if err != nil || back.QueueID != a.QueueID || back.Pass == "" {
		t.Fatalf("ann joining again: %+v %v, want her own place", back, err)
	}
	if _, err := f.s.CheckPass(ev, back.Pass, "ann@x.test"); err != nil {
		t.Fatalf("ann's pass is not hers: %v", err)
	}
	// while bob's place is live, the device answers it, whatever the e-mail
	c, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: "cat@x.test", Device: "D", Quantity: 1})
	if err != nil || c.QueueID != b1.QueueID || !c.Again {
		t.Fatalf("cat from bob's device: %+v %v, want bob's place", c, err)
	}
	// only the join that made a place gets a token that may leave it
	if p, _ := f.s.PlaceOf(ev, b1.PollToken); !p.Maker {
		t.Fatal("the token of the join that made the place is not the maker's")
	}
	if p, _ := f.s.PlaceOf(ev, b2.PollToken); p.Maker {
		t.Fatal("a second join's token may leave the place")
	}
}

// A tick lists the head of the line only when it changed since the node's
// last tick: a tick that finds it as it was answers -1 and the node keeps
// its list. Every change of the head is seen: a leave, a place that came
// in between (a fair room's pre-queue ranks anywhere), the two at once, a
// join behind a head shorter than NearHead, an admission.
func TestATickListsTheHeadAgainOnlyWhenItChanged(t *testing.T) {
	f := setup(t, 100)
	f.s.NearHead = 5
	cfg := f.open(false, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour) // nobody is admitted yet
	tokens := f.joinAll(cfg, "h", 8)
	qid := func(i int) string {
		p, _ := f.s.PlaceOf(ev, tokens[i])
		return p.QueueID
	}
	// tick ticks, and says whether Redis listed the head, and the node's
	// head in order.
	tick := func() (bool, []string) {
		t.Helper()
		v, _ := f.s.frontiers.Load(ev)
		was, _ := v.(*frontier)
		arr, err := f.s.runStatus(f.ctx, cfg, ev, "", "", 0, was)
		if err != nil {
			t.Fatal(err)
		}
		n, err := eval.Int(arr, 1+11)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.s.Admit(f.ctx, cfg, ev); err != nil {
			t.Fatal(err)
		}
		v, _ = f.s.frontiers.Load(ev)
		fr := v.(*frontier)
		head := make([]string, len(fr.head))
		for id, ahead := range fr.head {
			head[ahead] = id
		}
		return n != -1, head
	}
	want := func(what string, listed bool, head []string, wantListed bool, ids ...string) {
		t.Helper()
		if listed != wantListed || !slices.Equal(head, ids) {
			t.Fatalf("%s: listed %v, head %v; want listed %v, head %v", what, listed, head, wantListed, ids)
		}
	}
	// insert puts a waiting place in the line at score, as a fair room's
	// pre-queue join of that rank does.
	insert := func(id string, score string) {
		f.cmd("HSET", f.sp.RoomPlaces(ev), id, "w 1 0 bk-"+id)
		f.cmd("ZADD", f.sp.RoomLine(ev), score, id)
		f.cmd("HINCRBY", f.sp.Room(ev), "wn", "1")
	}
	leave := func(id string) {
		t.Helper()
		if _, err := f.s.Leave(f.ctx, ev, id); err != nil {
			t.Fatal(err)
		}
	}
	if listed, _ := tick(); !listed {
		t.Fatal("a node's first tick did not list the head")
	}
	listed, head := tick()
	want("a tick with nothing changed", listed, head, false, qid(0), qid(1), qid(2), qid(3), qid(4))

	leave(qid(2))
	listed, head = tick()
	want("after a leave in the head", listed, head, true, qid(0), qid(1), qid(3), qid(4), qid(5))

	score, err := f.rc.Do(f.ctx, f.rc.B().Zscore().Key(f.sp.RoomLine(ev)).Member(qid(1)).Build()).AsFloat64()
	if err != nil {
		t.Fatal(err)
	}
	insert("between", strconv.FormatFloat(score+0.5, 'f', -1, 64))
	listed, head = tick()
	want("after a place came in between", listed, head, true, qid(0), qid(1), "between", qid(3), qid(4))

	leave(qid(3)) // one goes and one comes between the first and the last: only the leave count tells
	insert("between2", strconv.FormatFloat(score+0.7, 'f', -1, 64))
	listed, head = tick()
	want("after a leave and a place in between", listed, head, true, qid(0), qid(1), "between", "between2", qid(4))
	listed, head = tick()
	want("unchanged again", listed, head, false, qid(0), qid(1), "between", "between2", qid(4))

	for _, i := range []int{4, 5, 6, 7} {
		leave(qid(i))
	}
	listed, head = tick()
	want("a short line", listed, head, true, qid(0), qid(1), "between", "between2")
	late := f.join(cfg, "late@x.test").QueueID
	listed, head = tick()
	want("a join behind a short head", listed, head, true, qid(0), qid(1), "between", "between2", late)

	cfg.SalesStartAt = time.Now().Add(-time.Second)
	listed, head = tick()
	want("after the head was admitted", listed, head, true)
}
