package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// item is a test call: its input, and the answer Send gives it.
type item struct {
	n   int
	got int // n*10 once sent
}

// recorder is a Queue's Send that records each batch's items and can be
// held: while held, the batch in flight does not return.
type recorder struct {
	mu        sync.Mutex
	batches   [][]int
	hold      chan struct{} // every Send waits for it to close; nil: none
	started   chan int      // each Send's batch size, when not nil
	err       error
	cancelled int // batches whose context ended while they were sent
}

func (r *recorder) send(ctx context.Context, items []*item) error {
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("batch sent without a deadline")
	}
	ns := make([]int, len(items))
	for i, it := range items {
		ns[i] = it.n
	}
	r.mu.Lock()
	r.batches = append(r.batches, ns)
	r.mu.Unlock()
	if r.started != nil {
		r.started <- len(items)
	}
	if r.hold != nil {
		<-r.hold
	}
	if ctx.Err() != nil { // a caller that stopped waiting must not end its batch
		r.mu.Lock()
		r.cancelled++
		r.mu.Unlock()
	}
	for _, it := range items {
		it.got = it.n * 10
	}
	return r.err
}

func (r *recorder) sent() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

func newQueue(r *recorder, max int) *Queue[*item] {
	return &Queue[*item]{Send: r.send, Max: max, Timeout: time.Minute}
}

// do runs q.Do for each of items from a goroutine of its own and returns
// each one's error once all are answered.
func do(ctx context.Context, q *Queue[*item], items []*item) <-chan []error {
	out := make(chan []error, 1)
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = q.Do(ctx, it) }()
	}
	go func() { wg.Wait(); out <- errs }()
	return out
}

// until polls q, under its lock, until ok says so; it fails the test
// with what after 10 s.
func until(t *testing.T, q *Queue[*item], what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		done := ok()
		q.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// waitFor polls until the queue holds n waiting calls.
func waitFor(t *testing.T, q *Queue[*item], n int) {
	t.Helper()
	until(t, q, fmt.Sprintf("never %d calls waiting", n), func() bool { return len(q.waiting) == n })
}

// waitIdle polls until the queue's lead has stopped.
func waitIdle(t *testing.T, q *Queue[*item]) {
	t.Helper()
	until(t, q, "the lead never stopped", func() bool { return !q.sending })
}

// A call that comes alone goes at once, alone; the calls that come while
// it is in flight go next, in the order they came, at most Max a batch,
// and each is answered with its own result.
func TestCallsThatComeDuringABatchGoInTheNextInOrder(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), started: make(chan int, 10)}
	q := newQueue(r, 4)
	first := &item{n: 100}
	firstDone := do(context.Background(), q, []*item{first})
	if n := <-r.started; n != 1 {
		t.Fatalf("the first call went in a batch of %d, want alone", n)
	}
	rest := make([]*item, 10)
	for i := range rest {
		rest[i] = &item{n: i + 1}
		go func() { _ = q.Do(context.Background(), rest[i]) }()
		waitFor(t, q, i+1) // one at a time, so the order is known
	}
	close(r.hold)
	if errs := <-firstDone; errs[0] != nil || first.got != 1000 {
		t.Fatalf("first call: %v, got %d", errs[0], first.got)
	}
	for range 3 {
		<-r.started
	}
	waitFor(t, q, 0)
	want := [][]int{{100}, {1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}}
	if got := r.sent(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	waitIdle(t, q)
	for _, it := range rest {
		if it.got != it.n*10 {
			t.Fatalf("call %d answered %d, want its own %d", it.n, it.got, it.n*10)
		}
	}
}

// A call whose caller stopped waiting before its batch went is not sent
// and is answered its context's error; it takes no place in its batch,
// which the calls after it fill.
func TestACallWhoseCallerLeftIsNotSent(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), started: make(chan int, 10)}
	q := newQueue(r, 2)
	busy := do(context.Background(), q, []*item{{n: 0}})
	<-r.started
	gone, cancel := context.WithCancel(context.Background())
	left := do(gone, q, []*item{{n: 1}})
	waitFor(t, q, 1)
	cancel()
	if errs := <-left; !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("a caller that left got %v, want its context's error", errs[0])
	}
	stays := do(context.Background(), q, []*item{{n: 2}})
	waitFor(t, q, 2)
	also := do(context.Background(), q, []*item{{n: 3}})
	waitFor(t, q, 3)
	close(r.hold)
	<-busy
	if errs, more := <-stays, <-also; errs[0] != nil || more[0] != nil {
		t.Fatal(errs[0], more[0])
	}
	want := [][]int{{0}, {2, 3}}
	if got := r.sent(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v (the call whose caller left unsent, its place taken)", got, want)
	}
}

// A call that finds Limit waiting is answered Full at once, unsent.
func TestACallBeyondTheLimitIsRefusedAtOnce(t *testing.T) {
	full := errors.New("full")
	r := &recorder{hold: make(chan struct{}), started: make(chan int, 10)}
	q := newQueue(r, 8)
	q.Limit, q.Full = 2, full
	busy := do(context.Background(), q, []*item{{n: 0}})
	<-r.started
	queued := do(context.Background(), q, []*item{{n: 1}, {n: 2}})
	waitFor(t, q, 2)
	if err := q.Do(context.Background(), &item{n: 3}); err != full {
		t.Fatalf("a call beyond the limit got %v, want Full", err)
	}
	close(r.hold)
	<-busy
	if errs := <-queued; errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if got := r.sent(); len(got) != 2 || len(got[1]) != 2 {
		t.Fatalf("batches %v, want the first alone and the two that waited (not the refused one)", got)
	}
}

// Expire's error answers a call that waited too long, unsent; Send's
// error answers every call of its batch; and the lead waits Linger before
// its first batch, so calls that come meanwhile go with it.
func TestExpireSendErrorsAndLinger(t *testing.T) {
	stale := errors.New("stale")
	r := &recorder{hold: make(chan struct{}), started: make(chan int, 10)}
	q := newQueue(r, 8)
	q.Expire = func(waited time.Duration) error {
		if waited >= 50*time.Millisecond {
			return stale
		}
		return nil
	}
	busy := do(context.Background(), q, []*item{{n: 0}})
	<-r.started
	late := do(context.Background(), q, []*item{{n: 1}})
	waitFor(t, q, 1)
	time.Sleep(60 * time.Millisecond)
	close(r.hold)
	<-busy
	if errs := <-late; errs[0] != stale {
		t.Fatalf("a call that waited out Expire got %v, want its error", errs[0])
	}
	if got := r.sent(); len(got) != 1 {
		t.Fatalf("batches %v, want the expired call unsent", got)
	}

	failed := errors.New("redis down")
	r2 := &recorder{err: failed}
	q2 := newQueue(r2, 8)
	q2.Linger = func() time.Duration { return 200 * time.Millisecond }
	errs := <-do(context.Background(), q2, []*item{{n: 1}, {n: 2}, {n: 3}})
	for i, err := range errs {
		if err != failed {
			t.Fatalf("call %d got %v, want its batch's error", i, err)
		}
	}
	if got := r2.sent(); len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("batches %v, want the three that came within the linger in one", got)
	}
}

// A caller whose context ends while its batch is in flight stops waiting
// at once, with its context's error.
func TestACallerStopsWaitingWhenItsContextEnds(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), started: make(chan int, 10)}
	q := newQueue(r, 8)
	ctx, cancel := context.WithCancel(context.Background())
	out := do(ctx, q, []*item{{n: 0}})
	<-r.started
	cancel()
	if errs := <-out; !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("got %v, want the context's error", errs[0])
	}
	close(r.hold)
	waitFor(t, q, 0)
	waitIdle(t, q)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelled != 0 {
		t.Fatal("the batch's context ended with its caller's: the other callers' sale would be cut off")
	}
}

// A queue that names no Full error answers ErrFull, never nil (a caller
// would read the results of a call never sent).
func TestAFullQueueWithoutItsOwnErrorAnswersErrFull(t *testing.T) {
	r := &recorder{hold: make(chan struct{}), started: make(chan int, 10)}
	q := newQueue(r, 8)
	q.Limit = 1
	busy := do(context.Background(), q, []*item{{n: 0}})
	<-r.started
	queued := do(context.Background(), q, []*item{{n: 1}})
	waitFor(t, q, 1)
	if err := q.Do(context.Background(), &item{n: 2}); err != ErrFull {
		t.Fatalf("got %v, want ErrFull", err)
	}
	close(r.hold)
	<-busy
	<-queued
}
