package eval_test

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"

	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/lua"
)

// This file is the harness of TestFaultScriptsCheckBeforeTheyWrite (the
// cases are in fault_cases_test.go). Redis does not roll a script back when
// a command in it fails: whatever it wrote before the failing command stays.
// So a script must make every command that can fail (a command on a key of
// the wrong type) before its first write. The harness shows it for every
// script by making each key the script touches hold the wrong type, in
// turn, and by running it out of memory, and comparing the whole keyspace
// (DUMP and expiry of every key) before and after.

// faultDB is a private redis-server with what the harness needs around it:
// a MONITOR connection that records the commands scripts issue, and the
// scripts' libraries loaded.
type faultDB struct {
	t       *testing.T
	c       rueidis.Client
	conn    net.Conn
	mon     *bufio.Reader
	marks   int
	byFn    map[string]string   // function name -> script name
	libs    map[string]string   // script name -> its library
	flags   map[string][]string // command name (lower case) -> its COMMAND INFO flags
	scripts []string            // every lua/*.lua, sorted
}

func newFaultDB(t *testing.T) *faultDB {
	srv := redistest.StartServer(t)
	d := &faultDB{t: t, c: srv.Client(t), byFn: map[string]string{}, libs: map[string]string{}, flags: map[string][]string{}}
	files, err := fs.Glob(lua.Files, "*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in lua/: %v", err)
	}
	ctx := context.Background()
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		lib, fn, err := eval.Library(name)
		if err != nil {
			t.Fatal(err)
		}
		// Loaded up front, so the wrappers' FCALL finds every script and
		// no load round shows up in what is recorded.
		if err := d.c.Do(ctx, d.c.B().FunctionLoad().FunctionCode(lib).Build()).Error(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d.byFn[fn], d.libs[name] = name, lib
		d.scripts = append(d.scripts, name)
	}
	sort.Strings(d.scripts)
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	d.conn, d.mon = conn, bufio.NewReader(conn)
	if line, err := d.mon.ReadString('\n'); err != nil || strings.TrimSpace(line) != "+OK" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	return d
}

// monLine is one command MONITOR saw: issued by a script (lua) or by a
// client.
type monLine struct {
	lua  bool
	args []string
}

// record runs f and returns the commands the server executed meanwhile.
// Two ECHO marks bracket them in the MONITOR stream.
func (d *faultDB) record(f func()) []monLine {
	d.t.Helper()
	d.marks++
	begin, end := fmt.Sprintf("fault-begin-%d", d.marks), fmt.Sprintf("fault-end-%d", d.marks)
	ctx := context.Background()
	d.must(d.c.Do(ctx, d.c.B().Echo().Message(begin).Build()).Error())
	f()
	d.must(d.c.Do(ctx, d.c.B().Echo().Message(end).Build()).Error())
	var out []monLine
	in := false
	// fail, not hang, if the end mark never comes
	_ = d.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := d.mon.ReadString('\n')
		if err != nil {
			d.t.Fatalf("MONITOR: %v", err)
		}
		l, ok := parseMonitor(strings.TrimRight(line, "\r\n"))
		if !ok {
			d.t.Fatalf("MONITOR line not understood: %q", line)
		}
		if !l.lua && len(l.args) == 2 && strings.EqualFold(l.args[0], "echo") {
			switch l.args[1] {
			case begin:
				in = true
				continue
			case end:
				return out
			}
		}
		if in {
			out = append(out, l)
		}
	}
}

// parseMonitor reads `+<time> [<db> <client>] "arg" "arg" ...`, the args
// quoted as Redis' sdscatrepr writes them.
func parseMonitor(s string) (monLine, bool) {
	open, close := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if !strings.HasPrefix(s, "+") || open < 0 || close < open {
		return monLine{}, false
	}
	who := strings.Fields(s[open+1 : close])
	l := monLine{lua: len(who) == 2 && who[1] == "lua"}
	rest := s[close+1:]
	for {
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			return l, true
		}
		if rest[0] != '"' {
			return monLine{}, false
		}
		var b strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] != '\\' || i+1 >= len(rest) {
				b.WriteByte(rest[i])
				continue
			}
			i++
			switch rest[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if i+2 >= len(rest) {
					return monLine{}, false
				}
				v, err := strconv.ParseUint(rest[i+1:i+3], 16, 8)
				if err != nil {
					return monLine{}, false
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(rest[i])
			}
		}
		if i >= len(rest) {
			return monLine{}, false
		}
		l.args = append(l.args, b.String())
		rest = rest[i+1:]
	}
}

func (d *faultDB) must(err error) {
	d.t.Helper()
	if err != nil {
		d.t.Fatal(err)
	}
}

// do sends one command given as words.
func (d *faultDB) do(args ...string) rueidis.RedisResult {
	return d.c.Do(context.Background(), d.c.B().Arbitrary(args[0]).Args(args[1:]...).Build())
}

// isWrite says whether a command may change the keyspace (COMMAND INFO's
// write flag); scripts count as writes, they may.
func (d *faultDB) isWrite(args []string) bool {
	name := strings.ToLower(args[0])
	if name == "fcall" {
		return true
	}
	return d.hasFlag(name, "write")
}

// hasFlag says whether COMMAND INFO gives the command the flag.
func (d *faultDB) hasFlag(name, flag string) bool {
	name = strings.ToLower(name)
	flags, ok := d.flags[name]
	if !ok {
		info, err := d.do("COMMAND", "INFO", name).ToArray()
		if err != nil || len(info) != 1 {
			d.t.Fatalf("COMMAND INFO %s: %v", name, err)
		}
		doc, err := info[0].ToArray()
		if err != nil || len(doc) < 3 {
			d.t.Fatalf("COMMAND INFO %s: %v", name, err)
		}
		flags, _ = doc[2].AsStrSlice()
		d.flags[name] = flags
	}
	return slices.Contains(flags, flag)
}

// keysOf returns the keys a command names (COMMAND GETKEYS).
func (d *faultDB) keysOf(args []string) []string {
	ks, err := d.do(append([]string{"COMMAND", "GETKEYS"}, args...)...).AsStrSlice()
	if err != nil { // a command without keys (TIME)
		return nil
	}
	return ks
}

// entry is one key of a snapshot: its serialized value (to restore it),
// its content (to compare it) and absolute expiry (ms; -1 for none).
type entry struct {
	dump, content string
	at            int64
}

type snapshot map[string]entry

func (d *faultDB) snapshot() snapshot {
	d.t.Helper()
	ks, err := d.do("KEYS", "*").AsStrSlice()
	d.must(err)
	s := snapshot{}
	for _, k := range ks {
		dump, err := d.do("DUMP", k).ToString()
		if rueidis.IsRedisNil(err) {
			continue // expired between KEYS and DUMP
		}
		d.must(err)
		at, err := d.do("PEXPIRETIME", k).AsInt64()
		d.must(err)
		s[k] = entry{dump, d.content(k, dump), at}
	}
	return s
}

// content is what a key holds, written so that equal contents compare
// equal: DUMP writes a hash or set in its hash table's order, which a read
// may change (a read advances an incremental rehash).
func (d *faultDB) content(k, dump string) string {
	d.t.Helper()
	typ, err := d.do("TYPE", k).ToString()
	d.must(err)
	var parts []string
	switch typ {
	case "hash":
		m, err := d.do("HGETALL", k).AsStrMap()
		d.must(err)
		for f, v := range m {
			parts = append(parts, strconv.Quote(f)+"="+strconv.Quote(v))
		}
	case "set":
		parts, err = d.do("SMEMBERS", k).AsStrSlice()
		d.must(err)
	default: // strings, lists, zsets (skiplist order) and streams dump the same for the same content
		return typ + ":" + dump
	}
	sort.Strings(parts)
	return typ + ":" + strings.Join(parts, ",")
}

func (d *faultDB) restore(s snapshot) {
	d.t.Helper()
	d.must(d.do("FLUSHDB").Error())
	for k, e := range s {
		args := []string{"RESTORE", k, "0", e.dump}
		if e.at > 0 {
			args = []string{"RESTORE", k, strconv.FormatInt(e.at, 10), e.dump, "ABSTTL"}
		}
		d.must(d.do(args...).Error())
	}
}

// diff names the keys that differ between two snapshots.
func diff(want, got snapshot) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, k+" deleted")
		case g.content != w.content:
			out = append(out, k+" changed")
		case g.at != w.at:
			out = append(out, fmt.Sprintf("%s expiry %d -> %d", k, w.at, g.at))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, k+" created")
		}
	}
	sort.Strings(out)
	return out
}

// faultCase is one realistic use of one or more scripts: setup builds the
// state before it (with the packages that use the scripts, or by running
// scripts as their callers do), act makes the calls under test. Every
// script call act makes is tested, from the state the calls before it
// left.
type faultCase struct {
	name  string
	setup func(f *fixture)
	act   func(f *fixture)
}

// scriptCall is one FCALL act made, with what it needs to run again.
type scriptCall struct {
	script string
	args   []string // FCALL function numkeys keys... args...
	before []int    // indexes (in the recorded commands) of the writes before it
}

func (c scriptCall) keys() []string {
	n, _ := strconv.Atoi(c.args[2])
	return c.args[3 : 3+n]
}

// tally counts what the test injected and what it found.
type tally struct {
	calls, writingCalls int
	wrongTyped          int // injections of a wrong-typed key
	wrongErrored        int // ... that made the script fail (keyspace compared)
	wrongRanThrough     int // ... that the script ran through (it never reads that key's type)
	oomRuns             int
	oomRefused          int // the script's first write refused, keyspace compared
	oomRanThrough       int // the script wrote nothing, or its first write was a delete
	unchanged, compared int
	perScript           map[string]int // script -> writing calls tested
	scriptsSeen         map[string]bool
	growsFirst          map[string]bool // a call of the script first wrote with a command that may grow memory
}

// runCase tests every script call of c.
func (d *faultDB) runCase(t *testing.T, c faultCase, tl *tally) {
	d.must(d.do("FLUSHDB").Error())
	f := newFixture(t, d)
	if c.setup != nil {
		c.setup(f)
	}
	s0 := d.snapshot()
	rec := d.record(func() { c.act(f) })

	var calls []scriptCall
	var writes []int
	for i, l := range rec {
		if l.lua || !d.isWrite(l.args) {
			continue
		}
		if strings.EqualFold(l.args[0], "fcall") {
			script, ok := d.byFn[l.args[1]]
			if !ok {
				t.Fatalf("%s: a function not in lua/ ran: %.60q", c.name, l.args[1])
			}
			calls = append(calls, scriptCall{script: script, args: l.args, before: slices.Clone(writes)})
		}
		writes = append(writes, i)
	}
	if len(calls) == 0 {
		t.Fatalf("%s: act ran no script", c.name)
	}
	run := func(args []string) error { return d.do(args...).Error() }
	for n, call := range calls {
		label := fmt.Sprintf("%s: call %d (%s)", c.name, n+1, call.script)
		// the state this call met: the setup's, then the writes act made
		// before it
		d.restore(s0)
		for _, i := range call.before {
			_ = run(rec[i].args) // as it went in act, error or not
		}
		si := d.snapshot()

		// the keys the script touches, in order, and whether it writes
		var touched []string
		wrote := false
		firstWrite := ""
		var baseErr error
		lines := d.record(func() { baseErr = run(call.args) })
		if baseErr != nil {
			t.Errorf("%s: fails without a fault: %v", label, baseErr)
			continue
		}
		declared := call.keys()
		for _, l := range lines {
			if !l.lua {
				continue
			}
			if d.isWrite(l.args) && !wrote {
				wrote, firstWrite = true, l.args[0]
			}
			for _, k := range d.keysOf(l.args) {
				if !slices.Contains(declared, k) {
					t.Errorf("%s: %s touches %q, a key it was not given in KEYS", label, l.args[0], k)
				}
				if !slices.Contains(touched, k) {
					touched = append(touched, k)
				}
			}
		}
		tl.calls++
		tl.scriptsSeen[call.script] = true
		if wrote {
			tl.writingCalls++
			tl.perScript[call.script]++
		}

		// a wrong type at each key the script touches, in turn
		for _, k := range touched {
			d.restore(si)
			d.must(d.do("DEL", k).Error())
			// No script uses lists: a list is the wrong type for every
			// command they make on a key that has a type.
			d.must(d.do("RPUSH", k, "wrong type").Error())
			before := d.snapshot()
			err := run(call.args)
			tl.wrongTyped++
			if err == nil {
				tl.wrongRanThrough++
				if os.Getenv("FAULT_DEBUG") != "" {
					t.Logf("%s: ran through a wrong type at %s", label, k)
				}
				continue
			}
			tl.wrongErrored++
			tl.compared++
			if ch := diff(before, d.snapshot()); len(ch) > 0 {
				t.Errorf("%s: with a wrong type at %s it failed (%v) after writing: %s", label, k, err, strings.Join(ch, "; "))
			} else {
				tl.unchanged++
			}
		}

		if wrote && d.hasFlag(firstWrite, "denyoom") {
			tl.growsFirst[call.script] = true
		}
		// out of memory, with noeviction
		d.restore(si)
		d.must(d.do("CONFIG", "SET", "maxmemory-policy", "noeviction").Error())
		d.must(d.do("CONFIG", "SET", "maxmemory", "1").Error())
		err := run(call.args)
		d.must(d.do("CONFIG", "SET", "maxmemory", "0").Error())
		tl.oomRuns++
		if err == nil {
			// Redis refuses a function that may write whole, before it
			// runs, out of memory. One declared read-only (no-writes) runs
			// and would fail at a write; one that frees memory first
			// (allow-oom) runs, and must not grow memory first.
			allow := strings.Contains(d.libs[call.script], "'allow-oom'")
			if wrote && (!allow || d.hasFlag(firstWrite, "denyoom")) {
				t.Errorf("%s: out of memory it ran through, and its first write (%s) may grow memory", label, firstWrite)
			}
			tl.oomRanThrough++
			continue
		}
		if !strings.Contains(err.Error(), "OOM") {
			t.Errorf("%s: out of memory it failed with %v, want OOM", label, err)
		}
		tl.oomRefused++
		tl.compared++
		if ch := diff(si, d.snapshot()); len(ch) > 0 {
			t.Errorf("%s: out of memory it failed after writing: %s", label, strings.Join(ch, "; "))
		} else {
			tl.unchanged++
		}
	}
}

// Every script in lua/ checks every key it will write before its first
// write, so a command that fails (a key of the wrong type; Redis out of
// memory under noeviction) leaves the keyspace as it was: Redis keeps what
// a failed script wrote before the failure.
func TestFaultScriptsCheckBeforeTheyWrite(t *testing.T) {
	d := newFaultDB(t)
	tl := &tally{perScript: map[string]int{}, scriptsSeen: map[string]bool{}, growsFirst: map[string]bool{}}
	start := time.Now()
	for _, c := range faultCases {
		d.runCase(t, c, tl)
	}
	// A script without a case is a script nobody showed safe: a new script
	// must get one here.
	for _, s := range d.scripts {
		if !tl.scriptsSeen[s] {
			t.Errorf("script %s.lua has no case in faultCases (fault_cases_test.go)", s)
			continue
		}
		if tl.perScript[s] == 0 && !readOnlyScripts[s] {
			t.Errorf("script %s.lua: no case reaches a path where it writes", s)
		}
		if tl.perScript[s] > 0 && readOnlyScripts[s] {
			t.Errorf("script %s.lua is listed read-only but wrote", s)
		}
		// A read-only script says so (--@no-writes), so Redis runs it
		// where it refuses writes (out of memory, too few replicas).
		if ro := strings.Contains(d.libs[s], "'no-writes'"); ro != readOnlyScripts[s] {
			t.Errorf("script %s.lua: --@no-writes %v, read-only %v", s, ro, readOnlyScripts[s])
		}
		// A script that frees memory before it may use any, in every
		// case, says --@allow-oom, so a full Redis still runs it (as it
		// ran such a script before functions: Redis 7.0 refused a
		// script's first write only when it may grow memory); one that
		// may grow memory first must not.
		if allow, frees := strings.Contains(d.libs[s], "'allow-oom'"), tl.perScript[s] > 0 && !tl.growsFirst[s]; allow != frees {
			t.Errorf("script %s.lua: --@allow-oom %v, but it frees memory before it may use any in every case: %v", s, allow, frees)
		}
	}
	t.Logf("%d cases in %v", len(faultCases), time.Since(start).Round(time.Millisecond))
	faultreport.Print(t, faultreport.Report{
		Injected: fmt.Sprintf("%d wrong-typed keys over %d script calls of %d scripts (%d failed the script, %d it never type-checks); "+
			"out of memory (maxmemory 1, noeviction) at each of %d calls (%d refused, %d ran through)",
			tl.wrongTyped, tl.calls, len(tl.scriptsSeen), tl.wrongErrored, tl.wrongRanThrough, tl.oomRuns, tl.oomRefused, tl.oomRanThrough),
		Load:   fmt.Sprintf("%d cases, %d script calls (%d writing), each from its own restored keyspace", len(faultCases), tl.calls, tl.writingCalls),
		Counts: fmt.Sprintf("keyspaces unchanged after a failed script %d/%d", tl.unchanged, tl.compared),
	})
}
