package redisuse

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// slowlogSettings is the server's slow log settings, to see them put back.
func slowlogSettings(t *testing.T, rc rueidis.Client) map[string]string {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().ConfigGet().Parameter("slowlog-*").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A window's sample names each ticketd script Redis ran by its name and
// other top-level commands by theirs, reads all it logged (more than the
// log's usual length), leaves out what a script called inside
// (redis_time's TIME), the sample's own commands and what the slow log
// held before, and puts the slow log's settings back; a window too short
// for the sample says so, and a server that logs every command already is
// left alone.
func TestWindowSampleNamesScriptsAndPutsTheSlowLogBack(t *testing.T) {
	srv := redistest.StartServer(t, "--slowlog-log-slower-than", "0")
	rc := srv.Client(t)
	ctx := context.Background()
	// Logged before the window: not the sample's.
	if err := rc.Do(ctx, rc.B().Hset().Key("before").FieldValue().FieldValue("f", "v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", "10000").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	want := slowlogSettings(t, rc)

	redisTime := eval.Load("redis_time")
	if err := eval.LoadInto(ctx, rc, redisTime); err != nil {
		t.Fatal(err)
	}

	m := New(rc)
	// Too short: nothing sampled, and nothing changed.
	m.Begin()
	m.End()
	if u := m.Take(); !errors.Is(u.ScriptTimeErr, errWindowShort) || len(u.ScriptTime) != 0 {
		t.Fatalf("a short window: %v, %v", u.ScriptTime, u.ScriptTimeErr)
	}
	if got := slowlogSettings(t, rc); got["slowlog-log-slower-than"] != want["slowlog-log-slower-than"] {
		t.Fatalf("after a short window the slow log is %v, want %v", got, want)
	}

	m.Begin()
	end := time.Now().Add(sampleAfter + sampleFor + 200*time.Millisecond)
	for time.Now().Before(end) {
		cmds := rueidis.Commands{
			rc.B().Fcall().Function(redisTime.Function()).Numkeys(1).Key("{p0}:k").Build(),
			rc.B().Set().Key("k").Value("v").Build(),
		}
		for _, r := range rc.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.End()
	u := m.Take()
	if u.ScriptTimeErr != nil {
		t.Fatal(u.ScriptTimeErr)
	}
	if u.ScriptTime["redis_time"] <= 0 || u.ScriptTime["set"] <= 0 {
		t.Fatalf("the sample %v lacks redis_time or set", u.ScriptTime)
	}
	// Read before the log's length is put back (128 here), which trims it.
	if u.ScriptCalls <= 128 {
		t.Fatalf("the sample summed %d commands, want all it logged (more than the log's usual 128)", u.ScriptCalls)
	}
	for _, not := range []string{"time", "hset", "config", "slowlog", "fcall"} {
		if _, ok := u.ScriptTime[not]; ok {
			t.Errorf("the sample %v has %s", u.ScriptTime, not)
		}
	}
	if got := slowlogSettings(t, rc); got["slowlog-log-slower-than"] != want["slowlog-log-slower-than"] || got["slowlog-max-len"] != want["slowlog-max-len"] {
		t.Fatalf("after the sample the slow log is %v, want %v", got, want)
	}
	// The next Take samples again.
	m.Begin()
	m.End()
	if u := m.Take(); !errors.Is(u.ScriptTimeErr, errWindowShort) {
		t.Fatalf("a new Take's short window: %v", u.ScriptTimeErr)
	}

	// Logging every command already (another bench sampling it): left as
	// it is, and said.
	if err := rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", "0").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	m.Begin()
	time.Sleep(sampleAfter + sampleFor)
	m.End()
	if u := m.Take(); !errors.Is(u.ScriptTimeErr, errLogsAll) || len(u.ScriptTime) != 0 {
		t.Fatalf("a server logging every command: %v, %v", u.ScriptTime, u.ScriptTimeErr)
	}
	if got := slowlogSettings(t, rc); got["slowlog-log-slower-than"] != "0" || got["slowlog-max-len"] != want["slowlog-max-len"] {
		t.Fatalf("a server logging every command was changed: %v", got)
	}
}

func TestSharesLargestFirst(t *testing.T) {
	got := Shares(map[string]int64{"order_confirm": 410, "order_reserve": 480, "set": 30, "get": 80, "ping": 1})
	if want := "order_reserve 48%, order_confirm 41%, get 8%, set 3%"; got != want {
		t.Fatalf("Shares = %q, want %q", got, want)
	}
	if got := Shares(nil); got != "" {
		t.Fatalf("Shares(nil) = %q", got)
	}
}

// A Redis that refuses CONFIG (a managed one) is not sampled, and the
// report says why.
func TestWindowOfARedisWithoutConfigSaysWhy(t *testing.T) {
	rc := redistest.StartServer(t, "--rename-command", "CONFIG", "").Client(t)
	m := New(rc)
	m.Begin()
	time.Sleep(sampleAfter + sampleFor)
	m.End()
	u := m.Take()
	if u.ScriptTimeErr == nil || len(u.ScriptTime) != 0 {
		t.Fatalf("a Redis without CONFIG: %v, %v", u.ScriptTime, u.ScriptTimeErr)
	}
	out := u.PerUnit(context.Background(), rc, 10)
	said := strings.Join(out.Why, "; ")
	if out.ByScriptTime != "" || !strings.Contains(said, "time by script not sampled: ") {
		t.Fatalf("the report says %q, time by script %q", said, out.ByScriptTime)
	}
}
