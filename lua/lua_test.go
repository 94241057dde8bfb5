package lua_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/lua"
)

// A script pipelined with other commands runs on a Redis that has not
// seen it yet (a new or restarted server answers its EVALSHA with
// NOSCRIPT), and its reply is the script's own.
func TestPipelinedRunsOnARedisThatHasNotSeenTheScript(t *testing.T) {
	rc := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Set().Key("lease").Value("tok").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	release := lua.Load("lease_release")
	for _, run := range []struct { // the script not loaded yet, then loaded
		token string
		want  int64
	}{{"other", 0}, {"tok", 1}} {
		p := lua.Pipeline(rc, release, []string{"lease"}, []string{run.token})
		res := rc.DoMulti(ctx, rc.B().Ping().Build(), p.Cmd)
		arr, err := p.Reply(ctx, res[1])
		if err != nil {
			t.Fatalf("token %s: %v", run.token, err)
		}
		if got, err := lua.Int(arr, 0); err != nil || got != run.want {
			t.Fatalf("token %s: reply %d, %v; want %d", run.token, got, err, run.want)
		}
	}
	if n, err := rc.Do(ctx, rc.B().Exists().Key("lease").Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("lease key left: %d, %v", n, err)
	}
}

// An included library is in the script Redis runs, and the SHA-1 that
// EVALSHA names is the one Redis computes for that text: a pipelined run
// on a Redis that has the script finds it under that SHA.
func TestIncludeExpandsAndKeepsTheSHA(t *testing.T) {
	src, err := lua.Source("order_reserve")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := lua.Source("lib/capacity")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), string(lib)) || strings.Contains(string(src), "\n--@include") {
		t.Fatal("order_reserve does not carry lib/capacity in place of its include line")
	}
	rc, _ := redistest.New(t)
	ctx := context.Background()
	sha, err := rc.Do(ctx, rc.B().ScriptLoad().Script(string(src)).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	p := lua.Pipeline(rc, lua.Load("order_reserve"), []string{"k"}, nil)
	if got := p.Cmd.Commands(); len(got) < 2 || got[1] != sha {
		t.Fatalf("EVALSHA names %v, Redis loaded the script as %s", got, sha)
	}
}
