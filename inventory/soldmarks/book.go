// Package soldmarks keeps a node's book of sold marks: per event, the
// highest count of units ever paid (the sold hash's "paid") that the
// paying scripts replied to this node with. The book flushes the marks
// that rose to Postgres (Store) about once a second, at once when
// Postgres answers again after a failed flush, and when asked (FlushNow:
// the state monitor found the Redis state lost or stale). A rebuild never
// counts an event below its mark: the difference is sales ticketd
// acknowledged and lost (docs/decisions.md, Durability and recovery).
//
// Saw is on every paid confirm's path: a lock-free map read and an atomic
// max, no lock shared between confirms.
package soldmarks

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Store is where marks are kept for every node and every rebuild (sync/rebuild.Marks).
type Store interface {
	// Raise records marks (event id -> units ever paid) in one statement,
	// each raised to the value given and never lowered.
	Raise(ctx context.Context, marks map[string]int64) error
}

// Book is one node's marks. The zero value keeps marks in memory; Run
// flushes them to Store.
type Book struct {
	Store  Store
	Logger *slog.Logger
	// Every is how often the marks that rose are flushed (default 1s);
	// Retry how soon a failed flush is tried again (default 250ms), so
	// marks reach Postgres within Retry of its return.
	Every, Retry time.Duration

	events  sync.Map // event id -> *mark
	flushMu sync.Mutex
	kick    chan struct{}
	once    sync.Once
	failing bool // Run's own
}

type mark struct {
	seen, saved atomic.Int64

	mu    sync.Mutex
	units map[int64]uint64 // the paid units this node saw handed out: unit/64 -> bits
}

// take records units (from, to] as handed out and says whether any of them
// was already: the event's paid counter gave out a unit twice, so Redis went
// back past a sale this node saw.
func (m *mark) take(from, to int64) (reused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.units == nil {
		m.units = map[int64]uint64{}
	}
	for u := from + 1; u <= to; u++ {
		w, bit := u>>6, uint64(1)<<(u&63)
		reused = reused || m.units[w]&bit != 0
		m.units[w] |= bit
	}
	return reused
}

// raise sets v to n when n is higher.
func raise(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Saw records that eventID's units ever paid reached paid, added of them
// by the payment that reported it (0 for a retry that found its order paid
// already). A payment is handed the units (paid-added, paid] of the
// counter, each once while Redis keeps what it wrote; reused says this node
// saw one of them handed out before: Redis went back to an older state (a
// rollback, or a failover to a replica that lagged) and this sale reuses
// units sold before it. Such a sale is real and on top of every unit seen
// before, so the mark rises by added rather than to paid.
func (b *Book) Saw(eventID string, paid, added int64) (reused bool) {
	v, ok := b.events.Load(eventID)
	if !ok {
		v, _ = b.events.LoadOrStore(eventID, new(mark))
	}
	m := v.(*mark)
	if added > 0 && m.take(paid-added, paid) {
		m.seen.Add(added)
		return true
	}
	raise(&m.seen, paid)
	return false
}

// Marks returns every event's mark.
func (b *Book) Marks() map[string]int64 {
	out := map[string]int64{}
	b.events.Range(func(k, v any) bool {
		out[k.(string)] = v.(*mark).seen.Load()
		return true
	})
	return out
}

// Flush writes the marks that rose since they were last written; nothing
// when none did.
func (b *Book) Flush(ctx context.Context) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	changed := map[string]int64{}
	b.events.Range(func(k, v any) bool {
		m := v.(*mark)
		if n := m.seen.Load(); n > m.saved.Load() {
			changed[k.(string)] = n
		}
		return true
	})
	if len(changed) == 0 || b.Store == nil {
		return nil
	}
	if err := b.Store.Raise(ctx, changed); err != nil {
		return err
	}
	for ev, n := range changed {
		if v, ok := b.events.Load(ev); ok {
			raise(&v.(*mark).saved, n)
		}
	}
	return nil
}

func (b *Book) signal() chan struct{} {
	b.once.Do(func() { b.kick = make(chan struct{}, 1) })
	return b.kick
}

// FlushNow asks Run to flush at once (it does not wait).
func (b *Book) FlushNow() {
	select {
	case b.signal() <- struct{}{}:
	default:
	}
}

// flushTimeout bounds one flush: a Postgres that hangs delays the next
// try, not the node.
const flushTimeout = 3 * time.Second

// Run flushes every Every, after FlushNow, and every Retry while flushes
// fail, until ctx ends; then once more.
func (b *Book) Run(ctx context.Context) {
	every, retry := orDefault(b.Every, time.Second), orDefault(b.Retry, 250*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			if err := b.Flush(fctx); err != nil {
				// Nothing retries once the node is gone: the operator can
				// only enter them by hand (decisions.md, what the marks do
				// not cover).
				b.logger().Error("sold marks: the node stops with marks Postgres does not have; a rebuild would not see them",
					"err", err, "marks", b.Marks())
			}
			cancel()
			return
		case <-t.C:
		case <-b.signal():
		}
		fctx, cancel := context.WithTimeout(ctx, flushTimeout)
		ok := b.flushLogged(fctx)
		cancel()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		if ok {
			t.Reset(every)
		} else {
			t.Reset(retry)
		}
	}
}

// flushLogged flushes and logs a change between failing and working.
func (b *Book) flushLogged(ctx context.Context) bool {
	err := b.Flush(ctx)
	switch {
	case err != nil && !b.failing:
		b.logger().Warn("sold marks: cannot write them to Postgres; retrying until it answers", "err", err)
	case err == nil && b.failing:
		b.logger().Info("sold marks: written to Postgres again")
	}
	b.failing = err != nil
	return err == nil
}

func (b *Book) logger() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
