package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/lease"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func setup(t *testing.T) (rueidis.Client, string) {
	t.Helper()
	c, space := redistest.New(t)
	return c, space.Prefix + "{test}:lock"
}

// owner returns the token the lease key holds, "" when it is gone.
func owner(t *testing.T, c rueidis.Client, key string) string {
	t.Helper()
	v, err := c.Do(context.Background(), c.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ownClient returns a client of the test Redis of its own, for a test that
// closes it to cut its lease holder off from Redis.
func ownClient(t *testing.T) rueidis.Client {
	t.Helper()
	opt, err := rueidis.ParseURL(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func release(t *testing.T, l *lease.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// A lease is exclusive while held, and free again once released.
func TestSecondAcquireFailsWhileHeldAndSucceedsAfterRelease(t *testing.T) {
	c, key := setup(t)
	ctx := context.Background()
	a, err := lease.Acquire(ctx, c, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Acquire(ctx, c, key, time.Minute); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second acquire while held: %v, want ErrHeld", err)
	}
	release(t, a)
	if got := owner(t, c, key); got != "" {
		t.Fatalf("lease key after release: %q, want it deleted", got)
	}
	b, err := lease.Acquire(ctx, c, key, time.Minute)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	release(t, b)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a second Release must repeat the first one's answer: %v", err)
	}
}

// The keepalive holds a lease past its TTL for as long as its holder
// works: nobody else gets it meanwhile.
func TestLeaseOutlivesItsTTLWhileHeld(t *testing.T) {
	c, key := setup(t)
	ctx := context.Background()
	// A TTL long enough that a loaded machine (two race-enabled test runs
	// on two cores) does not starve the keepalive, which extends every
	// third of it, for a whole TTL: 300 ms once lost the lease there.
	const ttl = time.Second
	l, err := lease.Acquire(ctx, c, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	tok := owner(t, c, key)
	start := time.Now()
	for time.Since(start) < 3*ttl {
		if _, err := lease.Acquire(ctx, c, key, ttl); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("acquire of a lease held for %s (TTL %s): %v, want ErrHeld", time.Since(start), ttl, err)
		}
		time.Sleep(ttl / 4)
	}
	if got := owner(t, c, key); got != tok || l.Err() != nil {
		t.Fatalf("after 3 TTLs: key holds %q (want %q), Err %v", got, tok, l.Err())
	}
	select {
	case <-l.Lost():
		t.Fatal("a held lease reported lost")
	default:
	}
	release(t, l)
}

// An owner whose lease ran out and was taken by another never deletes the
// other's lease, and learns that it lost its own.
func TestReleaseAfterExpiryLeavesTheNextOwnersLease(t *testing.T) {
	c, key := setup(t)
	ctx := context.Background()
	a, err := lease.Acquire(ctx, c, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The key expires (as it would after a stall of a TTL)...
	if err := c.Do(ctx, c.B().Del().Key(key).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// ...and another owner takes it.
	b, err := lease.Acquire(ctx, c, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tok := owner(t, c, key)
	if err := a.Extend(ctx); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("extend of a lease another owner took: %v, want ErrLost", err)
	}
	if err := a.Release(ctx); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release of a lost lease: %v, want ErrLost", err)
	}
	if got := owner(t, c, key); got != tok {
		t.Fatalf("the next owner's lease after the old owner's release: %q, want %q", got, tok)
	}
	if b.Err() != nil {
		t.Fatalf("the next owner's lease: %v", b.Err())
	}
	release(t, b)
}

// The keepalive reports a lease taken from under its holder on Lost and Err.
func TestLossIsReported(t *testing.T) {
	c, key := setup(t)
	ctx := context.Background()
	const ttl = 150 * time.Millisecond
	l, err := lease.Acquire(ctx, c, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Set().Key(key).Value("someone-else").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a lease taken by another owner was not reported lost")
	}
	if err := l.Err(); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Err of a lost lease: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release of a lost lease: %v, want ErrLost", err)
	}
	if got := owner(t, c, key); got != "someone-else" {
		t.Fatalf("the other owner's lease after release: %q", got)
	}
}

// A lease whose TTL passed without a confirmed extend counts as lost, even
// before the keepalive could notice: here Redis stops answering.
func TestLeaseUnconfirmedForATTLIsLost(t *testing.T) {
	_, key := setup(t)
	lc := ownClient(t)
	const ttl = 150 * time.Millisecond
	l, err := lease.Acquire(context.Background(), lc, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	lc.Close() // the holder can no longer reach Redis
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a lease that could not be extended for a TTL was not reported lost")
	}
	if err := l.Extend(context.Background()); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("extend after the TTL passed: %v, want ErrLost", err)
	}
	_ = l.Release(context.Background()) // the key expires by itself
}

// Work run under a lease's Context is cancelled, with cause ErrLost, once
// the lease is lost: taken by another owner, or left unconfirmed for a TTL
// (the holder cut off from Redis).
func TestContextEndsWhenTheLeaseIsLost(t *testing.T) {
	const ttl = 150 * time.Millisecond
	wantLost := func(t *testing.T, ctx context.Context) {
		t.Helper()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the context of a lost lease did not end")
		}
		if cause := context.Cause(ctx); !errors.Is(cause, lease.ErrLost) {
			t.Fatalf("cause: %v, want ErrLost", cause)
		}
	}
	t.Run("taken", func(t *testing.T) {
		c, key := setup(t)
		l, err := lease.Acquire(context.Background(), c, key, ttl)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := l.Context(context.Background())
		defer cancel()
		if ctx.Err() != nil {
			t.Fatalf("context of a held lease: %v", ctx.Err())
		}
		if err := c.Do(ctx, c.B().Set().Key(key).Value("someone-else").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		wantLost(t, ctx)
		_ = l.Release(context.Background())
	})
	t.Run("unconfirmed", func(t *testing.T) {
		_, key := setup(t)
		lc := ownClient(t)
		l, err := lease.Acquire(context.Background(), lc, key, ttl)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := l.Context(context.Background())
		defer cancel()
		lc.Close()
		wantLost(t, ctx)
		_ = l.Release(context.Background())
	})
}

// AcquireWait gets the lease once its holder releases it, and gives up
// when its context ends.
func TestAcquireWaitGetsTheLeaseWhenReleased(t *testing.T) {
	c, key := setup(t)
	ctx := context.Background()
	a, err := lease.Acquire(ctx, c, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := lease.AcquireWait(short, c, key, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait while held until the context ends: %v, want DeadlineExceeded", err)
	}

	got := make(chan error, 1)
	var b *lease.Lease
	go func() {
		var err error
		b, err = lease.AcquireWait(ctx, c, key, time.Minute)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("wait returned while the lease was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	tokA := owner(t, c, key)
	release(t, a)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not get the released lease")
	}
	if tok := owner(t, c, key); tok == "" || tok == tokA {
		t.Fatalf("lease key after the waiter got it: %q (first owner %q)", tok, tokA)
	}
	release(t, b)
}

func TestTTLBelowMinimumIsRefused(t *testing.T) {
	c, key := setup(t)
	if _, err := lease.Acquire(context.Background(), c, key, time.Millisecond); err == nil {
		t.Fatal("a 1ms lease was taken")
	}
}
