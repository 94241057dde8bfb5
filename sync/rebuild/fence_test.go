package rebuild_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/sync/fence"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// A rebuild reads the streams and Postgres only once a sync worker's write
// in flight (past the fence's check) has committed, and raises the epoch
// first, so a write of entries read before it is refused (sync/fence): no
// order read from the Redis it replaces lands after its snapshot.
func TestRebuildReadsAfterTheWritesInFlight(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	epoch, err := fence.Epoch(ctx, s.Pool, s.Space.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // committed below
	if _, err := tx.Exec(ctx, fence.CheckSQL, s.Space.Prefix, epoch); err != nil {
		t.Fatalf("the write's check: %v", err)
	}
	var committed atomic.Bool
	readAfter := make(chan bool, 1)
	r := *s.Rebuilder
	rebuild.SetAfterRead(&r, func() { readAfter <- committed.Load() })
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	committed.Store(true)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the rebuild did not end 30 s after the write in flight committed")
	}
	if !<-readAfter {
		t.Fatal("the rebuild read while a write that passed the fence was in flight")
	}
	if e, err := fence.Epoch(ctx, s.Pool, s.Space.Prefix); err != nil || e != epoch+1 {
		t.Fatalf("epoch after the rebuild: %d %v, want %d", e, err, epoch+1)
	}
}

// An order the rebuild found only on a stream, and which the sync worker
// writes while the rebuild runs (its entry acknowledged, the order hash's
// record dropped and its expiry set), keeps that expiry: the rebuild writes
// no record or PERSIST over it, which would keep the hash for good.
func TestAnOrderWrittenDuringTheRebuildKeepsItsExpiry(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 1})
	if c := s.Confirm(t, "a", o.OrderID, o.Amount, "psp-1"); c.Status != 200 {
		t.Fatalf("confirm: %s", c)
	}
	r := *s.Rebuilder
	rebuild.SetAfterRead(&r, func() {
		if n := s.Drain(t); n != 1 {
			t.Errorf("the worker wrote %d entries during the rebuild, want the one paid order", n)
		}
	})
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	okey, _ := s.Space.Order(o.OrderID)
	ttl, err := s.Redis.Do(ctx, s.Redis.B().Pttl().Key(okey).Build()).AsInt64()
	if err != nil || ttl <= 0 {
		t.Fatalf("the written order's hash: PTTL %d %v, want its retention's expiry", ttl, err)
	}
	if n := s.Count(t, `SELECT count(*) FROM orders WHERE id = $1`, o.OrderID); n != 1 {
		t.Fatalf("the order is in Postgres %d times, want once", n)
	}
}
