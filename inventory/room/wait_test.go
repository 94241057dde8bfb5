package room

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// run runs the service's ticks over cfg's event until the test ends, or
// until the returned stop.
func (f *fixture) run(cfg *catalog.Room) (stop func()) {
	snap := &catalog.Snapshot{Events: map[string]*catalog.CompiledEvent{ev: {Event: &catalog.Event{ID: ev}, Room: cfg}}}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.s.Run(ctx, 50*time.Millisecond, func() *catalog.Snapshot { return snap }) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	f.t.Cleanup(stop)
	return stop
}

// waited is one long-poll's answer and how long it took.
type waited struct {
	st   Status
	err  error
	took time.Duration
}

// waitAll long-polls each token's place for d, at once, and gives the
// answers in the tokens' order once all are in.
func (f *fixture) waitAll(cfg *catalog.Room, tokens []string, d time.Duration) func() []waited {
	return f.waitKnown(cfg, tokens, d, "")
}

// waitKnown is waitAll with the state each buyer last heard (known).
func (f *fixture) waitKnown(cfg *catalog.Room, tokens []string, d time.Duration, known string) func() []waited {
	out := make([]waited, len(tokens))
	var wg sync.WaitGroup
	for i, tok := range tokens {
		p, ok := f.s.PlaceOf(ev, tok)
		if !ok {
			f.t.Fatalf("token %d is not a place", i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			st, err := f.s.Wait(f.ctx, cfg, ev, p, d, known, nil)
			out[i] = waited{st, err, time.Since(start)}
		}()
	}
	return func() []waited { wg.Wait(); return out }
}

// Every long-poll, near the head or far from it, hears the sell-out at the
// tick that sees it, long before its wait ends; and when a hold lapses,
// the waiters' next long-polls hear that tickets came back.
func TestLongPollsHearTheSellOutAndTheReturn(t *testing.T) {
	f := setup(t, 1)
	f.s.NearHead = 5
	cfg := f.open(false, time.Minute)
	tokens := f.joinAll(cfg, "w", 20)
	f.run(cfg)
	const long = 20 * time.Second
	answers := f.waitAll(cfg, tokens[1:], long)
	time.Sleep(200 * time.Millisecond) // the polls are waiting: nothing changed
	// the first buyer's registration takes the unit, and its pass goes
	first, _ := f.s.PlaceOf(ev, tokens[0])
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	if _, err := f.s.Leave(f.ctx, ev, first.QueueID); err != nil {
		t.Fatal(err)
	}
	for i, w := range answers() {
		if w.err != nil || w.st.State != SoldOut || w.st.Reason != "sold_out" {
			t.Errorf("waiter %d: %+v %v, want sold_out", i+1, w.st, w.err)
		}
		if w.took >= long/2 {
			t.Errorf("waiter %d heard after %v: its wait ran out rather than a tick waking it", i+1, w.took)
		}
	}
	// the registration lapses unpaid: the unit is back for the head
	answers = f.waitAll(cfg, tokens[1:3], long)
	time.Sleep(200 * time.Millisecond)
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "0")
	got := answers()
	if got[0].err != nil || got[0].st.State != Admitted || got[0].st.Pass == "" {
		t.Errorf("the head once the unit came back: %+v %v, want admitted with a pass", got[0].st, got[0].err)
	}
	if got[1].err != nil || got[1].st.State != Waiting || got[1].st.Ahead != 0 || got[1].took >= long/2 {
		t.Errorf("the next once the unit came back: %+v %v after %v, want waiting at the head, told at once", got[1].st, got[1].err, got[1].took)
	}
}

// A long-poll that ran out just before the sell-out (answered waiting) and
// came back just after it hears it at once, not when its next wait runs
// out; once told, a sold-out place's long-poll waits for news again, until
// the room sells out anew.
func TestALongPollJustAfterTheSellOutHearsItAtOnce(t *testing.T) {
	f := setup(t, 1)
	cfg := f.open(false, time.Minute)
	tokens := f.joinAll(cfg, "w", 3)
	f.run(cfg)
	w := f.s.wakerOf(ev)
	until := func(soldOut bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			w.mu.Lock()
			so := w.soldOut
			w.mu.Unlock()
			if so == soldOut {
				return // the node's tick saw it, with no long-poll waiting
			}
			if time.Now().After(deadline) {
				t.Fatalf("the node's ticks did not see sold out %v in 5 s", soldOut)
			}
		}
	}
	leave := func(token string) {
		t.Helper()
		p, _ := f.s.PlaceOf(ev, token)
		if _, err := f.s.Leave(f.ctx, ev, p.QueueID); err != nil {
			t.Fatal(err)
		}
	}
	const long = 3 * time.Second
	atOnce := func(when string, tokens ...string) {
		t.Helper()
		for i, a := range f.waitAll(cfg, tokens, long)() {
			if a.err != nil || a.st.State != SoldOut || a.took >= long/2 {
				t.Errorf("%s, waiter %d: %+v %v after %v, want sold_out at once", when, i+1, a.st, a.err, a.took)
			}
		}
	}
	// the first buyer's registration takes the unit, and its pass goes
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	leave(tokens[0])
	until(true)
	atOnce("after the sell-out", tokens[1:]...)
	got := f.waitAll(cfg, tokens[1:2], 300*time.Millisecond)()
	if a := got[0]; a.err != nil || a.st.State != SoldOut || a.took < 300*time.Millisecond {
		t.Errorf("a told waiter's next long-poll: %+v %v after %v, want sold_out after its 300 ms", a.st, a.err, a.took)
	}
	// the registration lapses (its unit goes to the head's pass), and the
	// head leaves: sold out anew, which the last waiter hears at once again
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "0")
	until(false)
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	leave(tokens[1])
	until(true)
	atOnce("after the second sell-out", tokens[2])
}

// A client that says what it last heard (known) is answered at once when
// its place is in another state, however often this node told it so
// before (an answer lost with its connection, or given by another node),
// and waits while its place is in that state.
func TestALongPollThatSaysWhatItHeardHearsTheNews(t *testing.T) {
	f := setup(t, 1)
	cfg := f.open(false, time.Minute)
	tokens := f.joinAll(cfg, "w", 2)
	f.run(cfg)
	// the head's registration takes the unit, and its pass goes
	f.cmd("HSET", f.sp.Sold(ev), capacity.Storefront, "1")
	head, _ := f.s.PlaceOf(ev, tokens[0])
	if _, err := f.s.Leave(f.ctx, ev, head.QueueID); err != nil {
		t.Fatal(err)
	}
	const long = 3 * time.Second
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a := f.waitKnown(cfg, tokens[1:], 0, "")()[0]
		if a.err == nil && a.st.State == SoldOut {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the room did not sell out in 5 s: %+v %v", a.st, a.err)
		}
	}
	// told once without known: this node counts the place told
	if a := f.waitKnown(cfg, tokens[1:], long, "")()[0]; a.err != nil || a.st.State != SoldOut || a.took >= long/2 {
		t.Fatalf("the first long-poll after the sell-out: %+v %v after %v, want sold_out at once", a.st, a.err, a.took)
	}
	// that answer was lost: the client still says waiting
	for i := range 2 {
		if a := f.waitKnown(cfg, tokens[1:], long, Waiting)()[0]; a.err != nil || a.st.State != SoldOut || a.took >= long/2 {
			t.Fatalf("long-poll %d of a client that heard waiting: %+v %v after %v, want sold_out at once", i+1, a.st, a.err, a.took)
		}
	}
	// once it heard sold out, it waits for news
	if a := f.waitKnown(cfg, tokens[1:], 300*time.Millisecond, SoldOut)()[0]; a.err != nil || a.st.State != SoldOut || a.took < 300*time.Millisecond {
		t.Fatalf("a client that heard sold_out: %+v %v after %v, want sold_out after its 300 ms", a.st, a.err, a.took)
	}
}

// A long-poll answers at once what it need not wait for (an admitted
// place), when nothing changes answers the place as it is at the end of
// its wait, and answers at once when the node stops ticking (shutdown).
func TestALongPollEndsWhenItHasNothingToWaitFor(t *testing.T) {
	f := setup(t, 1)
	cfg := f.open(false, time.Minute)
	a := f.join(cfg, "a@x.test").PollToken
	b := f.join(cfg, "b@x.test").PollToken
	stop := f.run(cfg)

	w := f.waitAll(cfg, []string{a}, 20*time.Second)()[0]
	if w.err != nil || w.st.State != Admitted || w.took > 10*time.Second {
		t.Fatalf("an admitted place's long-poll: %+v %v after %v, want admitted at once", w.st, w.err, w.took)
	}
	w = f.waitAll(cfg, []string{b}, 300*time.Millisecond)()[0]
	if w.err != nil || w.st.State != Waiting || w.st.Position != 1 || w.took < 300*time.Millisecond {
		t.Fatalf("a long-poll with nothing changing: %+v %v after %v, want waiting at position 1 after its 300 ms", w.st, w.err, w.took)
	}

	answer := f.waitAll(cfg, []string{b}, 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	stop()
	if w = answer()[0]; w.err != nil || w.st.State != Waiting || w.took > 10*time.Second {
		t.Fatalf("a long-poll when the node stops: %+v %v after %v, want waiting, answered at once", w.st, w.err, w.took)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A tick wakes only the long-polls whose threshold the admitted count
// reached; sold out said or unsaid wakes them all; long-polls that ended
// otherwise do not pile up while the line stalls.
func TestATickWakesOnlyTheLongPollsItConcerns(t *testing.T) {
	w := &waker{flip: make(chan struct{})}
	w.tick(&frontier{reading: reading{admitted: 10, left: 5}})
	near, _ := w.until(11)
	far, _ := w.until(500)
	_, flip := w.mark()
	if now, _ := w.until(10); !closed(now) {
		t.Fatal("a threshold already reached does not answer at once")
	}
	w.tick(&frontier{reading: reading{admitted: 12, left: 3}})
	if !closed(near) || closed(far) || closed(flip) {
		t.Fatalf("12 admitted: near woken %v (want true), far %v, flip %v (want false)", closed(near), closed(far), closed(flip))
	}
	w.tick(&frontier{reading: reading{admitted: 12}}) // nothing left, no pass live: sold out
	if !closed(far) || !closed(flip) || len(w.at) != 0 {
		t.Fatalf("sold out: far woken %v, flip %v, %d still held; want every one woken", closed(far), closed(flip), len(w.at))
	}

	for range 1000 { // a stalled line: each long-poll times out and drops its wait
		_, drop := w.until(1_000_000)
		drop()
	}
	if len(w.at) > 200 {
		t.Fatalf("after 1,000 long-polls ended unwoken the heap holds %d", len(w.at))
	}
	ch, _ := w.until(13)
	w.tick(&frontier{reading: reading{admitted: 13, left: 1}})
	if !closed(ch) || w.dead < 0 {
		t.Fatalf("after the compactions: woken %v, dead count %d", closed(ch), w.dead)
	}
}

// A waiter far from the head is answered once the places ahead of it
// halve, not at each admission before.
func TestAFarLongPollIsAnsweredWhenThePlacesAheadHalve(t *testing.T) {
	f := setup(t, 1)
	f.s.NearHead = 2
	cfg := f.open(false, time.Minute)
	var ids, tokens []string
	for i := range 11 {
		j := f.join(cfg, fmt.Sprintf("h%d@x.test", i))
		ids, tokens = append(ids, j.QueueID), append(tokens, j.PollToken)
	}
	f.run(cfg)
	answer := f.waitAll(cfg, tokens[10:], 20*time.Second) // 9 ahead: answered at 4
	// its first poll (9 ahead) is made before anyone leaves: on a busy
	// machine the goroutine may start late, and a first poll after some
	// left would halve fewer places
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w := f.s.wakerOf(ev)
		w.mu.Lock()
		n := len(w.at)
		w.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long-poll never waited")
		}
	}
	// leave is the admitted place giving its unit to the next, once the
	// tick admitted it
	leave := func(i int) {
		deadline := time.Now().Add(5 * time.Second)
		for f.status(cfg, ids[i]).State != Admitted {
			if time.Now().After(deadline) {
				t.Fatalf("place %d was not admitted", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := f.s.Leave(f.ctx, ev, ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan []waited, 1)
	go func() { done <- answer() }()
	for i := range 4 { // each leaving admits the next: 9 ahead -> 5
		leave(i)
	}
	select {
	case w := <-done:
		t.Fatalf("answered before the places ahead halved: %+v", w[0])
	case <-time.After(300 * time.Millisecond):
	}
	leave(4) // 4 ahead
	select {
	case w := <-done:
		if w[0].err != nil || w[0].st.State != Waiting || w[0].st.Ahead > 4 {
			t.Fatalf("the far waiter: %+v %v, want waiting with at most 4 ahead", w[0].st, w[0].err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the far waiter was not answered once the places ahead halved")
	}
}

// A Wait tells its Count of each poll before answering it: from memory for
// a waiting place, far from the head or at it, from Redis for an admitted
// one; a Count's error (the storefront's 429) ends the Wait with it,
// before Redis is asked.
func TestWaitCountsEachPollByWhereItIsAnswered(t *testing.T) {
	f := setup(t, 10)
	f.s.NearHead = 5
	cfg := f.open(false, time.Minute)
	tokens := f.joinAll(cfg, "c", 30)
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil { // the frontier
		t.Fatal(err)
	}
	wait := func(i int, count Count) (Status, error) {
		t.Helper()
		p, ok := f.s.PlaceOf(ev, tokens[i])
		if !ok {
			t.Fatalf("token %d refused", i)
		}
		return f.s.Wait(f.ctx, cfg, ev, p, 0, "", count)
	}
	var told []bool
	record := func(_ context.Context, memory bool) error { told = append(told, memory); return nil }
	if st, err := wait(29, record); err != nil || !st.Memory || len(told) != 1 || !told[0] {
		t.Fatalf("a far place: %+v %v, told %v, want one poll from memory", st, err, told)
	}
	told = nil
	if st, err := wait(12, record); err != nil || !st.Memory || st.Ahead != 2 || len(told) != 1 || !told[0] {
		t.Fatalf("a place 2 from the head: %+v %v, told %v, want one poll from memory", st, err, told)
	}
	told = nil
	if st, err := wait(0, record); err != nil || st.Memory || st.State != Admitted || len(told) != 1 || told[0] {
		t.Fatalf("an admitted place: %+v %v, told %v, want one poll from Redis", st, err, told)
	}
	refused := fmt.Errorf("refused")
	for _, i := range []int{29, 12, 0} {
		if _, err := wait(i, func(context.Context, bool) error { return refused }); err != refused {
			t.Fatalf("place %d with its count refused: %v, want the refusal", i, err)
		}
	}
}

// A long-poll whose first poll Redis answered sold out (the node's
// frontier, stale, did not say it yet) is answered at the node's tick that
// says sold out, not when its wait runs out: the waiter had last heard
// "waiting".
func TestALongPollAheadOfItsNodeHearsTheSoldOutTick(t *testing.T) {
	f := setup(t, 2)
	cfg := f.open(false, time.Minute)
	cfg.SalesStartAt = time.Now().Add(time.Hour) // nobody admitted: no pass holds a unit
	tok := f.join(cfg, "b@x.test").PollToken
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil { // a frontier that is not sold out
		t.Fatal(err)
	}
	f.cmd("HSET", f.sp.Sold(ev), capacity.SellerField(""), "2", "ev", "2")  // every unit sold meanwhile
	f.s.Now = func() time.Time { return time.Now().Add(2 * frontierFresh) } // the frontier is stale: Redis answers
	p, _ := f.s.PlaceOf(ev, tok)
	got := make(chan waited, 1)
	go func() {
		start := time.Now()
		st, err := f.s.Wait(f.ctx, cfg, ev, p, 20*time.Second, "", nil)
		got <- waited{st, err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)                // the long-poll holds Redis' sold out
	if err := f.s.Admit(f.ctx, cfg, ev); err != nil { // the node's tick says it: the flip
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if w.err != nil || w.st.State != SoldOut {
			t.Fatalf("the long-poll: %+v %v, want sold out", w.st, w.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll was not answered at the tick that said sold out")
	}
}
