package eval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// A library defines the script's leading functions and constants once,
// at load, and runs the rest per call: each call sees its own KEYS and
// ARGV (also in the functions), and a function defined after the first
// statement stays in the call, where it reaches that statement's locals.
func TestLibraryDefinesOnceAndRunsEachCallAsTheScript(t *testing.T) {
	src := []byte(`-- s: a test script
--
-- KEYS[1] -> a string key
local PREFIX = 'p:'
local function arg(i)
  return ARGV[i]
end
local function tagged(v)
  return PREFIX .. v
end
local n = tonumber(arg(1))
local function times(v)
  return string.rep(v, n)
end
redis.call('SET', KEYS[1], tagged(times(arg(2))))
return {1, redis.call('GET', KEYS[1])}
`)
	b, err := eval.LibraryOf("s_test", src)
	if err != nil {
		t.Fatal(err)
	}
	lib := string(b)
	head, body, ok := strings.Cut(lib, "redis.register_function")
	if !ok {
		t.Fatalf("no register_function in\n%s", lib)
	}
	for _, once := range []string{"local PREFIX = 'p:'", "local function arg(", "local function tagged("} {
		if !strings.Contains(head, once) {
			t.Errorf("%q is not defined at load:\n%s", once, lib)
		}
	}
	if !strings.Contains(body, "local function times(") || strings.Contains(head, "local function times(") {
		t.Errorf("times, after the first statement, is not in the call:\n%s", lib)
	}
	if strings.Contains(lib, "no-writes") {
		t.Errorf("a script that did not declare no-writes is flagged so:\n%s", lib)
	}

	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().FunctionLoad().FunctionCode(lib).Build()).Error(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v\n%s", err, lib)
	}
	for _, c := range []struct{ key, n, v, want string }{{"a", "2", "x", "p:xx"}, {"b", "3", "yz", "p:yzyzyz"}} {
		got, err := rc.Do(ctx, rc.B().Fcall().Function("s_test").Numkeys(1).Key(c.key).Arg(c.n, c.v).Build()).ToArray()
		if err != nil || len(got) != 2 {
			t.Fatalf("FCALL %s: %v %v", c.key, got, err)
		}
		if s, _ := got[1].ToString(); s != c.want {
			t.Fatalf("FCALL %s: %q, want %q", c.key, s, c.want)
		}
	}
}

// A script that declares --@no-writes runs out of memory, where one that
// may write is refused whole before it runs; Redis fails a write the
// read-only one tries.
func TestNoWritesRunsWhereWritesAreRefused(t *testing.T) {
	read := []byte("-- r\n" + eval.NoWrites + "\nreturn redis.call('GET', KEYS[1])\n")
	write := []byte("-- w\nreturn redis.call('GET', KEYS[1])\n")
	sneaky := []byte("-- s\n" + eval.NoWrites + "\nreturn redis.call('SET', KEYS[1], 'x')\n")
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	for fn, src := range map[string][]byte{"r_test": read, "w_test": write, "s_test": sneaky} {
		lib, err := eval.LibraryOf(fn, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Do(ctx, rc.B().FunctionLoad().FunctionCode(string(lib)).Build()).Error(); err != nil {
			t.Fatalf("FUNCTION LOAD %s: %v", fn, err)
		}
	}
	call := func(fn string) error {
		return rc.Do(ctx, rc.B().Fcall().Function(fn).Numkeys(1).Key("k").Build()).Error()
	}
	if err := call("s_test"); err == nil || !strings.Contains(err.Error(), "Write commands are not allowed") {
		t.Fatalf("a no-writes function that writes: %v", err)
	}
	for _, set := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
		if err := rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue(set[0], set[1]).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := call("r_test"); err != nil && !strings.Contains(err.Error(), "nil") {
		t.Fatalf("a no-writes function out of memory: %v", err)
	}
	if err := call("w_test"); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("a function that may write, out of memory: %v, want OOM", err)
	}
}

// Install loads every script's library a server lacks, and leaves other
// libraries alone: another build's (a node of it may be running) and other
// programs'.
func TestInstallLoadsEveryLibraryAndLeavesOthers(t *testing.T) {
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	load := func(name string) {
		t.Helper()
		lib := "#!lua name=" + name + "\nredis.register_function('" + name + "', function() return 1 end)\n"
		if err := rc.Do(ctx, rc.B().FunctionLoad().FunctionCode(lib).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	load("order_reserve_0123456789ab") // another build's
	load("shop_cart")                  // not ticketd's
	if err := eval.Install(ctx, rc); err != nil {
		t.Fatal(err)
	}
	have, err := eval.Libraries(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	names := eval.Names()
	for fn := range names {
		if !have[fn] {
			t.Errorf("%s is not loaded", fn)
		}
	}
	if !have["order_reserve_0123456789ab"] || !have["shop_cart"] || len(have) != len(names)+2 {
		t.Fatalf("libraries after Install: %v, want this build's %d and the two others", have, len(names))
	}
	// A second Install finds everything there and changes nothing.
	if err := eval.Install(ctx, rc); err != nil {
		t.Fatal(err)
	}
	if again, err := eval.Libraries(ctx, rc); err != nil || len(again) != len(have) {
		t.Fatalf("after a second Install %d libraries, %v", len(again), err)
	}
}

// A flag line Redis would never see is an error: after a script's first
// statement, or in a library every includer would get.
func TestFlagLinesBelongInTheHeader(t *testing.T) {
	late := []byte("-- s\nlocal x = redis.call('GET', KEYS[1])\n" + eval.NoWrites + "\nreturn x\n")
	if _, err := eval.LibraryOf("s_test", late); err == nil {
		t.Fatal("a flag line after the first statement was taken")
	}
}
