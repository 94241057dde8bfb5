package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/sync/fence"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// A rebuild's raise waits for a write transaction in flight (one that
// passed its check) to end; a write that checks the old epoch after the
// raise is refused, one with the new epoch passes, and another prefix's
// writes are not concerned.
func TestRaiseWaitsForWritesInFlightAndRefusesTheOldEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	if e, err := fence.Epoch(ctx, pool, "a:"); err != nil || e != 0 {
		t.Fatalf("epoch before any raise: %d %v, want 0", e, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // committed below
	if _, err := tx.Exec(ctx, fence.CheckSQL, "a:", int64(0)); err != nil {
		t.Fatalf("a write's check at epoch 0: %v", err)
	}
	raised := make(chan error, 1)
	go func() {
		_, err := fence.Raise(ctx, pool, "a:")
		raised <- err
	}()
	select {
	case err := <-raised:
		t.Fatalf("the raise ended (%v) while a write that passed its check was in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the write in flight commits: %v", err)
	}
	select {
	case err := <-raised:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the raise did not end 10 s after the write in flight committed")
	}

	check := func(prefix string, epoch int64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, fence.CheckSQL, prefix, epoch)
			return err
		})
	}
	if err := check("a:", 0); !fence.Moved(err) {
		t.Fatalf("a write read before the raise: %v, want it refused (Moved)", err)
	}
	if e, err := fence.Epoch(ctx, pool, "a:"); err != nil || e != 1 {
		t.Fatalf("epoch after the raise: %d %v, want 1", e, err)
	}
	if err := check("a:", 1); err != nil {
		t.Fatalf("a write read after the raise: %v", err)
	}
	if err := check("b:", 0); err != nil {
		t.Fatalf("another prefix's write: %v", err)
	}
	if e, err := fence.Raise(ctx, pool, "a:"); err != nil || e != 2 {
		t.Fatalf("a second raise: %d %v, want 2", e, err)
	}
}
