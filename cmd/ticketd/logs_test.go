package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// logBuffer is the log of a ticketd under test, written concurrently.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// logLine is one JSON log line: its time, level, message and the
// attributes the test reads.
type logLine struct {
	Time     time.Time `json:"time"`
	Level    string    `json:"level"`
	Msg      string    `json:"msg"`
	Route    string    `json:"route"`
	Repeated int       `json:"repeated"`
}

func (b *logBuffer) lines(t *testing.T) []logLine {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []logLine
	for _, raw := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		var l logLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", raw, err)
		}
		out = append(out, l)
	}
	return out
}

// failuresLogged is how many failed requests the "request failed" lines
// stand for: one a line, or the count of a summary line.
func failuresLogged(ls []logLine) int {
	n := 0
	for _, l := range ls {
		if l.Msg == "request failed" {
			n += max(1, l.Repeated)
		}
	}
	return n
}

// failuresCounted sums ticketd_http_failures_total over its series.
func failuresCounted(t *testing.T, base string) int {
	t.Helper()
	st, body := call(t, "GET", base+"/metrics", nil, "")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	n := 0
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "ticketd_http_failures_total{") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", l, err)
			}
			n += int(v)
		}
	}
	return n
}

// Issue 17, item 6: a Redis outage under load (partners reserving as fast
// as they can, the payment loops claiming webhooks) made thousands of log
// lines. Through ticketd's own logger (newLogger, as main builds it) the
// log stays bounded: a message, per logger (a failed request's route),
// writes at most two lines in any second (its first line and a summary
// with the count of its repeats); and nothing is lost from the counts:
// the "request failed" lines add up to ticketd_http_failures_total, which
// counts every failed request.
func TestFaultRedisOutageKeepsTheLogBoundedAndTheCountsWhole(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := startProxy(t, "redis-logs", srv.Addr)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.RedisURL, cfg.RedisURLSet = "127.0.0.1:0", "redis://"+proxy.Addr(), true
	cfg.DatabaseURL, cfg.DatabaseURLSet = pgtest.NewURL(t), true
	cfg.KeyPrefix, cfg.AdminToken, cfg.Recovery = "", "logs-admin", recoveryAuto
	cfg.TrustedProxies, cfg.CardWebhookSecret = "127.0.0.1/32,::1/128", faultCardSecret
	var logs logBuffer
	log, flush := newLogger(&logs, "json")
	base := runTicketdLog(t, cfg, options{API: true, Worker: true}, log)
	t.Cleanup(func() { proxy.Restore(t) }) // healed before ticketd stops (cleanups run last first)
	api := servertest.Remote(base)
	if r := api.Do(t, "PUT", "/v1/admin/catalog", map[string]string{"Authorization": "Bearer logs-admin"}, []byte(proxiedCatalog)); r.Status != 200 {
		t.Fatalf("apply: %s", r)
	}

	// Partners reserve without a pause, also while Redis is away.
	var stop atomic.Bool
	var answers sync.Map // status -> *atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r := api.Reserve(t, "a", "ev_p", map[string]any{"selectedTicketId": "tk", "quantity": 1})
				n, _ := answers.LoadOrStore(r.Status, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		}()
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	answered := func(status int) int64 {
		n, ok := answers.Load(status)
		if !ok {
			return 0
		}
		return n.(*atomic.Int64).Load()
	}
	waitUntil(t, "sales before the outage", func() bool { return answered(200) >= 50 })

	proxy.Refuse()
	waitUntil(t, "requests answered 503 in the outage", func() bool { return answered(503) >= 200 })
	time.Sleep(3 * time.Second) // the outage lasts as the probe's did: what is measured is its log
	proxy.Restore(t)
	sold := answered(200)
	waitUntil(t, "sales again after the outage", func() bool { return answered(200) >= sold+50 })
	stop.Store(true)
	wg.Wait()

	// Every failed request is counted, once a summary line for the last
	// repeats has been written (within a second); then flush writes what
	// may still be pending, as main does at exit.
	failed := failuresCounted(t, base)
	if failed == 0 {
		t.Fatalf("no request failed in the outage (answers: 503 x %d): nothing was tested", answered(503))
	}
	deadline := time.Now().Add(5 * time.Second)
	for failuresLogged(logs.lines(t)) < failed && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	flush()
	lines := logs.lines(t)
	if got := failuresLogged(lines); got != failed {
		t.Errorf("the request failed lines stand for %d failures, ticketd_http_failures_total says %d", got, failed)
	}
	summaries := 0
	for _, l := range lines {
		if l.Msg == "request failed" && l.Repeated > 0 {
			summaries++
		}
	}

	// No message writes more than two lines in a second.
	perSecond := map[string]int{}
	worst, worstKey := 0, ""
	for _, l := range lines {
		k := fmt.Sprintf("%s %s %q route=%s", l.Time.Truncate(time.Second).Format("15:04:05"), l.Level, l.Msg, l.Route)
		perSecond[k]++
		if perSecond[k] > worst {
			worst, worstKey = perSecond[k], k
		}
	}
	if worst > 2 {
		t.Errorf("%s: %d lines in one second, want at most 2 (the first and a summary)", worstKey, worst)
	}
	t.Logf("outage: %d requests answered 503, %d failed (logged in %d lines, %d of them summaries); the whole log %d lines",
		answered(503), failed, countMsg(lines, "request failed"), summaries, len(lines))
	if t.Failed() || testing.Verbose() {
		keys := make([]string, 0, len(perSecond))
		for k := range perSecond {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("%3d  %s", perSecond[k], k)
		}
	}
}

func countMsg(ls []logLine, msg string) int {
	n := 0
	for _, l := range ls {
		if l.Msg == msg {
			n++
		}
	}
	return n
}

// waitUntil polls cond every 20 ms for up to 60 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startLogged runs ticketd (the API) on cfg until the test ends, its log
// kept as JSON lines; the lines once it listens.
func startLogged(t *testing.T, cfg config) *logBuffer {
	t.Helper()
	var logs logBuffer
	log, _ := newLogger(&logs, "json")
	runTicketdLog(t, cfg, options{API: true}, log)
	return &logs
}

// linesWith are the lines (level and message) whose message contains s.
func linesWith(ls []logLine, s string) []string {
	var out []string
	for _, l := range ls {
		if strings.Contains(l.Msg, s) {
			out = append(out, l.Level+" "+l.Msg)
		}
	}
	return out
}

// Issue 21: a first start on an empty Redis said Redis "lost its state",
// at WARN, and rebuilt. With Postgres recording no generation it is a new
// Redis: initialised, at INFO, nothing said lost. Once a generation is
// recorded, the same empty Redis at the next start is a loss, at WARN.
func TestFirstStartInitialisesANewRedis(t *testing.T) {
	rc, space := redistest.New(t)
	redistest.Flush(t, rc, space)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.KeyPrefix, cfg.RedisURL, cfg.RedisURLSet = "127.0.0.1:0", space.Prefix, redistest.URL(), true
	cfg.DatabaseURL, cfg.DatabaseURLSet = pgtest.NewURL(t), true
	cfg.Development, cfg.Recovery = true, recoveryAuto

	t.Run("first start", func(t *testing.T) {
		ls := startLogged(t, cfg).lines(t)
		if got := linesWith(ls, "initialising a new Redis"); len(got) != 2 || !strings.HasPrefix(got[0], "INFO") || !strings.HasPrefix(got[1], "INFO") {
			t.Errorf("initialising lines %q, want the monitor's and the rebuild's, at INFO", got)
		}
		for _, l := range ls {
			if l.Level != "INFO" && (strings.Contains(l.Msg, "redis state") || strings.Contains(l.Msg, "rebuild")) {
				t.Errorf("a first start logged %s %q", l.Level, l.Msg)
			}
		}
	})
	t.Run("Redis emptied since", func(t *testing.T) {
		redistest.Flush(t, rc, space)
		ls := startLogged(t, cfg).lines(t)
		if got := linesWith(ls, "redis state is not current"); len(got) != 1 || !strings.HasPrefix(got[0], "WARN") {
			t.Errorf("loss lines %q, want one WARN", got)
		}
		if got := linesWith(ls, "initialising"); len(got) != 0 {
			t.Errorf("a loss logged as a first start: %q", got)
		}
	})
}

// Embedded mode (no Redis, no Postgres answering, development) warns of
// each once, in its !!! line, and its empty in-process Redis is a new one,
// never a loss.
func TestEmbeddedModeWarnsOnce(t *testing.T) {
	cfg := config{Addr: "127.0.0.1:0", AppURL: "http://localhost", RedisURL: "redis://127.0.0.1:1",
		DatabaseURL: "postgres://postgres@127.0.0.1:1/postgres", OrderTTL: time.Minute, SeatHoldTTL: time.Minute, CheckoutTTL: time.Minute,
		Development: true, TestPayments: true, CardProcessor: "card", WalletProcessor: "wallet"}
	ls := startLogged(t, cfg).lines(t)
	for _, what := range []string{"EMBEDDED IN-PROCESS Redis", "write-through is OFF"} {
		if got := linesWith(ls, what); len(got) != 1 || !strings.HasPrefix(got[0], "WARN !!!") {
			t.Errorf("%s: %d lines %q, want one WARN !!! line", what, len(got), got)
		}
	}
	if got := linesWith(ls, "write-through is OFF"); len(got) == 1 && !strings.Contains(got[0], "not reachable at 127.0.0.1:1:") {
		t.Errorf("the Postgres warning %q does not name the address it tried", got[0])
	}
	if got := linesWith(ls, "lost its state"); len(got) != 0 {
		t.Errorf("the embedded Redis's start logged as a loss: %q", got)
	}
	if got := linesWith(ls, "initialising a new Redis"); len(got) != 1 {
		t.Errorf("initialising lines %q, want one", got)
	}
}
