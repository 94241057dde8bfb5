package redisstate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// On a Redis Cluster every master holds some events' sales, so what a
// crash would lose is what the weakest master's settings allow: the
// durability read names every master and reports the weakest.
func TestClusterDurabilityIsTheWeakestMasters(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	rc := cl.Client(t)
	masters, err := redisstate.Masters(ctx, rc)
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters of a 3-master cluster: %d, %v", len(masters), err)
	}
	set := func(i int, kv ...string) {
		t.Helper()
		n := cl.Nodes[i].Client(t)
		for j := 0; j < len(kv); j += 2 {
			if err := n.Do(ctx, n.B().ConfigSet().ParameterValue().ParameterValue(kv[j], kv[j+1]).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func() redisstate.Durability {
		t.Helper()
		d, err := redisstate.ReadDurability(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// two masters fsync every write, the third persists nothing
	set(0, "appendonly", "yes", "appendfsync", "always")
	set(1, "appendonly", "yes", "appendfsync", "always")
	if d := read(); d.Loses != redisstate.LosesEverything || strings.Count(d.Settings, "appendonly") != 3 {
		t.Fatalf("two fsync always, one without AOF: %+v; want loses everything, each master named", d)
	}
	set(2, "appendonly", "yes", "appendfsync", "everysec")
	if d := read(); d.Loses != redisstate.LosesSecond {
		t.Fatalf("two fsync always, one everysec: %+v; want loses a second", d)
	}
	set(2, "appendfsync", "always")
	if d := read(); d.Loses != redisstate.LosesNothing {
		t.Fatalf("all fsync always: %+v; want loses nothing", d)
	}
}

// A single Redis is its own only master.
func TestSingleRedisIsItsOwnMaster(t *testing.T) {
	srv := redistest.StartServer(t)
	rc := srv.Client(t)
	m, err := redisstate.Masters(context.Background(), rc)
	if err != nil || len(m) != 1 {
		t.Fatalf("masters of one Redis: %v, %v", m, err)
	}
}
