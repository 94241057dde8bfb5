package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// TestUnreplicatedEntriesWaitForTheReplicas: with WAIT on, a paid entry
// the replica does not hold (here: the replica is paused) is not written
// to Postgres, where a failover to that replica would leave a sale Redis
// sells again; once the replica has it, it is.
func TestUnreplicatedEntriesWaitForTheReplicas(t *testing.T) {
	t.Parallel()
	rs, b, w := replicatedWorker(t)

	first := record("ev_repl", 2)
	b.confirmHashed(t, first, "r1", 1_700_000_000_000)
	if n := drain(t, w); n != 1 {
		t.Fatalf("wrote %d entries with the replica in sync, want 1", n)
	}
	b.assertAllWritten(t, first)

	w.Replication.Timeout = 300 * time.Millisecond
	rs.Replicas[0].Pause()
	resumed := false
	defer func() {
		if !resumed {
			rs.Replicas[0].Resume()
		}
	}()
	second := record("ev_repl", 1)
	b.confirmHashed(t, second, "r2", 1_700_000_000_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := w.DrainOnce(ctx); !errors.Is(err, errNotReplicated) || n != 0 {
		t.Fatalf("DrainOnce with the replica paused: wrote %d, err %v; want 0 and errNotReplicated", n, err)
	}
	b.assertOrders(t, first)

	rs.Replicas[0].Resume()
	resumed = true
	w.Replication.Timeout = 10 * time.Second
	if n := drain(t, w); n != 1 {
		t.Fatalf("wrote %d entries once the replica was back, want 1", n)
	}
	b.assertAllWritten(t, first, second)
}

// TestStreamShortOfReplicasHoldsBackOnlyItsOwn: when the replicas of one
// stream cannot be asked for (here its entry stopped being pending
// between the read and the claim, as when another worker took it), the
// other streams' entries of the round are written all the same, and the
// round reports the one held back.
func TestStreamShortOfReplicasHoldsBackOnlyItsOwn(t *testing.T) {
	t.Parallel()
	_, b, w := replicatedWorker(t)
	ctx := context.Background()
	held, written := record("ev_held", 1), record("ev_kept", 1)
	if keys.Partition(held.EventID) == keys.Partition(written.EventID) {
		t.Fatal("the two events share a partition")
	}
	heldID := b.confirmHashed(t, held, "r1", 1_700_000_000_000)
	b.confirmHashed(t, written, "r2", 1_700_000_000_000)
	w.testHook = func(stage string) error {
		if stage == "read" {
			return b.rc.Do(ctx, b.rc.B().Xack().Key(b.space.Paid(keys.Partition(held.EventID))).Group(w.group()).Id(heldID).Build()).Error()
		}
		return nil
	}
	n, err := w.DrainOnce(ctx)
	heldKey, keptKey := b.space.Paid(keys.Partition(held.EventID)), b.space.Paid(keys.Partition(written.EventID))
	if n != 1 || !errors.Is(err, errNotPending) || errors.Is(err, errNotReplicated) ||
		!strings.Contains(err.Error(), "wait for the replicas of "+heldKey+": ") || strings.Contains(err.Error(), keptKey) {
		t.Fatalf("DrainOnce: wrote %d, err %v; want 1 written and errNotPending for %s alone", n, err, heldKey)
	}
	b.assertOrders(t, written)
}

// replicatedWorker is a worker on a primary with one replica of the test's
// own, waiting for that replica. WAIT returns as soon as the replica
// acknowledges: a long timeout while it is in sync costs nothing but keeps
// a loaded machine from failing a test (a test that pauses it shortens it).
func replicatedWorker(t *testing.T) (*redistest.Replicated, *bundle, *Worker) {
	t.Helper()
	rs := redistest.StartReplicated(t, 1)
	b := &bundle{rc: rs.Primary.Client(t), space: keys.Space{}, pool: pgtest.New(t)}
	w := b.worker("w")
	w.Replication = &redisstate.Replication{Replicas: 1, Timeout: 10 * time.Second}
	if err := w.EnsureGroups(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rs, b, w
}
