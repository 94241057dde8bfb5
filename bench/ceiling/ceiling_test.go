package ceiling

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func TestParseCSV(t *testing.T) {
	out := []byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"EVALSHA abc 2 k1 k2 t:tk 1","41152.26","1.503","0.312","1.407","2.271","3.199","7.743"
`)
	r, err := ParseCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.PerSec != 41152.26 || r.P50Ms != 1.407 || r.P99Ms != 3.199 {
		t.Fatalf("parsed %+v", r)
	}
	if _, err := ParseCSV([]byte("ERROR: NOSCRIPT\n")); err == nil {
		t.Fatal("an error output parsed as a result")
	}
}

func TestBenchmarkArgs(t *testing.T) {
	got, err := benchmarkArgs("redis://:s3cret@10.0.0.5:6380/2")
	want := []string{"-h", "10.0.0.5", "-p", "6380", "-a", "s3cret", "--dbnum", "2"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("args %v, %v; want %v", got, err, want)
	}
	if _, err := benchmarkArgs("postgres://x"); err == nil {
		t.Fatal("a non-redis URL was accepted")
	}
}

// TestRedisClaimRunsTheScript runs the real redis-benchmark briefly and
// checks the script claimed what it was asked to.
func TestRedisClaimRunsTheScript(t *testing.T) {
	rc, space := redistest.New(t)
	res, err := RedisClaim(context.Background(), rc, redistest.URL(), space.Prefix, 4, 200*time.Millisecond)
	if errors.Is(err, ErrNoRedisBenchmark) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.PerSec <= 0 || res.Requests < 1000 || res.Clients != 4 {
		t.Fatalf("result %+v", res)
	}
	if n := len(redistest.Keys(t, rc, space)); n != 0 {
		t.Fatalf("%d keys left behind", n)
	}
}

// TestRedisClaimOnClusterRunsOnTheSlotsOwner: given a cluster node that
// does not hold the claim keys' slot, the ceiling still measures the
// script on the master that does (redis-benchmark talks to one node and
// would be answered MOVED), and leaves no key behind.
func TestRedisClaimOnClusterRunsOnTheSlotsOwner(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip(ErrNoRedisBenchmark)
	}
	ctx := context.Background()
	c, err := procs.StartCluster(ctx, 3, filepath.Join(t.TempDir(), "redis"))
	if errors.Is(err, procs.ErrNoRedisServer) || errors.Is(err, procs.ErrNoRedisCLI) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(5 * time.Second)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.Nodes[0].Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	owner, err := slotOwner(ctx, rc, "bench:t:{claim}:cap")
	if err != nil {
		t.Fatal(err)
	}
	other := c.Nodes[0]
	for _, n := range c.Nodes {
		if n.Addr != owner {
			other = n
		}
	}
	if other.Addr == owner {
		t.Fatalf("no node other than the owner %s", owner)
	}
	res, err := RedisClaim(ctx, rc, other.URL(), "bench:t:", 4, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.PerSec <= 0 || res.Requests < 1000 {
		t.Fatalf("result %+v", res)
	}
	// redis-benchmark exits 1 on the first MOVED, so a result means every
	// request ran on the owner; and nothing of the run is left on any node.
	for addr, n := range rc.Nodes() {
		if k, err := n.Do(ctx, n.B().Dbsize().Build()).AsInt64(); err != nil || k != 0 {
			t.Fatalf("node %s: %d keys left (%v)", addr, k, err)
		}
	}
}
