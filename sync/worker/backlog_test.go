package worker

import (
	"context"
	"strconv"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/keys"
)

// confirmAt queues a paid order under the stream id "<ms>-0": as if Redis
// had added it at ms. Its record rides in the entry (as confirm queued it
// before the record stayed in the order hash); the backlog counts both alike.
func (b *bundle) confirmAt(t *testing.T, ms int64, eventID string) {
	t.Helper()
	rec := record(eventID, 1)
	js, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cmd := b.rc.B().Xadd().Key(b.space.Paid(keys.Partition(eventID))).Id(strconv.FormatInt(ms, 10)+"-0").FieldValue().
		FieldValue("order", rec.OrderID).FieldValue("rec", string(js)).FieldValue("ref", "r").
		FieldValue("paidAt", strconv.FormatInt(ms, 10)).Build()
	if err := b.rc.Do(ctx, cmd).Error(); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) backlog(t *testing.T) BacklogStats {
	t.Helper()
	s, err := Backlog(context.Background(), b.rc, b.space)
	if err != nil {
		t.Fatalf("Backlog: %v", err)
	}
	return s
}

// The backlog counts every paid entry not yet in Postgres, read by a
// worker or not, dates the oldest by its stream id, and is zero once the
// streams are drained.
func TestBacklogCountsUnwrittenEntriesAndTheOldest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if s := b.backlog(t); s != (BacklogStats{}) || s.Age(time.Now()) != 0 {
		t.Fatalf("empty streams: backlog %+v, age %v; want zero", s, s.Age(time.Now()))
	}

	const evA, evB = "ev_backlog_a", "ev_backlog_b"
	if keys.Partition(evA) == keys.Partition(evB) {
		t.Fatal("test events share a partition; pick others")
	}
	const oldest = int64(1_700_000_001_000)
	b.confirmAt(t, oldest+4000, evA)
	b.confirmAt(t, oldest+8000, evA)
	b.confirmAt(t, oldest, evB) // the oldest, added last, on another stream
	want := BacklogStats{Entries: 3, Oldest: time.UnixMilli(oldest)}
	if s := b.backlog(t); s.Entries != want.Entries || !s.Oldest.Equal(want.Oldest) {
		t.Fatalf("backlog %+v, want %+v", s, want)
	}
	if age := want.Age(time.UnixMilli(oldest + 2500)); age != 2500*time.Millisecond {
		t.Fatalf("Age = %v, want 2.5s", age)
	}

	b.crashA(t, "read") // read by a worker, not written: still the backlog
	if s := b.backlog(t); s.Entries != want.Entries || !s.Oldest.Equal(want.Oldest) {
		t.Fatalf("backlog with the entries pending %+v, want %+v", s, want)
	}

	if n := drain(t, b.worker("B")); n != 3 {
		t.Fatalf("drain = %d, want 3", n)
	}
	if n := b.count(t, `SELECT count(*) FROM orders`); n != 3 {
		t.Fatalf("%d orders, want 3", n)
	}
	if s := b.backlog(t); s != (BacklogStats{}) {
		t.Fatalf("backlog after the drain %+v, want zero", s)
	}
}
