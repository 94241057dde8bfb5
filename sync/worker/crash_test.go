package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// The crashing worker is this test binary run again with these variables
// set: only the test binary reads them, so no crash hook ships in ticketd.
const (
	crashAtEnv     = "TICKETD_TEST_WORKER_CRASH_AT" // the hook stage to die at
	crashPrefixEnv = "TICKETD_TEST_WORKER_PREFIX"   // the parent's key space
	crashDBEnv     = "TICKETD_TEST_WORKER_DB"       // the parent's database
	crashBatch     = 4                              // entries read per stream per round
)

// TestFaultWorkerCrashPoints kills a sync worker process (SIGKILL, sent by
// the process to itself from the round's hook, so it dies exactly there:
// no deferred clean-up, its liveness key left to expire, its connections
// dropped mid-use) at each point of a round that matters for exactly-once
// delivery, then starts another worker: Postgres holds exactly one row per
// order, the pending list is empty and the streams drained, and the dead
// consumer is gone from the groups.
//
//   - read: entries read (pending with the dead worker), nothing committed;
//   - written: the batch committed to Postgres, not acknowledged: the
//     successor writes it again, and ON CONFLICT DO NOTHING keeps it once;
//   - acked: committed and acknowledged, later rounds not read yet.
func TestFaultWorkerCrashPoints(t *testing.T) {
	if stage := os.Getenv(crashAtEnv); stage != "" {
		crashingWorker(t, stage)
		return
	}
	t.Parallel()
	const evA, evB, perEvent = "ev_crash_a", "ev_crash_b", 10
	if keys.Partition(evA) == keys.Partition(evB) {
		t.Fatal("test events share a partition; pick others")
	}
	// The first round reads crashBatch entries from each of the two streams.
	const first = 2 * crashBatch
	for _, tc := range []struct {
		stage string
		// what the dead worker left: rows in Postgres, entries pending
		// with it, entries still on the streams
		rows, pending, length int
	}{
		{stage: "read", rows: 0, pending: first, length: 2 * perEvent},
		{stage: "written", rows: first, pending: first, length: 2 * perEvent},
		{stage: "acked", rows: first, pending: 0, length: 2*perEvent - first},
	} {
		t.Run(tc.stage, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var recs []orders.Record
			for i := range 2 * perEvent {
				ev := evA
				if i%2 == 1 {
					ev = evB
				}
				r := record(ev, 2)
				recs = append(recs, r)
				b.confirmHashed(t, r, "psp-"+r.OrderID, 1_700_000_000_000)
			}

			out := runCrashingWorker(t, tc.stage, b)
			rows := b.count(t, `SELECT count(*) FROM orders`)
			length, pending := b.streams(t)
			if rows != tc.rows || int(pending) != tc.pending || int(length) != tc.length {
				t.Fatalf("killed at %s: Postgres %d rows, %d pending, %d on the streams; want %d, %d, %d (the kill did not land at its point)\n%s",
					tc.stage, rows, pending, length, tc.rows, tc.pending, tc.length, out)
			}

			// The successor is a new process in production (a new
			// consumer name); it takes A over once A's liveness key has
			// expired (1 s in the crashing worker).
			waitWithin(t, 10*time.Second, "the dead worker's liveness key to expire", func() bool {
				n, err := b.rc.Do(context.Background(), b.rc.B().Exists().Key(b.space.WorkerAlive("A")).Build()).AsInt64()
				return err == nil && n == 0
			})
			n := drain(t, b.worker("B"))
			b.assertAllWritten(t, recs...) // one row per order, its lines, tickets and outbox row once; XLEN 0, XPENDING 0
			if parts := b.consumerParts(t, "A"); len(parts) != 0 {
				t.Fatalf("dead consumer A is still in the groups of partitions %v", parts)
			}
			if s := b.backlog(t); s != (BacklogStats{}) {
				t.Fatalf("backlog after the restart: %+v, want zero", s)
			}
			doubles := b.count(t, `SELECT count(*) - count(DISTINCT id) FROM orders`)
			faultreport.Print(t, faultreport.Report{
				Injected: fmt.Sprintf("kill -9 of the sync worker process at %q in its first round (batch %d a stream, 2 streams)", tc.stage, crashBatch),
				Load:     fmt.Sprintf("%d paid orders queued; before the restart Postgres had %d rows, %d entries pending, %d on the streams; the successor settled %d", len(recs), rows, pending, length, n),
				Counts:   fmt.Sprintf("Postgres rows %d = paid %d; doubles %d; pending 0; streams drained; dead consumer removed", b.count(t, `SELECT count(*) FROM orders`), len(recs), doubles),
			})
		})
	}
}

// runCrashingWorker runs this test binary as worker "A" told to die at
// stage, waits for it, and checks it died of SIGKILL, not of anything
// else. It returns the process's output.
func runCrashingWorker(t *testing.T, stage string, b *bundle) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFaultWorkerCrashPoints$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashAtEnv+"="+stage, crashPrefixEnv+"="+b.space.Prefix, crashDBEnv+"="+pgtest.URLOf(t, b.pool))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("crashing worker at %s: %v, want it killed\n%s", stage, err, out.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crashing worker at %s ended with %v, want SIGKILL at the hook\n%s", stage, err, out.String())
	}
	return out.String()
}

// crashingWorker is the child side: worker "A" on the parent's key space
// and database, which kills its own process at stage.
func crashingWorker(t *testing.T, stage string) {
	ctx := context.Background()
	rc := redistest.Client(t, redistest.URL())
	pool, err := pgxpool.New(ctx, os.Getenv(crashDBEnv))
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{Redis: rc, Space: keys.Space{Prefix: os.Getenv(crashPrefixEnv)}, Pool: pool, Consumer: "A",
		Batch: crashBatch, ClaimIdle: time.Hour, aliveTTL: time.Second, aliveEvery: 200 * time.Millisecond}
	w.testHook = func(s string) error {
		if s == stage {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; run nothing more
		}
		return nil
	}
	n, err := w.DrainOnce(ctx)
	// Reaching here means the stage never came: the parent sees a normal
	// exit, not SIGKILL, and fails.
	t.Fatalf("worker A drained %d entries (%v) without reaching %q", n, err, stage)
}
