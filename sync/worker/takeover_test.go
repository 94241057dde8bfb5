package worker

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
)

// setAlive sets consumer's liveness key for ttl, as its worker would.
func (b *bundle) setAlive(t *testing.T, consumer string, ttl time.Duration) {
	t.Helper()
	err := b.rc.Do(context.Background(), b.rc.B().Set().Key(b.space.WorkerAlive(consumer)).Value("1").Px(ttl).Build()).Error()
	if err != nil {
		t.Fatal(err)
	}
}

// consumerParts returns the partitions whose group has consumer.
func (b *bundle) consumerParts(t *testing.T, consumer string) []int {
	t.Helper()
	return consumerParts(t, b.rc, b.space, consumer)
}

func consumerParts(t *testing.T, rc rueidis.Client, space keys.Space, consumer string) []int {
	t.Helper()
	var out []int
	for p, cs := range groupConsumers(t, rc, space) {
		if _, ok := cs[consumer]; ok {
			out = append(out, p)
		}
	}
	return out
}

// pendingWith returns how many entries consumer holds on all paid streams.
func pendingWith(t *testing.T, rc rueidis.Client, space keys.Space, consumer string) int64 {
	t.Helper()
	var n int64
	for _, cs := range groupConsumers(t, rc, space) {
		n += cs[consumer]
	}
	return n
}

// groupConsumers returns, for each partition, the consumers of its paid
// stream's group and how many entries each holds.
func groupConsumers(t *testing.T, rc rueidis.Client, space keys.Space) []map[string]int64 {
	t.Helper()
	cmds := make(rueidis.Commands, keys.Partitions)
	for p := range keys.Partitions {
		cmds[p] = rc.B().XinfoConsumers().Key(space.Paid(p)).Group(DefaultGroup).Build()
	}
	out := make([]map[string]int64, keys.Partitions)
	for p, r := range rc.DoMulti(context.Background(), cmds...) {
		list, err := r.ToArray()
		if err != nil {
			t.Fatalf("XINFO CONSUMERS %s: %v", space.Paid(p), err)
		}
		out[p] = map[string]int64{}
		for _, c := range list {
			m, err := c.AsMap()
			if err != nil {
				t.Fatal(err)
			}
			name, pending := m["name"], m["pending"]
			s, err := name.ToString()
			if err != nil {
				t.Fatal(err)
			}
			if out[p][s], err = pending.AsInt64(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// logBuffer collects JSON log lines written while workers run.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// takeovers returns, for each consumer a log line says was taken over
// (entries moved) or removed, the entries it names.
func (l *logBuffer) takeovers(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Level    string `json:"level"`
			Msg      string `json:"msg"`
			Consumer string `json:"consumer"`
			Entries  int64  `json:"entries"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Consumer == "" {
			continue
		}
		if strings.Contains(rec.Msg, "took over") && rec.Level == "WARN" || strings.Contains(rec.Msg, "removed") && rec.Level == "INFO" {
			out[rec.Consumer] += rec.Entries
		}
	}
	return out
}

func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A worker killed mid-batch (its liveness key left to expire, as a killed
// process leaves it) is replaced by one with another consumer name and the
// default ClaimIdle of 30 s: everything the first had read reaches Postgres
// within seconds, once, the log names the consumer and the count, and the
// dead consumer is removed from every group.
func TestKilledWorkerIsReplacedWithinSeconds(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{"read", "written"} {
		t.Run("after "+stage, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			recs := b.confirmEach(t, 6, 3, "ev_killed_"+stage+"_", 2)
			b.crashA(t, stage)
			b.setAlive(t, "A", aliveTTL) // refreshed just before it died
			if n := pendingWith(t, b.rc, b.space, "A"); n != 6 {
				t.Fatalf("A holds %d entries, want 6", n)
			}

			var logs logBuffer
			w := b.worker("B")
			w.ClaimIdle, w.ClaimEvery = DefaultClaimIdle, DefaultClaimEvery
			w.Logger = logs.logger()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			// Well under ClaimIdle: XAUTOCLAIM alone would fail this.
			waitWithin(t, 15*time.Second, "the takeover of A's entries", func() bool {
				length, pending := b.streams(t)
				return length == 0 && pending == 0 && len(b.consumerParts(t, "A")) == 0
			})
			cancel()
			waitReturn(t, done)
			b.assertAllWritten(t, recs...)
			if got := logs.takeovers(t); got["A"] != 6 {
				t.Fatalf("takeover log lines: %v, want A with 6 entries", got)
			}
		})
	}
}

// A live worker slow in its round (its heartbeat runs, its round does not
// move) keeps its entries: another worker looking again and again, well past
// the liveness key's TTL, takes none of them before ClaimIdle.
func TestLiveWorkersEntriesAreNotTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 5, 5, "ev_live_", 1)

	a := b.worker("A")
	a.aliveTTL, a.aliveEvery = 300*time.Millisecond, 50*time.Millisecond
	reading, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.testHook = func(stage string) error {
		if stage == "read" {
			once.Do(func() { close(reading); <-release })
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctx) }()
	select {
	case <-reading:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not read the entries")
	}
	// From here on A's round stands still; only its heartbeat keeps it.
	mark := time.Now().Add(3 * a.aliveTTL)

	var logs logBuffer
	w := b.worker("B") // ClaimIdle an hour
	w.ClaimEvery, w.PollInterval = 20*time.Millisecond, 5*time.Millisecond
	w.Logger = logs.logger()
	var late atomic.Int32 // looks that ended after mark
	w.testHook = func(stage string) error {
		if stage == "takeover" && time.Now().After(mark) {
			late.Add(1)
		}
		return nil
	}
	doneB := make(chan error, 1)
	go func() { doneB <- w.Run(ctx) }()
	// Two looks ended after mark, so one started after it: A's key would
	// have expired three times over without its heartbeat.
	waitFor(t, "B to look past A's TTL", func() bool { return late.Load() >= 2 })
	if n := pendingWith(t, b.rc, b.space, "A"); n != 5 {
		t.Fatalf("A holds %d entries, want all 5", n)
	}
	if got := logs.takeovers(t); len(got) != 0 {
		t.Fatalf("B took over %v from a live worker", got)
	}
	if len(b.consumerParts(t, "A")) == 0 {
		t.Fatal("live consumer A was removed")
	}

	close(release)
	waitFor(t, "A's batch", func() bool {
		length, pending := b.streams(t)
		return length == 0 && pending == 0
	})
	cancel()
	waitReturn(t, doneA)
	waitReturn(t, doneB)
	b.assertAllWritten(t, recs...)
	// Both stopped cleanly: their liveness keys are gone.
	for _, c := range []string{"A", "B"} {
		n, err := b.rc.Do(context.Background(), b.rc.B().Exists().Key(b.space.WorkerAlive(c)).Build()).AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("liveness key of %s after stop: exists %d, %v", c, n, err)
		}
	}
}

// A paid stream that is gone (Redis restarted empty, the stream not yet
// recreated) has no consumers: the look for stopped ones goes on over the
// other streams instead of failing the worker's round.
func TestTakeoverSkipsAMissingStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 3, 1, "ev_missing_", 1)
	b.crashA(t, "read")
	gone := keys.Partition("ev_missing_other")
	if gone == keys.Partition("ev_missing_0") {
		t.Fatal("test events share a partition; pick others")
	}
	if err := b.rc.Do(context.Background(), b.rc.B().Del().Key(b.space.Paid(gone)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	w := b.worker("B")
	n, _, err := w.takeOver(context.Background())
	if err != nil {
		t.Fatalf("takeover with a stream missing: %v", err)
	}
	if n != 3 {
		t.Fatalf("took over %d entries, want 3", n)
	}
	b.assertOrders(t, recs...)
}
