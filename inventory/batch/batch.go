// Package batch sends the calls that come while a batch is in flight as
// the next batch. A Redis script call costs tens of microseconds before
// its first command, and a WAIT blocks its connection until the replicas
// answer, so the room's joins and the paid scripts that wait for replicas
// go to Redis together rather than one call each.
package batch

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrFull answers a call that finds a Queue's Limit waiting, when the
// Queue names no Full error of its own.
var ErrFull = errors.New("batch: too many calls waiting")

// Queue gathers the calls that arrive while its last batch is in flight
// into its next batch. The call that finds no batch in flight starts a
// goroutine (the lead) that sends batch after batch, in the order the
// calls came, while any wait; a call that comes alone goes at once, alone.
// A call whose caller stopped waiting before its batch went is not sent.
// Set Send and Max before the first Do; a Queue must not be copied.
type Queue[T any] struct {
	// Send sends one batch and answers each of its items (an item holds
	// its own results). An error answers every call of the batch with it.
	// Its context carries the values of the batch's first call and
	// Timeout's deadline, none of the callers' deadlines: a batch serves
	// several callers, and one that stops waiting must not cancel the
	// others' sale.
	Send func(ctx context.Context, items []T) error
	// Max is the most calls a batch holds.
	Max int
	// Limit, when above zero, is the most calls that wait: a call beyond
	// it is answered Full (ErrFull when nil) at once, unsent. Calls that
	// come faster than batches can take them would otherwise wait out
	// their deadlines.
	Limit int
	Full  error
	// Timeout, when above zero, bounds each Send.
	Timeout time.Duration
	// Linger, when set, is how long the lead waits before its first batch
	// for others to join it (asked as the lead starts).
	Linger func() time.Duration
	// Expire, when set, is asked of each call, with how long it has
	// waited, as its batch is made (under the queue's lock: keep it
	// cheap): an error answers the call with it, unsent (a payment that
	// waited out the WAIT's timeout).
	Expire func(waited time.Duration) error

	mu      sync.Mutex
	waiting []*call[T]
	sending bool
}

// call is one item waiting for its batch's answer.
type call[T any] struct {
	ctx  context.Context
	at   time.Time // when it came
	item T
	err  error
	done chan struct{} // closed once answered
}

// Do sends item in the queue's next batch and waits for its answer: nil
// once Send answered it (its results are in item), else the error it was
// answered with (Send's, Full, Expire's, or ctx's when ctx had ended
// before its batch went). When ctx ends first, Do returns ctx's error at
// once: the item may still be sent, and its results must not be read.
func (q *Queue[T]) Do(ctx context.Context, item T) error {
	c := &call[T]{ctx: ctx, at: time.Now(), item: item, done: make(chan struct{})}
	q.mu.Lock()
	if q.Limit > 0 && len(q.waiting) >= q.Limit {
		q.mu.Unlock()
		if q.Full == nil {
			return ErrFull
		}
		return q.Full
	}
	q.waiting = append(q.waiting, c)
	lead := !q.sending
	q.sending = true
	q.mu.Unlock()
	if lead {
		go q.run()
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		select {
		case <-c.done: // answered meanwhile: the answer counts
			return c.err
		default:
			return ctx.Err()
		}
	}
}

// run is the lead: it sends the waiting calls, a batch at a time, until
// none wait.
func (q *Queue[T]) run() {
	if q.Linger != nil {
		if d := q.Linger(); d > 0 {
			time.Sleep(d)
		}
	}
	for {
		q.mu.Lock()
		// A call whose caller left, or that expired, is answered unsent
		// and takes no place in the batch: under overload, when callers
		// give up, batches stay full.
		var live []*call[T]
		n := 0
		for ; n < len(q.waiting) && len(live) < max(q.Max, 1); n++ {
			c := q.waiting[n]
			if c.err = c.ctx.Err(); c.err == nil && q.Expire != nil {
				c.err = q.Expire(time.Since(c.at))
			}
			if c.err != nil {
				close(c.done) // not sent
				continue
			}
			live = append(live, c)
		}
		clear(q.waiting[:n])
		q.waiting = q.waiting[n:]
		if len(live) == 0 { // every call was taken: none waits
			q.sending = false
			q.waiting = nil // the emptied array goes
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.send(live)
	}
}

// send sends the calls of one batch and answers them.
func (q *Queue[T]) send(live []*call[T]) {
	ctx, cancel := context.WithoutCancel(live[0].ctx), context.CancelFunc(func() {})
	if q.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, q.Timeout)
	}
	defer cancel()
	items := make([]T, len(live))
	for i, c := range live {
		items[i] = c.item
	}
	err := q.Send(ctx, items)
	for _, c := range live {
		c.err = err
		close(c.done)
	}
}
