package room

import (
	"context"
	"sync"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// TickEvery is how often every node runs each room's admission step (Run):
// one script per room and node, which also wakes the long-polls, so a
// sell-out reaches every waiter within about this.
const TickEvery = 100 * time.Millisecond

// MaxWait bounds a long-poll (Wait): under the server's write timeout and
// the idle timeouts of the proxies in front of it.
const MaxWait = 30 * time.Second

// A waker tells a node's long-polls of one room that its tick (Admit)
// saw the room change: the channel of the moment is closed and replaced.
type waker struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *Service) wakerOf(eventID string) *waker {
	if v, ok := s.wakers.Load(eventID); ok {
		return v.(*waker)
	}
	v, _ := s.wakers.LoadOrStore(eventID, &waker{ch: make(chan struct{})})
	return v.(*waker)
}

// changes is closed at the room's next change this node sees, or when the
// node stops ticking.
func (s *Service) changes(eventID string) <-chan struct{} {
	w := s.wakerOf(eventID)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

func (w *waker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.ch)
	w.ch = make(chan struct{})
}

// StopWaits answers every long-poll of the node now, and each one after
// it at once: the node is shutting down, and its server's drain should
// wait for none of them. Run calls it when it ends.
func (s *Service) StopWaits() {
	s.stopped.Store(true)
	s.wakers.Range(func(_, v any) bool {
		v.(*waker).wake()
		return true
	})
}

// moved says whether a tick's frontier differs from the one before in
// what a waiter is told: places admitted, units left or held by passes,
// passes that ended. Joins and leaves alone move nobody's turn much.
func moved(was, now *frontier) bool {
	return was == nil || was.admitted != now.admitted || was.left != now.left || was.resv != now.resv ||
		was.used != now.used || was.lapsed != now.lapsed
}

// Wait is Poll held, for a place waiting or sold out, until what its
// buyer is told changes: its state (admitted, sold out, tickets back,
// gone), or the places ahead of it halve; at the latest after d (at most
// MaxWait, and just after T0 for a wait that began before), when it
// answers the place as it is then. Every node wakes its
// long-polls at each tick of Run that sees the room change, so a sold-out
// room is told to all its waiters within a tick, and a poll costs Redis
// nothing while it waits unless its place is near the head. d <= 0 is
// Poll.
func (s *Service) Wait(ctx context.Context, cfg *catalog.Room, eventID string, p Place, d time.Duration) (Status, error) {
	ch := s.changes(eventID) // before the read: a change during it wakes the wait
	st, err := s.Poll(ctx, cfg, eventID, p)
	if err != nil || d <= 0 || s.stopped.Load() || (st.State != Waiting && st.State != SoldOut) {
		return st, err
	}
	d = min(d, MaxWait)
	if toT0 := cfg.SalesStartAt.Sub(s.now()); toT0 > 0 {
		// A waiter is told "before the on-sale" (its ETA, its place for
		// now): it hears from T0 as soon as the first tick after it has run.
		d = min(d, toT0+2*TickEvery)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		timedOut := false
		select {
		case <-ch:
		case <-t.C:
			timedOut = true
		case <-ctx.Done():
			return st, nil
		}
		ch = s.changes(eventID)
		now, err := s.Poll(ctx, cfg, eventID, p)
		if err != nil {
			return Status{}, err
		}
		if timedOut || s.stopped.Load() || now.State != st.State || now.Ahead*2 <= st.Ahead && st.Ahead > 0 {
			return now, nil
		}
	}
}
