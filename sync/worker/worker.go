// Package worker is the sync worker: it reads the paid-order streams (one
// per partition) as a Redis consumer group and writes each paid order (one
// orders row, its lines and tickets in it) and its outbox row to Postgres.
//
// Delivery is at least once. A batch is written in one transaction whose
// inserts all do nothing on conflict, and only then deleted from its
// stream and acknowledged; writing an entry again changes nothing. Entries
// that can never be written (bad JSON, missing fields, values Postgres
// refuses) are kept in dead_letters and acknowledged, so they never block a
// stream.
//
// A worker that dies between reading and acknowledging leaves its entries
// pending under its consumer name. While a worker runs it keeps a liveness
// key (keys.Space.WorkerAlive) that lives 5 s and is refreshed every second
// by a goroutine of its own, so a slow round never lets it lapse; a worker
// that stops deletes it. On start and every ClaimEvery, each worker lists
// the consumers of the groups (XINFO CONSUMERS) and takes over, at once,
// the pending entries of every consumer without a liveness key: one script
// (lua/worker_takeover.lua) moves them to itself, and on the next call,
// finding the consumer empty, removes it from the group; the entries are
// written and acknowledged like any others, and a log line names the
// consumer and the count. So the entries of a worker that stopped are
// written at its successor's start, and those of a killed one within about
// 5 s (its key's expiry: the next look is timed for it), not after
// ClaimIdle. XAUTOCLAIM after ClaimIdle stays as the backstop for a worker
// that is alive but stuck.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/sync/fence"
)

// Defaults of the Worker's zero fields.
const (
	DefaultGroup = "ticketd"
	// DefaultBatch is the most entries read from one stream per round. A
	// flash sale puts every paid order of its event on one stream, and
	// the worker writes a round at a time, so this bounds how fast one
	// event's orders reach Postgres: at 256 a 6,000/s sale left the record
	// 9 s behind after 30 s; at 1024, 2 s.
	DefaultBatch        = 1024
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultBusyInterval is the pause after a pass that found entries but
	// no full batch: long enough for the next batch to grow (fewer, larger
	// transactions), short enough that write-through stays well under a
	// second behind. Only the partitions that gave entries are read after
	// it; the others wait for the sweep of every partition, every
	// PollInterval while entries come (idleSweepTimes).
	DefaultBusyInterval = 10 * time.Millisecond
	// idleSweepTimes bounds how far the sweep of every partition backs off
	// while the streams stay empty: to this many PollIntervals (1 s by
	// default). An idle node's sweeps (64 XREADGROUPs every 100 ms) were
	// two fifths of the Redis time it cost; a sale on this node is read
	// at once all the same (Nudge), one on a node without a worker within
	// the backed-off sweep.
	idleSweepTimes    = 10
	DefaultClaimIdle  = 30 * time.Second
	DefaultClaimEvery = 5 * time.Second
)

// roundTimeout bounds one read-write-acknowledge round. A round runs to its
// end even when the caller's context is cancelled, so that a batch that was
// read is written and acknowledged rather than left pending.
const roundTimeout = 30 * time.Second

// Worker moves paid orders from Redis to Postgres. Zero fields take the
// defaults above; Consumer defaults to "<hostname>-<pid>". The fields must
// not change once the worker is in use.
type Worker struct {
	Redis rueidis.Client
	Space keys.Space
	Pool  *pgxpool.Pool

	Group        string
	Consumer     string
	Batch        int
	PollInterval time.Duration
	// ClaimIdle is how long an entry must have been pending with another
	// consumer that is alive (has its liveness key) before this one takes
	// it over: the backstop for a worker stuck mid-round. Keep it well
	// above the time a round takes, or live workers will write each
	// other's batches twice (harmless, but wasted).
	ClaimIdle time.Duration
	// ClaimEvery is how often Run looks for entries to take over: those of
	// stopped consumers and those idle for ClaimIdle.
	ClaimEvery time.Duration
	// Retention is how long a paid order stays in Redis once Postgres has
	// it, for confirm replays and status (orders.Service.Retention, 24h).
	Retention time.Duration
	// Replication, when on, is waited for before a batch is written: the
	// worker writes only entries the replicas hold (replicated).
	Replication *redisstate.Replication
	Logger      *slog.Logger

	consumerOnce sync.Once
	consumer     string

	// aliveUntil is when the liveness key expires at the earliest (Unix
	// ns; 0 when not set). aliveTTL and aliveEvery, when set, replace the
	// key's TTL and refresh interval (tests).
	aliveUntil           atomic.Int64
	aliveTTL, aliveEvery time.Duration

	// nudged holds a bit per partition Nudge named since Run last read
	// them; wake ends Run's idle sleep (one pending wake-up at most).
	nudged   atomic.Uint64
	wakeOnce sync.Once
	wake     chan struct{}

	// epoch is the rebuild fence's epoch (sync/fence) this worker read,
	// when epochKnown: the epoch its writes carry. A write the fence
	// refuses forgets it, so the next round reads it again.
	epoch      atomic.Int64
	epochKnown atomic.Bool

	// testHook, when set, runs at each stage of a round ("read": entries
	// read, nothing written; "written": committed, not acknowledged;
	// "acked": acknowledged and deleted, the round's last step) and
	// after each look for stopped consumers ("takeover"). An error ends the
	// round there, as a crash would.
	testHook func(stage string) error
}

// The partitions fit the bits of nudged.
var _ [64 - keys.Partitions]struct{}

// Nudge tells the worker that partition p's paid stream has a new entry
// (orders.Service.Paid: a sale this node marked paid): Run reads that
// stream at once instead of at its next sweep. It never blocks, and a
// worker that is not running ignores it.
func (w *Worker) Nudge(p int) {
	if p < 0 || p >= keys.Partitions {
		return
	}
	w.nudged.Or(1 << p)
	select {
	case w.wakeCh() <- struct{}{}:
	default: // a wake-up is pending already
	}
}

func (w *Worker) wakeCh() chan struct{} {
	w.wakeOnce.Do(func() { w.wake = make(chan struct{}, 1) })
	return w.wake
}

// takeNudged adds the partitions nudged since the last call to parts.
func (w *Worker) takeNudged(parts []int) []int {
	bits := w.nudged.Swap(0)
	for p := range keys.Partitions {
		if bits&(1<<p) != 0 && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return parts
}

func (w *Worker) group() string {
	if w.Group != "" {
		return w.Group
	}
	return DefaultGroup
}

func (w *Worker) consumerName() string {
	w.consumerOnce.Do(func() {
		w.consumer = w.Consumer
		if w.consumer == "" {
			host, err := os.Hostname()
			if err != nil || host == "" {
				host = "worker"
			}
			w.consumer = host + "-" + strconv.Itoa(os.Getpid())
		}
	})
	return w.consumer
}

func (w *Worker) batch() int                  { return orDefault(w.Batch, DefaultBatch) }
func (w *Worker) pollInterval() time.Duration { return orDefault(w.PollInterval, DefaultPollInterval) }
func (w *Worker) claimIdle() time.Duration    { return orDefault(w.ClaimIdle, DefaultClaimIdle) }
func (w *Worker) claimEvery() time.Duration   { return orDefault(w.ClaimEvery, DefaultClaimEvery) }
func (w *Worker) retention() time.Duration    { return orDefault(w.Retention, orders.DefaultRetention) }

func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (w *Worker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

// EnsureGroups creates the consumer group on every partition's paid stream
// (and the stream itself when missing), reading from the stream's start. A
// group that exists is left as it is.
func (w *Worker) EnsureGroups(ctx context.Context) error {
	parts := make([]int, keys.Partitions)
	for p := range parts {
		parts[p] = p
	}
	return w.createGroups(ctx, parts, "create")
}

// createGroups creates the group on the paid streams of parts, pipelined;
// a group that exists already is fine. verb names the step in errors.
func (w *Worker) createGroups(ctx context.Context, parts []int, verb string) error {
	cmds := make(rueidis.Commands, len(parts))
	for i, p := range parts {
		cmds[i] = w.Redis.B().XgroupCreate().Key(w.Space.Paid(p)).Group(w.group()).Id("0").Mkstream().Build()
	}
	for i, r := range w.Redis.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil && !rueidis.IsRedisBusyGroup(err) {
			return fmt.Errorf("worker: %s group on %s: %w", verb, w.Space.Paid(parts[i]), err)
		}
	}
	return nil
}

// DrainOnce writes everything the paid streams hold for this worker now:
// entries still pending with this consumer, entries of stopped consumers
// (which it then removes), entries other consumers left pending for at
// least ClaimIdle, then new entries until none are left. It returns how
// many entries it wrote or dead-lettered. When ctx ends it stops after the
// round in progress and returns ctx's error. It keeps the liveness key
// while it runs and deletes it on return; do not run it and Run on one
// Worker at the same time. A write refused because a rebuild began after
// its read (sync/fence) is read again, once, under the epoch then.
func (w *Worker) DrainOnce(ctx context.Context) (int, error) {
	defer w.keepAlive(ctx)()
	total, err := w.drain(ctx)
	if fence.Moved(err) {
		n, err := w.drain(ctx)
		return total + n, err
	}
	return total, err
}

// drain is one DrainOnce.
func (w *Worker) drain(ctx context.Context) (int, error) {
	total, _, err := w.pass(ctx, modeOwn, nil)
	if err != nil {
		return total, err
	}
	n, _, err := w.takeOver(ctx)
	total += n
	if err != nil {
		return total, err
	}
	for _, m := range []mode{modeClaim, modeNew} {
		n, _, err := w.pass(ctx, m, nil)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Run drains the streams until ctx ends: new entries of every stream every
// PollInterval while they come, backing off to idleSweepTimes
// PollIntervals while none do, and of a stream Nudge names at once; at
// start and every ClaimEvery, entries of stopped consumers
// and entries idle for ClaimIdle. It keeps the liveness key while it runs.
// When ctx ends it finishes the batch in progress (written and
// acknowledged), deletes the liveness key and returns nil. Redis or
// Postgres failures are logged and retried with backoff; the entries of a
// failed round are retried first.
func (w *Worker) Run(ctx context.Context) error {
	defer w.keepAlive(ctx)()
	var claimDue, takeoverDue time.Time
	var busy []int         // partitions whose last read of new entries gave some
	var sweepDue time.Time // when new entries are next read from every partition
	sweepEvery := w.pollInterval()
	retryOwn := true // a restart under the same consumer name resumes its own pending entries
	backoff := w.pollInterval()
	for ctx.Err() == nil {
		var n int
		var err error
		if retryOwn {
			n, _, err = w.pass(ctx, modeOwn, nil)
			retryOwn = err != nil
		}
		if err == nil && !time.Now().Before(takeoverDue) {
			var c int
			var recheck time.Duration
			c, recheck, err = w.takeOver(ctx)
			n += c
			next := w.claimEvery()
			if recheck > 0 {
				// A consumer holding entries could be found stopped as
				// soon as its key expires: look again then.
				next = min(next, recheck)
			}
			switch {
			case fence.Moved(err):
				// what it took over is this consumer's: the next round reads it again (retryOwn)
				w.logger().Warn("sync worker: a rebuild of the Redis state began after the takeover's read; reading its entries again", "err", err)
			case err != nil:
				// New entries must not wait on a takeover that keeps
				// failing: try it again at the next look.
				w.logger().Warn("sync worker: taking over stopped consumers' entries failed; trying again later", "err", err)
			}
			if err != nil {
				err = nil
				retryOwn = true // what it took over and could not write is this consumer's now
			}
			takeoverDue = time.Now().Add(next)
		}
		if err == nil && !time.Now().Before(claimDue) {
			var c int
			c, _, err = w.pass(ctx, modeClaim, nil)
			n += c
			claimDue = time.Now().Add(w.claimEvery())
		}
		if err == nil {
			// While sales come in, the partitions that gave entries are
			// read again after DefaultBusyInterval, the others only at
			// the sweep of every partition: a sale puts its orders on its
			// event's partition alone, and 63 empty reads every 10 ms were
			// most of the worker's Redis commands (decisions.md, Sync
			// worker). The sweep comes every PollInterval, and backs off
			// while the sweeps find nothing; a partition this node sold on
			// is read at once (Nudge).
			parts := w.takeNudged(slices.Clone(busy))
			full := !time.Now().Before(sweepDue)
			if full {
				parts = nil
			}
			if full || len(parts) > 0 {
				var c int
				c, busy, err = w.pass(ctx, modeNew, parts)
				n += c
				switch {
				case err != nil: // the next round sweeps (below)
				case full:
					if c > 0 {
						sweepEvery = w.pollInterval()
					} else {
						sweepEvery = min(2*sweepEvery, idleSweepTimes*w.pollInterval())
					}
					sweepDue = time.Now().Add(sweepEvery)
				case c > 0:
					// sales come in: the other partitions are swept every
					// PollInterval again, however busy this one stays
					sweepEvery = w.pollInterval()
					if next := time.Now().Add(sweepEvery); next.Before(sweepDue) {
						sweepDue = next
					}
				}
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			retryOwn = true
			busy = nil
			// a round after a failure reads every partition (the nudges
			// it took are in them), and backs off from the start
			sweepDue, sweepEvery = time.Time{}, w.pollInterval()
			if fence.Moved(err) {
				// nothing failed: a rebuild began after the read, so the
				// entries are read again at once, from the Redis it sees
				w.logger().Warn("sync worker: a rebuild of the Redis state began after this round's read; reading its entries again", "err", err)
				continue
			}
			w.logger().Error("sync worker: round failed; retrying", "err", err, "retry_in", backoff)
			sleep(ctx, backoff, nil)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = w.pollInterval()
		switch {
		case n == 0:
			// idle: until the next sweep, claim or takeover, or a nudge
			wait := time.Until(sweepDue)
			for _, due := range []time.Time{claimDue, takeoverDue} {
				// a look that is due again at once waits a PollInterval,
				// as every idle round did before the sweeps backed off
				wait = min(wait, max(time.Until(due), w.pollInterval()))
			}
			sleep(ctx, wait, w.wakeCh())
		case n < w.batch():
			sleep(ctx, min(DefaultBusyInterval, w.pollInterval()), nil)
		}
	}
	return nil
}

// sleep waits d, or until ctx ends or wake (nil: never) fires.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}

// fenceEpoch is the epoch the entries a round is about to read are written
// under (sync/fence): read from Postgres when not known (the first round,
// or after a write found it moved). When that read fails the round fails
// before it reads anything, and is retried as any failed round is.
func (w *Worker) fenceEpoch(ctx context.Context) (int64, error) {
	if w.epochKnown.Load() {
		return w.epoch.Load(), nil
	}
	e, err := fence.Epoch(ctx, w.Pool, w.Space.Prefix)
	if err != nil {
		return 0, fmt.Errorf("worker: %w", err)
	}
	w.epoch.Store(e)
	w.epochKnown.Store(true)
	return e, nil
}

// errHook is what a test hook's error is wrapped in.
var errHook = errors.New("worker: stopped by test hook")

func (w *Worker) hook(stage string) error {
	if w.testHook == nil {
		return nil
	}
	if err := w.testHook(stage); err != nil {
		return fmt.Errorf("%w at %s: %w", errHook, stage, err)
	}
	return nil
}
