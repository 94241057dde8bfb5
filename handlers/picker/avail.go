package picker

import (
	"context"
	"sync"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/seats"
)

// availTTL is how long one availability read of an event serves every
// picker page polling it. Pages poll each second, so another buyer's
// change still shows within two seconds.
const availTTL = 500 * time.Millisecond

// availCache shares availability reads among the picker pages of an event:
// a read (every seat key of the event) serves all polls for availTTL, and
// polls that come while it runs wait for it rather than start their own.
// A write through the picker (hold, release, ...) makes the event's reads
// stale at once, so a page that just held a seat never reads a map from
// before its hold on this node. The storefront and the partner API read
// afresh each time.
type availCache struct {
	mu sync.Mutex
	ev map[string]*availEvent // by event id; as many as the catalog has
}

type availEvent struct {
	gen uint64 // counts the event's writes through the picker
	cur *availRead
}

// availRead is one read, in flight until done is closed; av and err are
// set before.
type availRead struct {
	ev    *catalog.CompiledEvent
	gen   uint64
	start time.Time
	done  chan struct{}
	av    seats.Availability
	err   error
}

// read returns ev's availability: the current read's when it began less
// than availTTL ago, after the event's last write, for the same catalog
// event (and did not fail), else a new one by load.
func (c *availCache) read(ctx context.Context, ev *catalog.CompiledEvent, load func() (seats.Availability, error)) (seats.Availability, error) {
	c.mu.Lock()
	if c.ev == nil {
		c.ev = map[string]*availEvent{}
	}
	e := c.ev[ev.ID]
	if e == nil {
		e = &availEvent{}
		c.ev[ev.ID] = e
	}
	r := e.cur
	ok := r != nil && r.ev == ev && r.gen == e.gen && time.Since(r.start) < availTTL
	if ok {
		select {
		case <-r.done:
			ok = r.err == nil
		default:
		}
	}
	if !ok {
		r = &availRead{ev: ev, gen: e.gen, start: time.Now(), done: make(chan struct{})}
		e.cur = r
		c.mu.Unlock()
		r.av, r.err = load()
		close(r.done)
		return r.av, r.err
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.av, r.err
	case <-ctx.Done():
		return seats.Availability{}, ctx.Err()
	}
}

// changed makes the event's reads so far stale: a write went through.
func (c *availCache) changed(eventID string) {
	c.mu.Lock()
	if e := c.ev[eventID]; e != nil {
		e.gen++
	}
	c.mu.Unlock()
}
