package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a Local's clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A Local counts as the script does: the burst at once, then one request
// every minute/limit, a refusal saying when the next one fits, and a
// refused request taking nothing.
func TestLocalBurstRefillAndRetryAfter(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := &Local{Now: c.now}
	for i := 1; i <= 5; i++ {
		if r := l.Allow("ip:203.0.113.7:read", 5); !r.Allowed || r.Remaining != int64(5-i) {
			t.Fatalf("call %d = %+v, want allowed with %d remaining", i, r, 5-i)
		}
	}
	r := l.Allow("ip:203.0.113.7:read", 5)
	if r.Allowed || r.RetryAfter != 12*time.Second {
		t.Fatalf("over the burst: %+v, want refused for one interval (12 s at 5 a minute)", r)
	}
	c.add(5 * time.Second)
	if r := l.Allow("ip:203.0.113.7:read", 5); r.Allowed || r.RetryAfter != 7*time.Second {
		t.Fatalf("5 s later: %+v, want refused for 7 s more (a refusal takes nothing)", r)
	}
	c.add(7 * time.Second)
	if r := l.Allow("ip:203.0.113.7:read", 5); !r.Allowed || r.Remaining != 0 {
		t.Fatalf("one interval later: %+v, want one request allowed", r)
	}
	if r := l.Allow("ip:203.0.113.8:read", 5); !r.Allowed || r.Remaining != 4 {
		t.Fatalf("another bucket: %+v, want its own full burst", r)
	}
	if r := l.Allow("ip:203.0.113.7:read", 0); !r.Allowed || r.Remaining != -1 {
		t.Fatalf("no limit: %+v", r)
	}
	c.add(time.Minute)
	if r := l.Allow("ip:203.0.113.7:read", 5); !r.Allowed || r.Remaining != 4 {
		t.Fatalf("a minute later: %+v, want the bucket full again", r)
	}
}

// Goroutines sharing a bucket are let through exactly the burst.
func TestLocalConcurrentCallersShareTheBurst(t *testing.T) {
	l := &Local{}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if l.Allow("ip:198.51.100.1:read", 120).Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// 800 calls in far less than the half second that refills one.
	if n := allowed.Load(); n < 120 || n > 121 {
		t.Fatalf("%d of 800 allowed, want the burst of 120", n)
	}
}

// A flood of distinct callers cannot grow a Local past MaxKeys, and the
// caller hammering it keeps its count (still refused) through the flood.
func TestLocalMemoryIsBoundedUnderAFloodOfKeys(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := &Local{MaxKeys: 1024, Now: c.now}
	for range 200 {
		l.Allow("ip:192.0.2.1:read", 120)
	}
	if r := l.Allow("ip:192.0.2.1:read", 120); r.Allowed {
		t.Fatalf("the hammering caller before the flood: %+v, want refused", r)
	}
	for i := range 100_000 {
		l.Allow(fmt.Sprintf("ip:10.%d.%d.%d:read", i>>16, i>>8&255, i&255), 120)
		if i%1000 == 0 {
			c.add(time.Millisecond) // the flood's buckets refill as the clock runs
		}
	}
	if n := l.Len(); n > 1024 {
		t.Fatalf("%d buckets kept after 100,000 callers, want at most 1024", n)
	}
	if r := l.Allow("ip:192.0.2.1:read", 120); r.Allowed {
		t.Fatalf("the hammering caller after the flood: %+v, want still refused", r)
	}
}
