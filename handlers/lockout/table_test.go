package lockout

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func TestTableStaysBoundedUnderManyAddresses(t *testing.T) {
	t.Parallel()
	var tb table[netip.Addr]
	const max = 64
	now := int64(0)
	var last netip.Addr
	for i := 0; i < 10_000; i++ {
		last = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		tb.lock(last, now+int64(time.Minute), now, max)
		if n := tb.len(); n > max {
			t.Fatalf("%d entries after %d locks, cap %d", n, i+1, max)
		}
	}
	// The newest lock is always kept.
	if tb.wait(last, now) == 0 {
		t.Fatal("the newest lock was dropped")
	}
}

func TestTableDropsExpiredLocksFirst(t *testing.T) {
	t.Parallel()
	const max = 8
	live := int64(time.Hour)
	// A full table drops 2 of its 8 locks; were they picked at random, as
	// map order does, "live" would be among them 1 time in 4: 50 tables
	// make that certain to show.
	for range 50 {
		var tb table[string]
		for i := 0; i < max-1; i++ {
			tb.lock(fmt.Sprint("old", i), 10, 0, max) // expired by now = 100
		}
		tb.lock("live", live, 0, max)
		tb.lock("new", live, 100, max)
		if tb.wait("live", 100) == 0 || tb.wait("new", 100) == 0 {
			t.Fatal("a live lock was dropped while expired ones could go")
		}
	}
}

func TestTableLockExpires(t *testing.T) {
	t.Parallel()
	var tb table[string]
	tb.lock("k", 1000, 0, 8)
	if w := tb.wait("k", 400); w != 600 {
		t.Fatalf("wait at 400 = %v, want 600ns", w)
	}
	if w := tb.wait("other", 400); w != 0 {
		t.Fatalf("an unlocked key waits %v", w)
	}
	// A lock only ever lengthens: a shorter one does not cut it.
	tb.lock("k", 500, 400, 8)
	if w := tb.wait("k", 400); w != 600 {
		t.Fatalf("wait after a shorter lock = %v, want 600ns", w)
	}
	if w := tb.wait("k", 1000+sweepEvery); w != 0 {
		t.Fatalf("wait after the lock ended = %v", w)
	}
	// The sweep emptied the table, so lookups are one atomic load again.
	if n := tb.len(); n != 0 {
		t.Fatalf("%d entries left after every lock ended", n)
	}
}
