package eval_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/reply"
)

// A script pipelined with other commands runs on a Redis that has not
// seen it yet (a new or restarted server answers its FCALL "Function not
// found"), and its reply is the script's own.
func TestPipelinedRunsOnARedisThatHasNotSeenTheScript(t *testing.T) {
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Set().Key("lease").Value("tok").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	release := eval.Load("lease_release")
	for _, run := range []struct { // the script not loaded yet, then loaded
		token string
		want  reply.Code
	}{{"other", reply.NotOwner}, {"tok", reply.OK}} {
		p := eval.Pipeline(rc, release, []string{"lease"}, []string{run.token})
		res := rc.DoMulti(ctx, rc.B().Ping().Build(), p.Cmd)
		arr, err := p.Reply(ctx, res[1])
		if err != nil {
			t.Fatalf("token %s: %v", run.token, err)
		}
		if got, err := reply.Of(arr); err != nil || got != run.want {
			t.Fatalf("token %s: reply %v, %v; want %v", run.token, got, err, run.want)
		}
	}
	if n, err := rc.Do(ctx, rc.B().Exists().Key("lease").Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("lease key left: %d, %v", n, err)
	}
}

// An included library is in the script Redis runs, and the library that
// FUNCTION LOAD takes registers the function FCALL names.
func TestIncludeExpandsAndTheLibraryNamesTheFunction(t *testing.T) {
	src, err := eval.Source("order_reserve")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := eval.Source("lib/capacity")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), string(lib)) || strings.Contains(string(src), "\n--@include") {
		t.Fatal("order_reserve does not carry lib/capacity in place of its include line")
	}
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	text, fn, err := eval.Library("order_reserve")
	if err != nil {
		t.Fatal(err)
	}
	name, err := rc.Do(ctx, rc.B().FunctionLoad().FunctionCode(text).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	p := eval.Pipeline(rc, eval.Load("order_reserve"), []string{"k"}, nil)
	if got := p.Cmd.Commands(); len(got) < 2 || got[1] != fn || name != fn {
		t.Fatalf("FCALL names %v, Redis loaded the library %s, want %s", got, name, fn)
	}
	funcs, err := rc.Do(ctx, rc.B().FunctionList().Libraryname(fn).Build()).ToAny()
	if err != nil || !strings.Contains(fmt.Sprint(funcs), fn) {
		t.Fatalf("FUNCTION LIST %s: %v %v", fn, funcs, err)
	}
}

// Many runs of a script in one pipeline (Multi) on a Redis without its
// library: the library is loaded, every run is made, once, and each
// answers its own keys.
func TestMultiLoadsTheLibraryAndRunsEachOnce(t *testing.T) {
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	for _, k := range []string{"l1", "l2", "l3"} {
		if err := rc.Do(ctx, rc.B().Set().Key(k).Value("tok").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	release := eval.Load("lease_release")
	res := eval.Multi(ctx, rc, release, eval.Run{Keys: []string{"l1"}, Args: []string{"tok"}},
		eval.Run{Keys: []string{"l2"}, Args: []string{"other"}}, eval.Run{Keys: []string{"l3"}, Args: []string{"tok"}})
	want := []reply.Code{reply.OK, reply.NotOwner, reply.OK}
	for i, r := range res {
		arr, err := eval.Reply(r)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got, _ := reply.Of(arr); got != want[i] {
			t.Fatalf("run %d: %v, want %v", i, got, want[i])
		}
	}
	if n, err := rc.Do(ctx, rc.B().Exists().Key("l1", "l2", "l3").Build()).AsInt64(); err != nil || n != 1 {
		t.Fatalf("%d leases left, want l2's alone: %v", n, err)
	}
}

// lib/seatrule is the one single-seat test of seat_hold and seat_release:
// both carry it, and in Redis it marks booked and held seats taken and
// finds a free seat alone between taken seats (lenient) or by its row's
// end (strict), never in a one-seat row.
func TestSeatRuleLibrary(t *testing.T) {
	lib, err := eval.Source("lib/seatrule")
	if err != nil {
		t.Fatal(err)
	}
	// each carries the rule's two functions (Source leaves out those a
	// script does not call)
	for _, s := range []string{"seat_hold", "seat_release"} {
		src, err := eval.Source(s)
		for _, fn := range []string{"seat_taken_mark", "seat_alone"} {
			if err != nil || !strings.Contains(string(src), "\nlocal function "+fn+"(") {
				t.Errorf("%s does not carry lib/seatrule's %s: %v", s, fn, err)
			}
		}
	}
	rc, space := redistest.New(t)
	ctx := context.Background()
	// Row A has seats 1..4: A-1 booked, A-2 held, A-3 free, A-4 free (its
	// hold expired); row B has the one seat B-1.
	script := string(lib) + `
local taken = {}
seat_taken_mark(taken, KEYS[1], {seats = KEYS[2], orders = KEYS[3], regs = KEYS[4]}, {'A-1', 'A-2', 'A-3', 'A-4', 'B-1'}, seatholds_now())
local out = {}
for _, l in ipairs({'A-1', 'A-2', 'A-3', 'A-4', 'B-1'}) do
  out[#out + 1] = l .. '=' .. tostring(taken[l])
end
local function alone(label, strict)
  local row, num = seat_split(label)
  return label .. (strict and ' strict ' or ' lenient ') .. tostring(seat_alone(taken, row, num, strict))
end
out[#out + 1] = alone('A-3', false)
out[#out + 1] = alone('A-4', false)
out[#out + 1] = alone('A-4', true)
out[#out + 1] = alone('B-1', true)
taken['A-4'] = true
out[#out + 1] = alone('A-3', false)
taken['A-3'], taken['A-4'] = true, false
out[#out + 1] = alone('A-4', false)
out[#out + 1] = alone('A-4', true)
return out`
	// In the test's key space, which redistest deletes when the test ends.
	k := func(s string) string { return space.Prefix + "{seatrule-test}:" + s }
	for _, c := range []rueidis.Completed{
		rc.B().Hset().Key(k("booked")).FieldValue().FieldValue("A-1", "o1").Build(),
		rc.B().Hset().Key(k("seats")).FieldValue().FieldValue("A-2", "h:tok 99999999999999").FieldValue("A-4", "h:old 1").Build(),
	} {
		if err := rc.Do(ctx, c).Error(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := rc.Do(ctx, rc.B().Eval().Script(script).Numkeys(4).
		Key(k("booked"), k("seats"), k("orders"), k("regs")).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A-1=true", "A-2=true", "A-3=false", "A-4=false", "B-1=false",
		"A-3 lenient false", "A-4 lenient false", "A-4 strict false", "B-1 strict false", "A-3 lenient true",
		"A-4 lenient false", "A-4 strict true"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// The embedded Redis of development (miniredis) has no functions: a
// script run alone, pipelined or many at once runs there as its whole text
// (EVALSHA, then EVAL), and answers as it does on Redis.
func TestScriptsRunOnARedisWithoutFunctions(t *testing.T) {
	m := miniredis.RunT(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	ctx := context.Background()
	for _, k := range []string{"l1", "l2", "l3", "l4"} {
		m.Set(k, "tok")
	}
	release := eval.Load("lease_release")
	check := func(what string, arr []rueidis.RedisMessage, err error, want reply.Code) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, _ := reply.Of(arr); got != want {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	arr, err := eval.Array(ctx, rc, release, []string{"l1"}, []string{"tok"})
	check("alone", arr, err, reply.OK)
	p := eval.Pipeline(rc, release, []string{"l2"}, []string{"other"})
	arr, err = p.Reply(ctx, rc.DoMulti(ctx, rc.B().Ping().Build(), p.Cmd)[1])
	check("pipelined", arr, err, reply.NotOwner)
	for i, r := range eval.Multi(ctx, rc, release, eval.Run{Keys: []string{"l3"}, Args: []string{"tok"}},
		eval.Run{Keys: []string{"l4"}, Args: []string{"tok"}}) {
		arr, err := eval.Reply(r)
		check(fmt.Sprintf("many, run %d", i), arr, err, reply.OK)
	}
	if keys := m.Keys(); len(keys) != 1 || keys[0] != "l2" {
		t.Fatalf("keys left %v, want l2 alone", keys)
	}
	// Install (at ticketd's start) leaves such a server as it is, without
	// an error, and what a client runs after it runs.
	fresh, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Close)
	if err := eval.Install(ctx, fresh); err != nil {
		t.Fatalf("Install on a server without functions: %v", err)
	}
	arr, err = eval.Array(ctx, fresh, release, []string{"l2"}, []string{"tok"})
	check("after Install", arr, err, reply.OK)
}
