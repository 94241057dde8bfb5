package lockout

import (
	"sync"
	"sync/atomic"
	"time"
)

// sweepEvery is how often expired locks are dropped, at most.
const sweepEvery = int64(time.Second)

// table remembers locks until they expire. Every request asks it, so a
// lookup in an empty table is one atomic load; it holds at most max
// entries, so an attack from many addresses cannot grow it without bound.
type table[K comparable] struct {
	mu    sync.RWMutex
	until map[K]int64 // clock() at which the lock ends
	// n is len(until), read without the lock.
	n         atomic.Int64
	nextSweep atomic.Int64
}

// locked returns how long k stays locked, 0 when it is not. A table
// without locks answers from one atomic load, before the clock is read.
func (t *table[K]) locked(k K) time.Duration {
	if t.n.Load() == 0 {
		return 0
	}
	return t.wait(k, clock())
}

// wait returns how long k stays locked after now, 0 when it is not.
func (t *table[K]) wait(k K, now int64) time.Duration {
	t.sweep(now)
	t.mu.RLock()
	u, ok := t.until[k]
	t.mu.RUnlock()
	if !ok || u <= now {
		return 0
	}
	return time.Duration(u - now)
}

// lock locks k until the clock reaches until (now is the clock). A new
// lock is always kept: a full table is brought down to seven eighths,
// expired locks first, then arbitrary ones, so the cost of the scan is
// shared by many locks. A lock dropped early lets one more attempt of its
// caller be checked: if it fails, its bucket in Redis is still empty and
// locks the caller again.
func (t *table[K]) lock(k K, until, now int64, max int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.until == nil {
		t.until = make(map[K]int64)
	}
	if _, ok := t.until[k]; !ok && len(t.until) >= max {
		t.dropExpired(now)
		for d := range t.until {
			if len(t.until) <= max-1-max/8 {
				break
			}
			delete(t.until, d)
		}
	}
	if until > t.until[k] {
		t.until[k] = until
	}
	t.n.Store(int64(len(t.until)))
}

// sweep drops expired locks, at most once every sweepEvery, so that a
// table whose locks have all ended is empty again and cheap to ask.
func (t *table[K]) sweep(now int64) {
	next := t.nextSweep.Load()
	if now < next || !t.nextSweep.CompareAndSwap(next, now+sweepEvery) {
		return
	}
	t.mu.Lock()
	t.dropExpired(now)
	t.n.Store(int64(len(t.until)))
	t.mu.Unlock()
}

func (t *table[K]) dropExpired(now int64) {
	for k, u := range t.until {
		if u <= now {
			delete(t.until, k)
		}
	}
}

// len is the number of locks held, expired ones included.
func (t *table[K]) len() int { return int(t.n.Load()) }
