package room

import (
	"container/heap"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// TickEvery is how often every node runs each room's admission step (Run):
// one script per room and node, which also wakes the long-polls, so a
// sell-out reaches every waiter within about this, and a lapsed pass's
// units go to the next in line within it (the ticks, not the polls, move
// the line). A tick without the score samples is tens of microseconds of
// Redis: twenty a second per node is a millisecond of it. Until t0Margin
// before T0, when nobody is admitted, Run steps a room every
// earlyStepEvery instead.
const TickEvery = 50 * time.Millisecond

// MaxWait bounds a long-poll (Wait): under the server's write timeout and
// the idle timeouts of the proxies in front of it.
const MaxWait = 30 * time.Second

// A waker holds a node's long-polls of one room. Each waits for the
// room's admitted count (places given a pass) to reach its own threshold
// (its turn may have come, or the places ahead of it halved), or for the
// sold-out state to flip, which wakes them all. A tick wakes only the
// long-polls whose threshold it passed: with many thousands waiting, each
// tick costs the few it concerns, not every waiter.
type waker struct {
	mu       sync.Mutex
	flip     chan struct{} // closed when sold out is said or unsaid, or the node stops
	at       waitHeap      // long-polls by the admitted count that wakes them
	dead     int           // entries in at whose long-poll ended otherwise
	admitted int64         // the last tick's
	soldOut  bool
	// told holds the places this node answered sold out since sold out
	// was last said (tick, at flipped): a long-poll of such a place waits
	// for news, while one whose place it never told (whose last answer,
	// "waiting", came just before the sell-out) is told at once. Only for
	// toldFor after the flip: then every sold-out place waits, and the
	// map goes.
	told    map[string]struct{}
	flipped time.Time
	// stopped is the service's: read under mu, so a long-poll that
	// registers after StopWaits emptied the heap is answered at once.
	stopped *atomic.Bool
}

// waitHeap is a min-heap (container/heap) of long-polls by threshold.
type waitHeap []*waitEntry

type waitEntry struct {
	at   int64
	ch   chan struct{}
	dead bool // the long-poll ended otherwise: nobody reads ch
}

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h waitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)        { *h = append(*h, x.(*waitEntry)) }
func (h *waitHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (s *Service) wakerOf(roomID string) *waker {
	if v, ok := s.wakers.Load(roomID); ok {
		return v.(*waker)
	}
	v, _ := s.wakers.LoadOrStore(roomID, &waker{flip: make(chan struct{}), stopped: &s.stopped})
	return v.(*waker)
}

// mark is what a long-poll reads before its poll: the admitted count and
// the flip channel of the moment, so no tick between the poll and the
// wait goes unseen.
func (w *waker) mark() (int64, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.admitted, w.flip
}

// until is a channel closed once the admitted count reaches at (at once
// when it has, or the node stopped), and the call that says the long-poll
// no longer waits for it.
func (w *waker) until(at int64) (<-chan struct{}, func()) {
	e := &waitEntry{at: at, ch: make(chan struct{})}
	w.mu.Lock()
	defer w.mu.Unlock()
	if (w.stopped != nil && w.stopped.Load()) || at <= w.admitted {
		close(e.ch)
		return e.ch, func() {}
	}
	heap.Push(&w.at, e)
	return e.ch, func() { w.drop(e) }
}

// drop marks e dead, and rebuilds the heap without the dead once they are
// most of it: a line that stalls (nothing admitted, not sold out) while
// its waiters' long-polls time out and come back would grow it otherwise.
func (w *waker) drop(e *waitEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.dead || !isOpen(e.ch) {
		return
	}
	e.dead = true
	w.dead++
	if w.dead > 64 && w.dead > len(w.at)/2 {
		live := w.at[:0]
		for _, x := range w.at {
			if !x.dead {
				live = append(live, x)
			}
		}
		clear(w.at[len(live):])
		w.at, w.dead = live, 0
		heap.Init(&w.at)
	}
}

func isOpen(ch chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// tick takes a tick's frontier: it wakes the long-polls whose threshold
// the admitted count reached, and every one when sold out flips.
func (w *waker) tick(f *frontier) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.admitted = f.admitted // not the max: a room Redis lost counts from 0 again
	for len(w.at) > 0 && w.at[0].at <= w.admitted {
		w.fire(heap.Pop(&w.at).(*waitEntry))
	}
	if so := f.soldOut(); so != w.soldOut {
		w.soldOut, w.told, w.flipped = so, nil, time.Now()
		w.wakeAll()
	} else if w.told != nil && time.Since(w.flipped) >= toldFor {
		w.told = nil
	}
}

// toldFor is how long after a flip a node tells a sold-out place's
// long-poll at once when it has not told that place yet: long enough for
// the long-polls that ran out just before the flip to come back, short
// enough that the places told take little memory for little time.
const toldFor = 10 * time.Second

// tell records that this node answered place queueID sold out, and says
// whether it had since sold out was last said (or the flip is toldFor
// old: then every place counts as told).
func (w *waker) tell(queueID string) (before bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Since(w.flipped) >= toldFor {
		w.told = nil
		return true
	}
	if _, before = w.told[queueID]; !before {
		if w.told == nil {
			w.told = map[string]struct{}{}
		}
		w.told[strings.Clone(queueID)] = struct{}{} // not the poll token it is cut from
	}
	return before
}

// fire wakes e's long-poll, out of the heap (w.mu held).
func (w *waker) fire(e *waitEntry) {
	if e.dead {
		w.dead--
	}
	close(e.ch)
}

// wakeAll wakes every long-poll (w.mu held).
func (w *waker) wakeAll() {
	close(w.flip)
	w.flip = make(chan struct{})
	for _, e := range w.at {
		w.fire(e)
	}
	clear(w.at)
	w.at = w.at[:0]
}

// StopWaits answers every long-poll of the node now, and each one after
// it at once: the node is shutting down, and its server's drain should
// wait for none of them. Run calls it when it ends.
func (s *Service) StopWaits() {
	s.stopped.Store(true)
	s.wakers.Range(func(_, v any) bool {
		w := v.(*waker)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.wakeAll()
		return true
	})
}

// Wait is Poll held, for a place waiting or sold out, until what its
// buyer is told changes: its state (admitted, sold out, tickets back,
// gone), or the places ahead of it halve; at the latest after d (at most
// MaxWait, and just after T0 for a wait that began before), when it
// answers the place as it is then. Each tick of Run on this node wakes the
// long-polls it concerns (waker), so a sell-out reaches every waiter
// within a tick; a woken place that still waits is answered from the
// frontier, so a long-poll costs Redis nothing while it waits. d <= 0 is
// Poll. known, when not empty, is the state the buyer last heard (a
// status's state, which its client sends back): a place in another state
// is news, answered at once, and one in that state waits. count, when
// set, is told of each poll before it is answered.
func (s *Service) Wait(ctx context.Context, cfg *catalog.Room, roomID string, p Place, d time.Duration, known string, count Count) (Status, error) {
	w := s.wakerOf(roomID)
	adm, flip := w.mark()
	st, err := s.poll(ctx, cfg, roomID, p, count)
	if err != nil || d <= 0 || s.stopped.Load() || (st.State != Waiting && st.State != SoldOut) {
		return st, err
	}
	switch {
	case known != "" && known != st.State:
		// A long-poll that ran out just before the sell-out, answered
		// "waiting", and came back after it (on a connection that dropped
		// the answer, or to another node) hears it now.
		if st.State == SoldOut {
			w.tell(p.QueueID)
		}
		return st, nil
	case known == "" && st.State == SoldOut && !w.tell(p.QueueID):
		// A client that does not say what it heard: a sold-out place
		// waits for news only once this node told it sold out, or it
		// would hear of a sell-out that came between two long-polls only
		// when the next one's wait ran out.
		return st, nil
	}
	d = min(d, MaxWait)
	if toT0 := cfg.SalesStartAt.Sub(s.now()); toT0 > 0 {
		// A waiter is told "before the on-sale" (its ETA, its place for
		// now): it hears from T0 as soon as the first tick after it has run.
		d = min(d, toT0+2*TickEvery)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	half := st.Ahead / 2 // the places ahead that end the wait
	now := st
	for {
		// A sold-out place waits for the flip alone: nobody is admitted
		// until it comes. A waiting one also for the admissions that may
		// bring its turn or halve the places ahead: any one, near the head.
		var turn <-chan struct{}
		drop := func() {}
		if now.State == Waiting {
			step := max(1, now.Ahead-half)
			if now.Ahead < s.nearHead() {
				step = 1
			}
			turn, drop = w.until(adm + step)
		}
		timedOut, ended, flipped := false, false, false
		select {
		case <-turn:
		case <-flip:
			flipped = true
		case <-t.C:
			timedOut = true
		case <-ctx.Done():
			ended = true
		}
		drop()
		if ended {
			return now, nil
		}
		adm, flip = w.mark()
		if now, err = s.poll(ctx, cfg, roomID, p, count); err != nil {
			return Status{}, err
		}
		// A flip is news for every waiter, answered whatever this one's
		// first poll said: a first poll Redis answered may have said sold
		// out before this node's tick did, and held to a change from it,
		// the waiter would hear nothing until its wait ran out.
		if timedOut || flipped || s.stopped.Load() || now.State != st.State || now.Ahead <= half && st.Ahead > 0 {
			if now.State == SoldOut {
				w.tell(p.QueueID)
			}
			return now, nil
		}
	}
}
