package logrepeat_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/logrepeat"
)

// capture keeps every record written, with the attributes of its logger.
type capture struct {
	mu    *sync.Mutex
	recs  *[]line
	attrs []slog.Attr
}

// line is one written record: its message, level and attributes by key.
type line struct {
	msg   string
	level slog.Level
	attrs map[string]slog.Value
}

func newCapture() capture { return capture{mu: &sync.Mutex{}, recs: &[]line{}} }

func (c capture) Enabled(context.Context, slog.Level) bool { return true }
func (c capture) Handle(_ context.Context, r slog.Record) error {
	l := line{msg: r.Message, level: r.Level, attrs: map[string]slog.Value{}}
	for _, a := range c.attrs {
		l.attrs[a.Key] = a.Value
	}
	r.Attrs(func(a slog.Attr) bool { l.attrs[a.Key] = a.Value; return true })
	c.mu.Lock()
	*c.recs = append(*c.recs, l)
	c.mu.Unlock()
	return nil
}
func (c capture) WithAttrs(as []slog.Attr) slog.Handler {
	c.attrs = append(append([]slog.Attr{}, c.attrs...), as...)
	return c
}
func (c capture) WithGroup(string) slog.Handler { return c }

func (c capture) lines() []line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]line{}, *c.recs...)
}

// of returns the lines of message msg.
func (c capture) of(msg string) []line {
	var out []line
	for _, l := range c.lines() {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// represented is how many records the lines of msg stand for: one per
// line, plus the repeats a summary counts.
func represented(ls []line) int {
	n := 0
	for _, l := range ls {
		n++
		if v, ok := l.attrs["repeated"]; ok {
			n += int(v.Int64()) - 1
		}
	}
	return n
}

// waitFor polls until cond holds (the summary lines come from a timer).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A burst of one message is its first line, written at once, then one
// summary with the count of the rest and the latest one's attributes.
// The window is far longer than the burst, whatever the machine's load;
// Flush writes the summary the window's end would.
func TestBurstIsOneLineThenItsCount(t *testing.T) {
	t.Parallel()
	c := newCapture()
	h := logrepeat.New(c, logrepeat.Options{Window: time.Hour})
	log := slog.New(h)
	for i := range 128 {
		log.Warn("payments: claim due webhooks", "partition", i)
		if i == 0 && len(c.of("payments: claim due webhooks")) != 1 {
			t.Fatal("the first line was not written at once")
		}
	}
	if got := c.of("payments: claim due webhooks"); len(got) != 1 || got[0].attrs["partition"].Int64() != 0 {
		t.Fatalf("during the burst: %+v, want the first line only", got)
	}
	h.Flush()
	if got := c.of("payments: claim due webhooks"); len(got) != 2 {
		t.Fatalf("after the burst: %d lines, want the first and one summary", len(got))
	}
	sum := c.of("payments: claim due webhooks")[1]
	if sum.attrs["repeated"].Int64() != 127 || sum.attrs["partition"].Int64() != 127 || sum.level != slog.LevelWarn {
		t.Fatalf("summary %+v, want repeated=127 with the last repeat's attributes, at WARN", sum)
	}
}

// While a message keeps repeating it writes one line a window, and every
// record is counted in exactly one of them; once it stops for a window,
// its next record is written at once again.
func TestSteadyRepeatsAreOneLineAWindowAndAddUp(t *testing.T) {
	t.Parallel()
	c := newCapture()
	const window = 100 * time.Millisecond
	log := slog.New(logrepeat.New(c, logrepeat.Options{Window: window}))
	sent := 0
	start := time.Now()
	for time.Since(start) < 10*window {
		log.Error("request failed", "err", "redis: connection refused")
		sent++
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	waitFor(t, "every repeat counted", func() bool { return represented(c.of("request failed")) == sent })
	// One line a window, plus the first line and the last summary.
	if n, most := len(c.of("request failed")), int(elapsed/window)+2; n > most {
		t.Fatalf("%d records in %v wrote %d lines, want at most %d", sent, elapsed, n, most)
	}
	// The summaries stop after a window without repeats...
	waitFor(t, "the summaries to stop", func() bool {
		n := len(c.of("request failed"))
		time.Sleep(3 * window)
		return len(c.of("request failed")) == n
	})
	// ...and the next record is written at once, whole. On a loaded
	// machine the window's end may come later than it looks from here:
	// a record before it is a repeat (counted in a summary, as every
	// record is), and the next one is tried once its window has passed.
	for try := 1; ; try++ {
		before := len(c.of("request failed"))
		log.Error("request failed", "err", "again")
		got := c.of("request failed")
		if len(got) == before+1 {
			if l := got[before]; l.attrs["err"].String() != "again" || l.attrs["repeated"].Any() != nil {
				t.Fatalf("after a quiet window: %+v, want the record whole", l)
			}
			break
		}
		sent++
		if try == 20 {
			t.Fatalf("after %d quiet windows the record was still held back as a repeat", try)
		}
		waitFor(t, "the repeat counted", func() bool { return represented(c.of("request failed")) == sent })
		time.Sleep(3 * window) // a quiet window: the behaviour under test is time passing
	}
}

// A record of another message is written at once while one message
// floods, also from a logger of another route.
func TestOtherMessagesAreNeverHeldBack(t *testing.T) {
	t.Parallel()
	c := newCapture()
	h := logrepeat.New(c, logrepeat.Options{Window: time.Hour})
	log := slog.New(h)
	for range 50 {
		log.Error("request failed")
	}
	log.Info("ticketd listening")
	log.Error("request failed", "x", 1) // same message, other attribute: a repeat
	log.Warn("request failed")          // other level: another message
	routeA, routeB := log.With("route", "/a"), log.With("route", "/b")
	routeA.Error("request failed")
	routeB.Error("request failed")
	routeA.Error("request failed")
	got := map[string]int{}
	for _, l := range c.lines() {
		got[fmt.Sprintf("%s %s route=%v", l.level, l.msg, l.attrs["route"])]++
	}
	want := map[string]int{
		"ERROR request failed route=<nil>": 1, "INFO ticketd listening route=<nil>": 1, "WARN request failed route=<nil>": 1,
		"ERROR request failed route=/a": 1, "ERROR request failed route=/b": 1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("written: %v\nwant:    %v", got, want)
	}
	// Flush writes what the hour-long window still counts.
	h.Flush()
	if sums := c.of("request failed"); represented(sums) != 50+1+1+1+2 {
		t.Fatalf("after Flush the lines stand for %d records, want 55: %+v", represented(sums), sums)
	}
}

// With the table full of messages that are repeating, a new message is
// written, every time, rather than held or lost.
func TestFullTableWritesNewMessagesAsTheyAre(t *testing.T) {
	t.Parallel()
	c := newCapture()
	log := slog.New(logrepeat.New(c, logrepeat.Options{Window: time.Hour, MaxMessages: 2}))
	for range 3 {
		log.Error("one")
		log.Error("two")
	}
	for range 3 {
		log.Error("three")
	}
	if n := len(c.of("three")); n != 3 {
		t.Fatalf("a message beyond the table was written %d times of 3", n)
	}
	if len(c.of("one")) != 1 || len(c.of("two")) != 1 {
		t.Fatal("the tracked messages were not collapsed")
	}
}

// A message seen once is forgotten after its window, making room: a new
// message is tracked (its repeat collapsed), not written as it is as
// beside a full table. The two records of c must fall in c's window: on
// a loaded machine that took longer, the try proves nothing and is made
// again.
func TestQuietMessagesLeaveTheTable(t *testing.T) {
	t.Parallel()
	const window = 50 * time.Millisecond
	for try := 1; ; try++ {
		c := newCapture()
		log := slog.New(logrepeat.New(c, logrepeat.Options{Window: window, MaxMessages: 2}))
		log.Info("a")
		log.Info("b")
		time.Sleep(2 * window) // both windows over: what is tested is that they are forgotten
		start := time.Now()
		log.Info("c")
		log.Info("c")
		if time.Since(start) >= window {
			if try == 20 {
				t.Fatalf("%d tries: two log calls never came within %v of each other", try, window)
			}
			continue
		}
		if n := len(c.of("c")); n != 1 {
			t.Fatalf("c written %d times: the quiet messages still filled the table", n)
		}
		return
	}
}

// Many goroutines logging the same and different messages: every record
// is in the lines once (run with -race).
func TestConcurrentRecordsAreAllCounted(t *testing.T) {
	t.Parallel()
	c := newCapture()
	h := logrepeat.New(c, logrepeat.Options{Window: 20 * time.Millisecond})
	log := slog.New(h)
	var wg sync.WaitGroup
	const workers, each = 8, 2000
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := log.With("worker", w)
			for i := range each {
				log.Error("shared", "i", i)
				own.Warn("own")
			}
		}()
	}
	wg.Wait()
	h.Flush()
	waitFor(t, "every record counted", func() bool {
		return represented(c.of("shared")) == workers*each && represented(c.of("own")) == workers*each
	})
}

// A Distinct attribute belongs to the message: lines naming different
// payments to refund are each written in full, at once, while repeats of
// one payment (a processor's retries) and lines without the attribute
// still collapse.
func TestDistinctAttributesAreNeverCollapsedTogether(t *testing.T) {
	t.Parallel()
	c := newCapture()
	// A window far longer than the test's writes: the repeats fall in it
	// even on a loaded machine; Flush writes the summaries.
	h := logrepeat.New(c, logrepeat.Options{Window: time.Hour, Distinct: []string{"payment"}})
	log := slog.New(h)
	const msg = "webhooks: payment needs a refund"
	for i := range 50 {
		log.Warn(msg, "registration", fmt.Sprint("r", i), "payment", fmt.Sprint("cs_", i))
	}
	got := c.of(msg)
	if len(got) != 50 {
		t.Fatalf("%d lines for 50 payments, want each written at once", len(got))
	}
	for i, l := range got {
		if l.attrs["payment"].String() != fmt.Sprint("cs_", i) {
			t.Fatalf("line %d names payment %v", i, l.attrs["payment"])
		}
	}
	for range 10 {
		log.Warn(msg, "registration", "r0", "payment", "cs_0")
		log.Warn("registrations: checkout holds expired", "count", 1)
	}
	h.Flush()
	if len(c.of(msg)) != 51 || len(c.of("registrations: checkout holds expired")) != 2 {
		t.Fatalf("after the repeats: %d lines of payments, %d of holds; want 51 and 2", len(c.of(msg)), len(c.of("registrations: checkout holds expired")))
	}
	if s := c.of(msg)[50]; s.attrs["repeated"].Int64() != 10 || s.attrs["payment"].String() != "cs_0" {
		t.Fatalf("the repeats of one payment: %+v, want one summary of 10", s)
	}
}
