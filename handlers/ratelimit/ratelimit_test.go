package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/redistest"
)

func newLimiter(t *testing.T) *Limiter {
	t.Helper()
	c, space := redistest.New(t)
	return &Limiter{Redis: c, Space: space}
}

func allow(t *testing.T, l *Limiter, bucket string, perMinute int64) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := l.Allow(ctx, bucket, perMinute)
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", bucket, perMinute, err)
	}
	return r
}

func TestBurstThenRefusedWithRetryAfter(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	for i := 1; i <= 8; i++ {
		r := allow(t, l, "ip:203.0.113.7:write", 5)
		if i <= 5 {
			if !r.Allowed || r.Remaining != int64(5-i) || r.RetryAfter != 0 {
				t.Fatalf("call %d = %+v, want allowed with %d remaining", i, r, 5-i)
			}
			continue
		}
		if r.Allowed || r.Remaining != 0 {
			t.Fatalf("call %d = %+v, want refused", i, r)
		}
		// One request every 12s at 5/min: the wait is at most one interval.
		if r.RetryAfter <= 0 || r.RetryAfter > 12*time.Second {
			t.Fatalf("call %d RetryAfter = %v, want in (0, 12s]", i, r.RetryAfter)
		}
	}
}

func TestBucketsAreIndependent(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	for i := 0; i < 2; i++ {
		allow(t, l, "ch:a:checkout", 2)
	}
	if r := allow(t, l, "ch:a:checkout", 2); r.Allowed {
		t.Fatalf("bucket a not exhausted: %+v", r)
	}
	if r := allow(t, l, "ch:b:checkout", 2); !r.Allowed || r.Remaining != 1 {
		t.Fatalf("bucket b = %+v, want a fresh bucket", r)
	}
	if r := allow(t, l, "ch:a:status", 2); !r.Allowed {
		t.Fatalf("another endpoint class of a = %+v, want a fresh bucket", r)
	}
}

func TestConcurrentCallersShareOneLimit(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	const callers, limit = 50, 20
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Allow(context.Background(), "ip:198.51.100.1:read", limit)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Allowed {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	// The bucket refills one request every 3s; only a machine stalled that
	// long may see more than the burst.
	want := int64(limit) + int64(time.Since(start)/(3*time.Second))
	if got := allowed.Load(); got < limit || got > want {
		t.Fatalf("%d of %d concurrent calls allowed, want %d", got, callers, limit)
	}
}

// TestLeasedLimitHoldsAcrossNodes: two nodes serving a large limit from
// leases together pass the burst and no more, and ask Redis only a fraction
// of the time.
func TestLeasedLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	a := newLimiter(t)
	b := &Limiter{Redis: a.Redis, Space: a.Space}
	const limit = LeaseFrom // a burst of 6000, then 100 a second, slices of 10
	var allowed, calls atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, l := range []*Limiter{a, b} {
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(l *Limiter) {
				defer wg.Done()
				for i := 0; i < 2500; i++ {
					r, err := l.Allow(context.Background(), "ch:flash:checkout", limit)
					if err != nil {
						t.Error(err)
						return
					}
					calls.Add(1)
					if r.Allowed {
						allowed.Add(1)
					}
				}
			}(l)
		}
	}
	wg.Wait()
	refill := int64(time.Since(start).Seconds()*limit/60) + 1
	// Leases only ever hold requests taken from the bucket: never more than
	// the burst plus what refilled. Leased requests left unused when the
	// calls stop are at most one slice per goroutine.
	if got := allowed.Load(); got > limit+refill || got < limit-8*10 {
		t.Fatalf("%d of %d calls allowed, want %d (+%d refilled)", got, calls.Load(), limit, refill)
	}
	if n := a.calls.Load() + b.calls.Load(); n*5 > allowed.Load() {
		t.Fatalf("%d script runs for %d allowed requests: leases are not used", n, allowed.Load())
	}
}

func TestRefusedCallerIsAllowedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	const bucket, limit = "ss:buyer:session", 60 // one a second
	var refused Result
	for i := 0; i < 10*limit; i++ {
		if r := allow(t, l, bucket, limit); !r.Allowed {
			refused = r
			break
		}
	}
	if refused.RetryAfter <= 0 || refused.RetryAfter > time.Second {
		t.Fatalf("refusal RetryAfter = %v, want in (0, 1s]", refused.RetryAfter)
	}
	// Refused calls take nothing: hammering does not push the wait out.
	for i := 0; i < 3; i++ {
		if r := allow(t, l, bucket, limit); r.Allowed || r.RetryAfter > refused.RetryAfter {
			t.Fatalf("repeat refusal = %+v, want refused within %v", r, refused.RetryAfter)
		}
	}
	time.Sleep(refused.RetryAfter + 20*time.Millisecond)
	if r := allow(t, l, bucket, limit); !r.Allowed {
		t.Fatalf("after waiting RetryAfter: %+v, want allowed", r)
	}
}

func TestBucketKeyExpiresWhenRefilled(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	allow(t, l, "ip:192.0.2.1:write", 5)
	key := l.Space.RateLimit("ip:192.0.2.1:write")
	if ks := redistest.Keys(t, l.Redis, l.Space); len(ks) != 1 || ks[0] != key {
		t.Fatalf("keys = %v, want only %s", ks, key)
	}
	ctx := context.Background()
	ttl, err := l.Redis.Do(ctx, l.Redis.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	// One request at 5/min refills in 12s.
	if ttl <= 0 || ttl > 12000 {
		t.Fatalf("PTTL = %d ms, want in (0, 12000]", ttl)
	}
}

func TestZeroLimitIsUnlimitedWithoutRedis(t *testing.T) {
	t.Parallel()
	l := &Limiter{} // no Redis: a call would panic
	for _, n := range []int64{0, -1} {
		r, err := l.Allow(context.Background(), "any", n)
		if err != nil || !r.Allowed || r.RetryAfter != 0 {
			t.Fatalf("Allow(limit %d) = %+v, %v; want allowed", n, r, err)
		}
	}
}

func TestRedisFailureIsAnError(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "ip:192.0.2.9:read", 10); err == nil {
		t.Fatal("Allow with a cancelled context succeeded")
	}
}

func BenchmarkAllow(b *testing.B) {
	c, space := redistest.New(b)
	l := &Limiter{Redis: c, Space: space}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Allow(ctx, "bench", 1<<40); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Goroutines that find a node's lease empty at once wait for one refill
// instead of each running the script (a Redis write apiece, fsynced on a
// durable Redis): one script run serves them all.
func TestOneRefillServesConcurrentCallers(t *testing.T) {
	rc, space := redistest.New(t)
	l := &Limiter{Redis: rc, Space: space}
	const callers = 50 // a slice of a 60,000/min bucket is 100
	var wg sync.WaitGroup
	var allowed atomic.Int64
	start := make(chan struct{})
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := l.Allow(context.Background(), "k:refill", 60000)
			if err == nil && r.Allowed {
				allowed.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if allowed.Load() != callers {
		t.Fatalf("%d of %d allowed", allowed.Load(), callers)
	}
	if n := l.calls.Load(); n != 1 {
		t.Fatalf("%d script runs for %d concurrent callers of an empty lease, want 1", n, callers)
	}
}
