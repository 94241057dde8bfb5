package unsynced

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/sync/worker"
)

// Every form the setting takes is read as written, in either order, and
// String writes it back.
func TestParseReadsADurationACountOrBoth(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   Limit
		string string
	}{
		{Default, Limit{Age: time.Minute, Entries: 100000}, "1m,100000"},
		{"60s,100000", Limit{Age: time.Minute, Entries: 100000}, "1m,100000"},
		{"100000,60s", Limit{Age: time.Minute, Entries: 100000}, "1m,100000"},
		{" 5s , 200 ", Limit{Age: 5 * time.Second, Entries: 200}, "5s,200"},
		{"2m", Limit{Age: 2 * time.Minute}, "2m"},
		{"90m,7", Limit{Age: 90 * time.Minute, Entries: 7}, "90m,7"},
		{"1h", Limit{Age: time.Hour}, "1h"},
		{"1500ms", Limit{Age: 1500 * time.Millisecond}, "1.5s"},
		{"50000", Limit{Entries: 50000}, "50000"},
		{"1", Limit{Entries: 1}, "1"},
		{"1s", Limit{Age: time.Second}, "1s"},
		{"off", Limit{}, "off"},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if got.Off() != (c.in == "off") {
			t.Errorf("Parse(%q).Off() = %v", c.in, got.Off())
		}
		if s := got.String(); s != c.string {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, s, c.string)
		}
	}
}

// Every bad value is refused with a message that says what is wrong with
// it and what is wanted.
func TestParseRefusesBadValues(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"", "comma-separated (such as 60s,100000), or off"},
		{" ", "comma-separated"},
		{"60s,", "comma-separated"},
		{",100", "comma-separated"},
		{"60s,,100", "comma-separated"},
		{"0", `the count "0" must be a whole number from 1 up (off turns the limit off)`},
		{"000", "must be a whole number from 1 up"},
		{"99999999999999999999", "must be a whole number from 1 up"},
		{"-5", `"-5" is neither a duration (such as 60s) nor a count of paid orders`},
		{"+5", "is neither a duration"},
		{"1.5", "is neither a duration"},
		{"100k", "is neither a duration"},
		{"1,000", "must be a whole number from 1 up"},
		{"60", ""}, // a count of 60: fine (checked below)
		{"sixty", `"sixty" is neither a duration`},
		{"OFF", `"OFF" is neither a duration`},
		{"off,60s", `"off" is neither a duration`},
		{"0s", "the duration 0s must be at least 1s (off turns the limit off)"},
		{"500ms", "the duration 500ms must be at least 1s"},
		{"-1m", "the duration -1m must be at least 1s"},
		{"60s,2m", "two durations (1m and 2m): give at most one duration and one count"},
		{"100,200", "two counts (100 and 200)"},
		{"60s,100,200", "two counts"},
	} {
		_, err := Parse(c.in)
		if c.says == "" {
			if err != nil {
				t.Errorf("Parse(%q): %v, want it read", c.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", c.in, err, c.says)
		}
	}
}

// gateLog is a gate on a 5 s / 200 orders limit whose log lines the test reads.
func gateLog(t *testing.T) (*Gate, *bytes.Buffer, *[]bool) {
	t.Helper()
	var buf bytes.Buffer
	var changes []bool
	g := &Gate{Limit: Limit{Age: 5 * time.Second, Entries: 200}, Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		OnChange: func(stopped bool) { changes = append(changes, stopped) }}
	return g, &buf, &changes
}

// backlog is n entries, the oldest paid age before now.
func backlog(n int64, now time.Time, age time.Duration) worker.BacklogStats {
	if n == 0 {
		return worker.BacklogStats{}
	}
	return worker.BacklogStats{Entries: n, Oldest: now.Add(-age)}
}

// Sales stop once the backlog is over either bound (at it is not over),
// stay stopped until it is back under 90% of both, and the answer, the
// log (one line per change) and OnChange say so.
func TestGateStopsOverTheLimitAndReopensUnder90Percent(t *testing.T) {
	g, logs, changes := gateLog(t)
	now := time.Unix(1_800_000_000, 0)
	steps := []struct {
		entries int64
		age     time.Duration
		stopped bool
		says    string // in the 503's message while stopped
	}{
		{0, 0, false, ""},
		{200, 5 * time.Second, false, ""}, // at the limit: not over it
		{201, time.Second, true, "201 paid orders (the oldest 1.0s old) wait for Postgres, over TICKETD_MAX_UNSYNCED=5s,200 (more than 200 orders)"},
		{190, time.Second, true, "under 180 orders and 4.5s old"}, // back under the limit, not under 90%
		{181, 4 * time.Second, true, "TICKETD_MAX_UNSYNCED=5s,200 stopped them"},
		{180, 4500 * time.Millisecond, false, ""}, // under 90% of both
		{150, 5001 * time.Millisecond, true, "over TICKETD_MAX_UNSYNCED=5s,200 (the oldest older than 5s)"},
		{1, 4600 * time.Millisecond, true, "1 paid orders"}, // the age is not yet under 4.5 s
		{100_412, 61 * time.Second, true, "100,412 paid orders (the oldest 61.0s old) wait for Postgres, over TICKETD_MAX_UNSYNCED=5s,200 (more than 200 orders, the oldest older than 5s); they resume by themselves once it catches up"},
		{0, 0, false, ""},
	}
	var want []bool
	for i, s := range steps {
		now = now.Add(time.Second)
		g.Observe(backlog(s.entries, now, s.age), now)
		e := g.Refusal()
		if (e != nil) != s.stopped {
			t.Fatalf("step %d (%d entries, oldest %s): refusal %v, want stopped %v", i, s.entries, s.age, e, s.stopped)
		}
		if e != nil {
			if e.Status != 503 || e.Code != "SERVICE_UNAVAILABLE" || e.Reason != Reason ||
				!strings.HasPrefix(e.Message, "sales are stopped: ") || !strings.Contains(e.Message, s.says) {
				t.Errorf("step %d: %d %s %s %q, want 503 SERVICE_UNAVAILABLE reason unsynced saying %q", i, e.Status, e.Code, e.Reason, e.Message, s.says)
			}
		}
		if i > 0 && s.stopped != steps[i-1].stopped {
			want = append(want, s.stopped)
		}
	}
	if len(*changes) != len(want) || strings.Count(logs.String(), "\n") != len(want) {
		t.Fatalf("changes %v and log\n%s\nwant one each of %v", *changes, logs, want)
	}
	for i := range want {
		if (*changes)[i] != want[i] {
			t.Fatalf("changes %v, want %v", *changes, want)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "sales stop") || !strings.Contains(lines[0], "entries=201") ||
		!strings.Contains(lines[0], "limit=5s,200") {
		t.Errorf("stop line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "sales resume") || !strings.Contains(lines[1], "stopped_for=3s") {
		t.Errorf("resume line: %s", lines[1])
	}
}

// A limit of one bound only ignores the other figure; off (or a nil
// gate) never refuses.
func TestGateBoundsOnlyWhatTheLimitNames(t *testing.T) {
	now := time.Now()
	count := &Gate{Limit: Limit{Entries: 10}, Logger: slog.New(slog.DiscardHandler)}
	count.Observe(backlog(10, now, time.Hour), now)
	if e := count.Refusal(); e != nil {
		t.Fatalf("count-only limit, 10 entries an hour old: %v", e)
	}
	count.Observe(backlog(11, now, 0), now)
	if count.Refusal() == nil {
		t.Fatal("count-only limit, 11 entries: not stopped")
	}
	count.Observe(backlog(9, now, time.Hour), now)
	if e := count.Refusal(); e != nil {
		t.Fatalf("count-only limit, back to 9: %v", e)
	}
	age := &Gate{Limit: Limit{Age: time.Minute}, Logger: slog.New(slog.DiscardHandler)}
	age.Observe(backlog(1_000_000, now, 59*time.Second), now)
	if e := age.Refusal(); e != nil {
		t.Fatalf("age-only limit, a million entries 59 s old: %v", e)
	}
	age.Observe(backlog(1, now, 61*time.Second), now)
	if age.Refusal() == nil {
		t.Fatal("age-only limit, 61 s: not stopped")
	}
	off := &Gate{Logger: slog.New(slog.DiscardHandler)}
	off.Observe(backlog(1_000_000, now, time.Hour), now)
	var none *Gate
	none.Observe(backlog(1_000_000, now, time.Hour), now)
	if off.Refusal() != nil || none.Refusal() != nil {
		t.Fatal("an off or nil gate refused")
	}
}

// The surfaces' gate answers the first gate's refusal when it has one
// (the Redis state's reason wins), else the limit's.
func TestAfterPutsTheFirstGateFirst(t *testing.T) {
	redis := apierr.Unavailable("sales are stopped: Redis is unreachable; retry shortly")
	var first *apierr.Error
	firstGate := func() *apierr.Error { return first }
	var none *Gate
	if got := none.After(firstGate); got() != nil {
		t.Fatal("nil gate after an open one refused")
	}
	g := &Gate{Limit: Limit{Entries: 1}, Logger: slog.New(slog.DiscardHandler)}
	gate := g.After(firstGate)
	if e := gate(); e != nil {
		t.Fatalf("both open: %v", e)
	}
	now := time.Now()
	g.Observe(backlog(2, now, 0), now)
	if e := gate(); e == nil || e.Reason != Reason {
		t.Fatalf("the limit closed: %v", e)
	}
	first = redis
	if e := gate(); e != redis {
		t.Fatalf("both closed: %v, want the Redis state's", e)
	}
	g.Observe(backlog(0, now, 0), now)
	if e := gate(); e != redis {
		t.Fatalf("the Redis state closed: %v", e)
	}
	first = nil
	if e := gate(); e != nil {
		t.Fatalf("both open again: %v", e)
	}
}
