package soldmarks

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"
)

// fakeStore records what each flush raised, and fails while down.
type fakeStore struct {
	mu      sync.Mutex
	down    bool
	flushes []map[string]int64
	marks   map[string]int64
}

func (f *fakeStore) Raise(_ context.Context, m map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("postgres is away")
	}
	f.flushes = append(f.flushes, maps.Clone(m))
	if f.marks == nil {
		f.marks = map[string]int64{}
	}
	for ev, n := range m {
		f.marks[ev] = max(f.marks[ev], n)
	}
	return nil
}

func (f *fakeStore) get() (map[string]int64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.marks), len(f.flushes)
}

func (f *fakeStore) setDown(d bool) {
	f.mu.Lock()
	f.down = d
	f.mu.Unlock()
}

// The book keeps each event's highest value, from any number of
// goroutines, and a flush writes only the marks that rose since.
func TestBookKeepsTheMaxAndFlushesWhatRose(t *testing.T) {
	st := &fakeStore{}
	b := &Book{Store: st}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				b.Saw("a", int64(i*8+g), 0)
				b.Saw("b", 5, 0)
			}
		}()
	}
	wg.Wait()
	b.Saw("a", 3, 0) // lower: ignored
	if m := b.Marks(); m["a"] != 7999 || m["b"] != 5 {
		t.Fatalf("marks %v", m)
	}
	ctx := context.Background()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b.Saw("b", 9, 0)
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil { // nothing rose: no statement
		t.Fatal(err)
	}
	if len(st.flushes) != 2 || len(st.flushes[0]) != 2 || len(st.flushes[1]) != 1 || st.flushes[1]["b"] != 9 {
		t.Fatalf("flushes %v", st.flushes)
	}
}

// Run flushes every Every; while Postgres is away it keeps the marks and
// retries every Retry, so they land as soon as it is back; FlushNow
// flushes at once.
func TestBookFlushesWhenPostgresReturns(t *testing.T) {
	st := &fakeStore{}
	b := &Book{Store: st, Every: time.Hour, Retry: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	b.Saw("a", 1, 0)
	b.FlushNow()
	waitMarks(t, st, "a", 1)

	st.setDown(true)
	b.Saw("a", 4, 0)
	b.FlushNow() // fails: Run now retries every 20ms
	time.Sleep(100 * time.Millisecond)
	if m, _ := st.get(); m["a"] != 1 {
		t.Fatalf("written while down: %v", m)
	}
	st.setDown(false)
	start := time.Now()
	waitMarks(t, st, "a", 4)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("written %v after Postgres returned", d)
	}
}

// A stopping book flushes what it has.
func TestBookFlushesOnStop(t *testing.T) {
	st := &fakeStore{}
	b := &Book{Store: st, Every: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	b.Saw("z", 7, 0)
	cancel()
	<-done
	if m, _ := st.get(); m["z"] != 7 {
		t.Fatalf("marks after stop %v", m)
	}
}

func waitMarks(t *testing.T, st *fakeStore, ev string, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m, _ := st.get(); m[ev] == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	m, _ := st.get()
	t.Fatalf("marks %v, want %s=%d", m, ev, want)
}

// Payments reported out of order (concurrent confirms) never look reused:
// each was handed units of its own. Units handed out again (a Redis that
// went back) are, and the mark counts that sale on top of the seen ones.
func TestSawFindsUnitsHandedOutTwice(t *testing.T) {
	b := &Book{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(7 - g); i < 800; i += 8 { // units i*2+1 and i*2+2, in no order
				if b.Saw("e", i*2+2, 2) {
					t.Errorf("units %d-%d reported as reused", i*2+1, i*2+2)
				}
			}
		}()
	}
	wg.Wait()
	if m := b.Marks()["e"]; m != 1600 {
		t.Fatalf("mark %d, want 1600", m)
	}
	if b.Saw("e", 1600, 0) {
		t.Fatal("a retry (nothing added) reported as reused")
	}
	if !b.Saw("e", 1001, 1) {
		t.Fatal("unit 1001 handed out again not found")
	}
	if m := b.Marks()["e"]; m != 1601 {
		t.Fatalf("mark after the reused sale %d, want 1601", m)
	}
}
