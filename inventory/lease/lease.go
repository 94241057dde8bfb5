// Package lease holds exclusive leases in Redis: a key whose value is its
// owner's random token, with a TTL so a crashed owner's lease ends by
// itself. While held, a lease is extended every third of its TTL; only its
// owner extends or deletes it (compare-and-pexpire, compare-and-delete in
// lua/lease_*.lua), so an owner whose lease ran out can never extend or
// delete the lease of the next owner. It guards work that must not run on
// two nodes at once, such as a catalog apply and a rebuild of Redis.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/reply"
)

var (
	// ErrHeld means another owner holds the lease.
	ErrHeld = errors.New("lease: held by another owner")
	// ErrLost means the lease ended while its holder still held it: it
	// expired (Redis was unreachable or the holder stalled for a TTL), or
	// it is gone or held by another owner. Its holder must stop the work
	// it guards.
	ErrLost = errors.New("lease: lost (expired, or taken by another owner)")
)

// MinTTL is the shortest TTL a lease takes: it is extended every TTL/3,
// and Redis counts expiries in milliseconds.
const MinTTL = 3 * time.Millisecond

var (
	extendScript  = eval.Load("lease_extend")
	releaseScript = eval.Load("lease_release")
)

// Lease is one held lease. Its methods are safe for concurrent use.
type Lease struct {
	client rueidis.Client
	key    string
	token  string
	ttl    time.Duration
	ttlMS  string

	mu       sync.Mutex
	deadline time.Time // held at least until then: the last confirmed extend's send time + TTL
	lost     bool
	released bool
	lostCh   chan struct{}

	stop        context.CancelFunc // ends keepalive and its Redis call in flight
	done        chan struct{}      // closed when keepalive returned
	releaseOnce sync.Once
	releaseErr  error
}

// Acquire takes the lease at key for ttl (at least MinTTL, whole
// milliseconds) if nobody holds it, and keeps it alive until Release.
// It returns ErrHeld when another owner holds it. The caller must call
// Release, also when the lease was lost.
func Acquire(ctx context.Context, client rueidis.Client, key string, ttl time.Duration) (*Lease, error) {
	ttl = ttl.Truncate(time.Millisecond)
	if ttl < MinTTL {
		return nil, fmt.Errorf("lease: TTL %s is below %s", ttl, MinTTL)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	l := &Lease{client: client, key: key, token: hex.EncodeToString(b[:]), ttl: ttl,
		ttlMS: strconv.FormatInt(ttl.Milliseconds(), 10), lostCh: make(chan struct{}), done: make(chan struct{})}
	sent := time.Now()
	ok, err := client.Do(ctx, client.B().Set().Key(key).Value(l.token).Nx().Px(ttl).Build()).AsBool()
	if err != nil && !rueidis.IsRedisNil(err) {
		// Had the SET taken, the key expires with its TTL.
		return nil, fmt.Errorf("lease: acquire %s: %w", key, err)
	}
	if !ok {
		return nil, ErrHeld
	}
	l.deadline = sent.Add(ttl)
	kctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	go l.keepalive(kctx)
	return l, nil
}

// maxPoll bounds how long AcquireWait sleeps between attempts.
const maxPoll = 100 * time.Millisecond

// AcquireWait is Acquire that waits while another owner holds the lease,
// trying again at growing intervals (at most 100 ms apart), until it gets
// the lease or ctx ends; then it returns ctx's error. Redis errors are
// returned at once.
func AcquireWait(ctx context.Context, client rueidis.Client, key string, ttl time.Duration) (*Lease, error) {
	poll := 2 * time.Millisecond
	for {
		l, err := Acquire(ctx, client, key, ttl)
		if !errors.Is(err, ErrHeld) {
			return l, err
		}
		// Jitter, so waiters do not retry in step.
		t := time.NewTimer(poll/2 + mrand.N(poll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lease: wait for %s: %w", key, ctx.Err())
		case <-t.C:
		}
		poll = min(2*poll, maxPoll)
	}
}

// keepalive extends the lease every TTL/3 until Release or loss. A failed
// extend is tried again at the next tick; the lease counts as lost once a
// TTL passed without a confirmed extend.
func (l *Lease) keepalive(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ectx, cancel := context.WithTimeout(ctx, l.ttl/3)
		err := l.Extend(ectx)
		cancel()
		if errors.Is(err, ErrLost) {
			return
		}
	}
}

// Extend extends the lease now and confirms it is still held, as the
// keepalive does on its own; a holder calls it right before a write the
// lease guards. It returns ErrLost when the lease is lost, and another
// error when Redis could not be asked (the lease may still be held).
func (l *Lease) Extend(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	sent := time.Now()
	arr, err := eval.Array(ctx, l.client, extendScript, []string{l.key}, []string{l.token, l.ttlMS})
	var c reply.Code
	if err == nil {
		c, err = reply.Of(arr)
	}
	if err != nil {
		if lerr := l.Err(); lerr != nil {
			return lerr
		}
		return fmt.Errorf("lease: extend %s: %w", l.key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c != reply.OK {
		l.loseLocked()
		return ErrLost
	}
	if d := sent.Add(l.ttl); !l.lost && d.After(l.deadline) {
		l.deadline = d
	}
	return nil
}

// Err returns ErrLost once the lease is lost (also when its TTL passed
// since the last confirmed extend, before keepalive could notice), nil
// while it is held.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lost && !l.released && !time.Now().Before(l.deadline) {
		l.loseLocked()
	}
	if l.lost {
		return ErrLost
	}
	return nil
}

// Lost is closed when the lease is found lost.
func (l *Lease) Lost() <-chan struct{} { return l.lostCh }

// Context returns a copy of parent that ends, with cause ErrLost, as soon
// as the lease is lost: when the keepalive finds it taken, or when its TTL
// has passed since the last confirmed extend. Work the lease guards runs
// under it, so that a write still in flight (a slow Postgres) is cancelled
// rather than completed by a holder that lost its lease. Call cancel when
// the work is done.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for {
			if l.Err() != nil {
				cancel(ErrLost)
				return
			}
			l.mu.Lock()
			released, wait := l.released, time.Until(l.deadline)
			l.mu.Unlock()
			if released {
				return // the holder is done with the lease, and with the work
			}
			t.Reset(wait) // the deadline moves with each extend: look again then
			select {
			case <-ctx.Done():
				return
			case <-l.lostCh:
			case <-t.C:
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

func (l *Lease) loseLocked() {
	if !l.lost {
		l.lost = true
		close(l.lostCh)
	}
}

// Release stops the keepalive and deletes the lease if this owner still
// holds it; another owner's lease is left in place. It returns ErrLost when
// the lease was no longer this owner's, and a Redis error when the lease
// could not be deleted (it then ends with its TTL). Later calls return the
// first call's result.
func (l *Lease) Release(ctx context.Context) error {
	l.releaseOnce.Do(func() {
		l.stop()
		<-l.done
		l.mu.Lock()
		l.released = true
		l.mu.Unlock()
		arr, err := eval.Array(ctx, l.client, releaseScript, []string{l.key}, []string{l.token})
		var c reply.Code
		if err == nil {
			c, err = reply.Of(arr)
		}
		switch {
		case err != nil:
			l.releaseErr = fmt.Errorf("lease: release %s: %w", l.key, err)
		case c != reply.OK:
			l.mu.Lock()
			l.loseLocked()
			l.mu.Unlock()
			l.releaseErr = ErrLost
		}
	})
	return l.releaseErr
}
