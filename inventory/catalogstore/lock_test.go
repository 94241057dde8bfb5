package catalogstore_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/catalogdb"
)

// projectedEvents lists the event ids of the projection in Redis, as a new
// node would load it.
func projectedEvents(t *testing.T, s *catalogstore.Store) []string {
	t.Helper()
	fresh := &catalogstore.Store{Redis: s.Redis, Space: s.Space, Sealer: s.Sealer}
	if err := fresh.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(fresh.Current().Events))
}

// recordedEvents lists the event ids of the record in Postgres.
func recordedEvents(t *testing.T, rec *catalogdb.Store) []string {
	t.Helper()
	tenants, _, err := rec.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tn := range tenants {
		for _, ev := range tn.Events {
			ids = append(ids, ev.ID)
		}
	}
	return ids
}

// An apply that runs longer than its lock's TTL keeps the lock: a
// concurrent apply is busy instead of merging into a stale catalog, and the
// two applied one after the other keep both documents' events.
func TestApplyKeepsItsLockPastTheTTL(t *testing.T) {
	s, _ := setup(t)
	// Long enough that a loaded machine does not starve the lock's
	// keepalive (every third of it) for a whole TTL.
	const ttl = time.Second
	s.LockTTL = ttl
	paused, resume := make(chan struct{}), make(chan struct{})
	var pausedOnce atomic.Bool // only the first apply pauses
	catalogstore.SetAfterCheck(s, func() {
		if pausedOnce.CompareAndSwap(false, true) {
			close(paused)
			<-resume
		}
	})
	a, b := event("ev_a"), event("ev_b")
	a.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 10}}
	b.Tickets = []catalog.Ticket{{ID: "tk", Name: "B", Price: 1000, Capacity: 10}}

	first := make(chan error, 1)
	go func() { first <- apply(t, s, a) }()
	<-paused
	time.Sleep(2 * ttl) // the first apply now runs 2 TTLs past taking its lock
	if err := apply(t, s, b); !errors.Is(err, catalogstore.ErrBusy) {
		close(resume)
		t.Fatalf("apply while another ran past its lock's TTL: %v, want ErrBusy", err)
	}
	close(resume)
	if err := <-first; err != nil {
		t.Fatalf("the long apply: %v", err)
	}
	if err := apply(t, s, b); err != nil {
		t.Fatalf("apply after the long one finished: %v", err)
	}
	if got := projectedEvents(t, s); !slices.Equal(got, []string{"ev_a", "ev_b"}) {
		t.Fatalf("projected events after two applies: %v, want both", got)
	}
	if n := len(s.Current().Events); n != 2 {
		t.Fatalf("served events: %d, want 2", n)
	}
	if keys := redistest.Keys(t, s.Redis, s.Space); slices.Contains(keys, s.Space.CatalogLock()) {
		t.Fatal("the apply lock is still there after both applies finished")
	}
}

// An apply whose lock was taken from it (it stalled past its TTL and
// another owner took the lock) stops before writing: the capacities, the
// record and the projection do not change, and the other owner's lock
// stays. Capacities written by a stalled apply would overwrite those of
// the apply that took the lock, and Redis would sell against a catalog
// that neither the record nor the projection holds.
func TestApplyThatLostItsLockWritesNothing(t *testing.T) {
	s, rec, _ := setupRecorded(t)
	ctx := context.Background()
	a := event("ev_a")
	a.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 10}}
	if err := apply(t, s, a); err != nil {
		t.Fatal(err)
	}
	version := s.Current().Version

	b := event("ev_b")
	b.Tickets = []catalog.Ticket{{ID: "tk", Name: "B", Price: 1000, Capacity: 10}}
	catalogstore.SetAfterCheck(s, func() {
		if err := s.Redis.Do(ctx, s.Redis.B().Set().Key(s.Space.CatalogLock()).Value("other-owner").Build()).Error(); err != nil {
			t.Error(err)
		}
	})
	err := apply(t, s, b)
	if !errors.Is(err, catalogstore.ErrLockLost) || !errors.Is(err, catalogstore.ErrBusy) {
		t.Fatalf("apply that lost its lock: %v, want ErrLockLost (an ErrBusy)", err)
	}
	if got := caps(t, s, "ev_b"); len(got) != 0 {
		t.Errorf("capacities of ev_b after the stopped apply: %v, want none", got)
	}
	if got := projectedEvents(t, s); !slices.Equal(got, []string{"ev_a"}) {
		t.Errorf("projected events after the stopped apply: %v, want only ev_a", got)
	}
	if s.Current().Version != version || s.Current().Events["ev_b"] != nil {
		t.Errorf("served catalog changed: version %d -> %d", version, s.Current().Version)
	}
	if slices.Contains(recordedEvents(t, rec), "ev_b") {
		t.Error("the record holds the document of the apply that lost its lock")
	}
	if v, _ := s.Redis.Do(ctx, s.Redis.B().Get().Key(s.Space.CatalogLock()).Build()).ToString(); v != "other-owner" {
		t.Errorf("the other owner's lock after the stopped apply: %q", v)
	}
}

// stealingRecord is the Postgres record with a hook that runs as an apply
// starts writing it.
type stealingRecord struct {
	*catalogdb.Store
	before func()
}

func (r stealingRecord) Apply(ctx context.Context, tenants []catalog.Tenant, channels []catalog.StoredChannel) error {
	r.before()
	return r.Store.Apply(ctx, tenants, channels)
}

// An apply that loses its lock while it writes the record (Postgres slow:
// a row it updates is locked; meanwhile the lock is taken from it) has
// that write cancelled rather than committed once Postgres lets it go: the
// record never takes a document from an apply that lost its lock. The
// capacities it already replaced stay: putting them back could undo the
// new holder's work.
func TestApplyThatLosesItsLockWhileWritingTheRecordWritesNothing(t *testing.T) {
	s, rec, _ := setupRecorded(t)
	s.LockTTL = 300 * time.Millisecond
	ctx := context.Background()
	a := event("ev_a")
	a.Tickets = []catalog.Ticket{{ID: "tk", Name: "A", Price: 1000, Capacity: 10}}
	if err := apply(t, s, a); err != nil {
		t.Fatal(err)
	}

	// Hold tenant t1's row, which the next apply updates.
	tx, err := rec.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM tenants WHERE id = 't1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	s.Record = stealingRecord{Store: rec, before: func() {
		if err := s.Redis.Do(ctx, s.Redis.B().Set().Key(s.Space.CatalogLock()).Value("other-owner").Build()).Error(); err != nil {
			t.Error(err)
		}
	}}
	b := event("ev_b")
	b.Tickets = []catalog.Ticket{{ID: "tk", Name: "B", Price: 1000, Capacity: 7}}
	done := make(chan error, 1)
	go func() { done <- apply(t, s, a, b) }()
	var applyErr error
	select {
	case applyErr = <-done:
	case <-time.After(10 * time.Second):
		// Still writing: let Postgres go on, as it would in the end.
		_ = tx.Rollback(ctx)
		applyErr = <-done
	}
	if !errors.Is(applyErr, catalogstore.ErrLockLost) {
		t.Fatalf("apply that lost its lock while writing the record: %v, want ErrLockLost", applyErr)
	}
	_ = tx.Rollback(ctx)
	if slices.Contains(recordedEvents(t, rec), "ev_b") {
		t.Error("the record holds the document of an apply that lost its lock")
	}
	if got := caps(t, s, "ev_b"); !maps.Equal(got, map[string]int64{"t:tk": 7}) {
		t.Errorf("capacities of ev_b: %v, want those the apply set ({t:tk: 7}), left in place", got)
	}
	if got := projectedEvents(t, s); !slices.Equal(got, []string{"ev_a"}) {
		t.Errorf("projected events: %v, want only ev_a", got)
	}
}
