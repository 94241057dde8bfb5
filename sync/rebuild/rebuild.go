// Package rebuild restores the Redis state ticketd sells from out of
// Postgres, the record: after Redis lost its data or came back from an
// older snapshot (ticketd's automatic recovery), and whenever an operator
// asks (ticketctl rebuild).
//
// A rebuild stops every sale first (redisstate.MarkRebuilding: the scripts
// that sell refuse at once, nodes close their gates within a check), reads
// the paid orders still on the paid streams, then Postgres (streams first:
// the sync worker deletes an entry only after Postgres holds it, so every
// paid order is seen at least once, and each is counted once, by id), and
// writes back everything capacity depends on: the catalog projection, each
// event's capacities, sold counts, booked seats and used discount codes,
// and the Redis copies of recently paid orders with their idempotency
// records. It ends by publishing a new generation, recorded in Postgres
// before Redis shows it; sales resume then. Pending orders, seat holds and
// rate windows are not in Postgres and are not restored: a lost pending
// order is failed (its confirm answers CONFIRM_FAILED, refund).
//
// A rebuild is idempotent and holds the catalog lock, so it never runs
// beside a catalog apply or another rebuild.
package rebuild

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/lease"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/soldmarks"
	"github.com/ticketd/ticketd/sync/fence"
)

// Rebuilder rebuilds one key space's Redis state from one database.
type Rebuilder struct {
	Redis   rueidis.Client
	Space   keys.Space
	Pool    *pgxpool.Pool
	Catalog *catalogstore.Store // writes the projection (same Redis and Space)
	Logger  *slog.Logger

	// Retention is how long a paid order stays in Redis after its payment
	// (orders.Service.Retention, default 24h): orders paid within it get
	// their Redis copy back for the rest of it.
	Retention time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is kept (default 24h).
	IdempotencyTTL time.Duration
	// LockTTL is the catalog lock's lease (default 30s, kept alive while
	// the rebuild runs).
	LockTTL time.Duration
	// Book is this node's own book of sold marks (nil for ticketctl): a
	// rebuild reads it with the marks Postgres holds.
	Book *soldmarks.Book
	// FlushWait is how long a rebuild waits, once sales are stopped, for
	// the live nodes to flush their sold marks to Postgres before it reads
	// them (default DefaultFlushWait; negative: no wait).
	FlushWait time.Duration

	afterRead func() // tests: runs between the reads and the writes
}

// Report says what a rebuild restored.
type Report struct {
	Generation string `json:"generation"`
	// Events is how many events got their counters back.
	Events int `json:"events"`
	// SoldCounters is the number of sold counters written over all events
	// (ticket types, the events themselves, showings, areas, tables, extras).
	SoldCounters int `json:"soldCounters"`
	// Admissions is the sum of the events' sold counts ("ev").
	Admissions  int64 `json:"admissions"`
	BookedSeats int   `json:"bookedSeats"`
	// DiscountCodes is the number of codes with used counts.
	DiscountCodes int `json:"discountCodes"`
	// Buyers is the number of buyers counted on events with a
	// maxTicketsPerBuyer.
	Buyers int `json:"buyers"`
	// PaidOrders counts every paid order once: Postgres' and those found
	// only on the paid streams (StreamOnly of them).
	PaidOrders int64 `json:"paidOrders"`
	StreamOnly int   `json:"streamOnly"`
	// Orders and IdempotencyKeys are the Redis copies of recently paid
	// orders, and their reserves' keys, put back.
	Orders          int `json:"orders"`
	IdempotencyKeys int `json:"idempotencyKeys"`
	// Held lists the events whose sales stay held after this rebuild:
	// paid units ticketd acknowledged are known nowhere (holds.go).
	Held []HeldEvent `json:"held,omitempty"`
	// CatalogVersion is the version the projection was restored under.
	CatalogVersion int64         `json:"catalogVersion"`
	Took           time.Duration `json:"took"`
}

func (r *Rebuilder) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

func (r *Rebuilder) generations() *Generations {
	return &Generations{Pool: r.Pool, Prefix: r.Space.Prefix}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Run rebuilds, whatever state Redis is in (ticketctl rebuild).
func (r *Rebuilder) Run(ctx context.Context) (Report, error) {
	l, err := r.lock(ctx)
	if err != nil {
		return Report{}, err
	}
	defer l.Release(context.WithoutCancel(ctx))
	return r.rebuild(ctx, l)
}

// Recover rebuilds after a node found the state lost or stale, unless,
// once it holds the lock, Redis holds a live generation other than bad
// with every partition's marker: another node or an operator rebuilt
// meanwhile. rebuilt says whether this call rebuilt.
func (r *Rebuilder) Recover(ctx context.Context, bad string) (rep Report, rebuilt bool, err error) {
	l, err := r.lock(ctx)
	if err != nil {
		return Report{}, false, err
	}
	defer l.Release(context.WithoutCancel(ctx))
	if done, err := r.liveOtherThan(ctx, bad); err != nil || done {
		return Report{}, false, err
	}
	rep, err = r.rebuild(ctx, l)
	return rep, err == nil, err
}

// Recoverer returns Recover as redisstate.Monitor's Recover, telling done
// (when not nil) whether each call rebuilt and how it ended.
func (r *Rebuilder) Recoverer(done func(rebuilt bool, err error)) func(ctx context.Context, bad string) error {
	return func(ctx context.Context, bad string) error {
		_, rebuilt, err := r.Recover(ctx, bad)
		if done != nil {
			done(rebuilt, err)
		}
		return err
	}
}

// liveOtherThan reports whether Redis holds a live generation other than
// bad, every partition marked with it.
func (r *Rebuilder) liveOtherThan(ctx context.Context, bad string) (bool, error) {
	gen, err := redisstate.Published(ctx, r.Redis, r.Space)
	if err != nil {
		return false, fmt.Errorf("rebuild: %w", err)
	}
	return gen != "" && gen != bad, nil
}

func (r *Rebuilder) rebuild(ctx context.Context, l *lease.Lease) (Report, error) {
	start := time.Now()
	log := r.logger()
	// With no generation recorded yet this is a first start: the new
	// Redis is initialised, nothing was lost, and the log says so at info.
	level, started, done := slog.LevelWarn, "rebuild: restoring the Redis state from Postgres; sales are stopped until it ends",
		"rebuild: the Redis state is restored from Postgres; sales resume"
	if _, recorded, err := r.generations().Load(ctx); err == nil && !recorded {
		level, started, done = slog.LevelInfo, "rebuild: initialising a new Redis from Postgres (no generation recorded before); sales start when it ends",
			"rebuild: the new Redis is initialised from Postgres; sales start"
	}
	log.Log(ctx, level, started)
	if err := redisstate.MarkRebuilding(ctx, r.Redis, r.Space); err != nil {
		return Report{}, err
	}
	if err := r.waitForMarks(ctx); err != nil {
		return Report{}, err
	}
	// Every sync worker's write in flight ends before anything is read,
	// and a later one of entries read before this point is refused: none
	// from the Redis this rebuild replaces lands after its snapshot.
	if _, err := fence.Raise(ctx, r.Pool, r.Space.Prefix); err != nil {
		return Report{}, fmt.Errorf("rebuild: %w", err)
	}
	streamed, err := r.readStreams(ctx)
	if err != nil {
		return Report{}, err
	}
	st, err := r.readRecord(ctx, streamed)
	if err != nil {
		return Report{}, err
	}
	if r.afterRead != nil {
		r.afterRead()
	}
	// Whoever took the lock after a lost lease may have published and
	// sold since: only the holder writes and publishes (confirmed with
	// Redis, not just by the lease's own clock).
	if err := stillHeld(ctx, l); err != nil {
		return Report{}, err
	}
	if st.gaps, err = r.holdGaps(ctx, st); err != nil {
		return Report{}, err
	}
	var rep Report
	if err := r.writeEvents(ctx, st, &rep); err != nil {
		return Report{}, err
	}
	if err := r.writeOrders(ctx, st, &rep); err != nil {
		return Report{}, err
	}
	if rep.CatalogVersion, err = r.Catalog.Restore(ctx, st.tenants, st.channels); err != nil {
		return Report{}, err
	}
	if err := r.writeHeld(ctx, st, &rep); err != nil {
		return Report{}, err
	}
	if err := stillHeld(ctx, l); err != nil {
		return Report{}, err
	}
	rep.Generation = redisstate.NewGeneration()
	if err := r.generations().publish(ctx, rep.Generation); err != nil {
		return Report{}, err
	}
	if err := redisstate.Publish(ctx, r.Redis, r.Space, rep.Generation); err != nil {
		return Report{}, err
	}
	rep.PaidOrders, rep.StreamOnly = st.paidOrders, st.streamOnly
	rep.Took = time.Since(start)
	for _, h := range rep.Held {
		log.Error("rebuild: sales of an event stay held: paid units ticketd acknowledged are lost (neither Redis nor Postgres has them); "+
			"refund or settle their buyers and run `ticketctl release "+h.EventID+"`, or keep them counted as sold with `ticketctl reconcile "+
			h.EventID+"`", "event", h.EventID, "lost", h.Lost, "found_now", h.Found)
	}
	log.Log(ctx, level, done,
		"generation", rep.Generation, "events", rep.Events, "admissions", rep.Admissions,
		"booked_seats", rep.BookedSeats, "paid_orders", rep.PaidOrders, "stream_only", rep.StreamOnly,
		"orders", rep.Orders, "idempotency_keys", rep.IdempotencyKeys, "held_events", len(rep.Held), "took", rep.Took.Round(time.Millisecond))
	return rep, nil
}

// DefaultFlushWait is how long a rebuild waits for live nodes' sold marks:
// a node flushes them every second (inventory/soldmarks) and at once when
// its state check (every 250 ms) finds the state lost, stale or
// rebuilding; sales stopped before the wait began, so no mark rises
// during it, and 1.5 s covers one flush period, the check and the
// statement.
const DefaultFlushWait = 1500 * time.Millisecond

// waitForMarks waits FlushWait after sales stopped, so every live node's
// last marks are in Postgres before the rebuild reads them; not on a
// deployment's first start (no generation recorded: nothing was sold).
func (r *Rebuilder) waitForMarks(ctx context.Context) error {
	if r.FlushWait < 0 {
		return nil
	}
	if _, ok, err := r.generations().Load(ctx); err != nil || !ok {
		return err
	}
	t := time.NewTimer(orDefault(r.FlushWait, DefaultFlushWait))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ownMarks is this node's own book's marks (none without one).
func (r *Rebuilder) ownMarks() map[string]int64 {
	if r.Book == nil {
		return nil
	}
	return r.Book.Marks()
}

// stillHeld extends the lock and confirms it is still this rebuild's.
func stillHeld(ctx context.Context, l *lease.Lease) error {
	if err := l.Extend(ctx); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	return nil
}

// lock takes the catalog lock (waiting while an apply or another rebuild
// holds it) and returns its lease; the caller releases it.
func (r *Rebuilder) lock(ctx context.Context) (*lease.Lease, error) {
	l, err := lease.AcquireWait(ctx, r.Redis, r.Space.CatalogLock(), orDefault(r.LockTTL, catalogstore.DefaultLockTTL))
	if err != nil {
		return nil, fmt.Errorf("rebuild: take the catalog lock: %w", err)
	}
	return l, nil
}
