package durable

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/redistest"
)

// TestCostCountsTheWritesInsideScripts: a unit of work that runs one
// script writing twice and one plain write costs one script and three
// writes, as Redis counted them, whatever the script hides.
func TestCostCountsTheWritesInsideScripts(t *testing.T) {
	// A Redis of its own: INFO's counters and the AOF are this test's alone.
	rs := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always", "--latency-monitor-threshold", "1")
	rc := rs.Client(t)
	ctx := context.Background()
	before, err := Take(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	const units = 10
	for i := range units {
		key := "{u}:order:" + string(rune('a'+i))
		for _, r := range rc.DoMulti(ctx,
			rc.B().Eval().Script("redis.call('HSET', KEYS[1], 'st', 'paid'); redis.call('PEXPIRE', KEYS[1], 60000); return redis.call('HGET', KEYS[1], 'st')").
				Numkeys(1).Key(key).Build(),
			rc.B().Set().Key("{u}:idem:"+key).Value("x").Build()) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	after, err := Take(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := writeFlags(ctx, rc, called(before, after))
	if err != nil {
		t.Fatal(err)
	}
	if !writes["hset"] || !writes["set"] || writes["hget"] || writes["eval"] {
		t.Fatalf("write flags %v: want hset and set, not hget or eval", writes)
	}
	c := compare(before, after, units, writes)
	if c.ScriptsPerUnit != 1 || c.WritesPerUnit != 3 {
		t.Fatalf("%.2f scripts and %.2f writes per unit, want 1 and 3 (%s)", c.ScriptsPerUnit, c.WritesPerUnit, c.Breakdown(0))
	}
	if c.CommandsPerUnit < 5 {
		t.Fatalf("%.2f commands per unit, want at least the script, the three commands in it and the SET", c.CommandsPerUnit)
	}
	if _, _, err := FsyncStall(ctx, rc); err != nil {
		t.Fatal(err)
	}

	// The AOF holds the script's writes (PEXPIRE as PEXPIREAT) in
	// MULTI/EXEC, and the plain SET, each once per unit.
	a, err := ReadAOF(rs.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]int64{"hset": units, "pexpireat": units, "set": units, "multi": units, "exec": units} {
		if a.Calls[cmd] != want {
			t.Errorf("AOF has %d %s, want %d (%v)", a.Calls[cmd], cmd, want, a.Calls)
		}
	}
	if a.Calls["hget"] != 0 || a.Calls["eval"] != 0 {
		t.Errorf("reads or the script itself in the AOF: %v", a.Calls)
	}
	if got := a.Breakdown(units); !strings.Contains(got, "hset ") || !strings.Contains(got, " B (1.00)") {
		t.Errorf("breakdown %q", got)
	}
}

func TestSnapshotReadsTheCounters(t *testing.T) {
	s := FromInfo(map[string]string{"cmdstat_hset": "calls=12,usec=30,usec_per_call=2.50,rejected_calls=0,failed_calls=0",
		"cmdstat_xinfo|groups": "calls=3,usec=22", "total_commands_processed": "99", "aof_rewrites": "2", "aof_delayed_fsync": "0"})
	if s.calls["hset"] != 12 || s.calls["xinfo|groups"] != 3 || s.commands != 99 || s.aofRewrites != 2 {
		t.Fatalf("parsed %+v", s)
	}
	c := compare(Snapshot{calls: map[string]int64{"hset": 2}}, s, 10, map[string]bool{"hset": true})
	if got := c.Breakdown(0.2); got != "hset 1.00 (w), xinfo|groups 0.30" {
		t.Fatalf("breakdown %q", got)
	}
}

// TestFsyncTime: the probe times its fsyncs and leaves nothing in the
// directory, which is the durable Redis's own.
func TestFsyncTime(t *testing.T) {
	dir := t.TempDir()
	p50, p99, err := FsyncTime(dir, 20)
	if err != nil {
		t.Fatal(err)
	}
	if p50 <= 0 || p99 < p50 {
		t.Fatalf("p50 %s p99 %s", p50, p99)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Fatalf("the probe left %v (%v) in the directory", left, err)
	}
}
