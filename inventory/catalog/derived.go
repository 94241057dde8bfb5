package catalog

import "sync/atomic"

// Derived holds a value a surface builds from a snapshot (its lookup
// indexes), for the newest snapshot seen: Of builds it on the first call
// that sees a snapshot and returns the same value until another snapshot
// comes. Safe for concurrent use; two calls racing on a new snapshot may
// both build, and the last one stored wins, which is harmless for a value
// derived from the snapshot alone. The zero value is ready.
type Derived[T any] struct{ cur atomic.Pointer[derived[T]] }

type derived[T any] struct {
	snap *Snapshot
	v    *T
}

// Of returns the value of snap, calling build(snap) when the value held is
// another snapshot's.
func (d *Derived[T]) Of(snap *Snapshot, build func(*Snapshot) *T) *T {
	if c := d.cur.Load(); c != nil && c.snap == snap {
		return c.v
	}
	v := build(snap)
	d.cur.Store(&derived[T]{snap: snap, v: v})
	return v
}
