package procs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/sync/pgtest"
)

func TestStartAndStop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := Start("sleeper", sleep, []string{"30"}, nil, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("still running after Stop")
	}
	if time.Since(start) > 4*time.Second {
		t.Fatal("SIGTERM was not enough: it waited for the kill")
	}
}

func TestStackRunsStepsLastFirstOnce(t *testing.T) {
	var order []int
	s := &Stack{}
	for i := range 3 {
		s.Push("step", func(context.Context) error { order = append(order, i); return nil })
	}
	s.Close()
	s.Close()
	if len(order) != 3 || order[0] != 2 || order[2] != 0 {
		t.Fatalf("order %v, want [2 1 0] once", order)
	}
}

func TestCreateDatabaseAndDrop(t *testing.T) {
	ctx := context.Background()
	url, drop, err := CreateDatabase(ctx, pgtest.URL(), "ticketd_benchtest_")
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Fatal("the database is still there")
	}
}

// TestShippedRedisConfigIsDurable starts redis-server with
// deploy/redis.conf as an operator would (port and dir overridden): every
// directive is valid for this Redis, the durable settings are in force,
// and writes acknowledged before a kill -9 are there after a restart from
// its append-only file.
func TestShippedRedisConfigIsDurable(t *testing.T) {
	ctx := context.Background()
	conf := filepath.Join("..", "..", "deploy", "redis.conf")
	r, err := StartRedis(ctx, conf, filepath.Join(t.TempDir(), "redis.log"))
	if errors.Is(err, ErrNoRedisServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(10 * time.Second) }) // also removes r.Dir, which the restarted server shares
	rc := redisClient(t, r.Addr)
	for k, want := range map[string]string{"appendonly": "yes", "appendfsync": "always", "aof-use-rdb-preamble": "yes",
		"no-appendfsync-on-rewrite": "no", "maxmemory-policy": "noeviction", "save": "", "dir": r.Dir} {
		got, err := rc.Do(ctx, rc.B().ConfigGet().Parameter(k).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for i := range 100 {
		if err := rc.Do(ctx, rc.B().Hincrby().Key("{p0}:sold").Field("t:tk").Increment(int64(i)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	rc.Close()
	_ = r.cmd.Process.Kill() // kill -9: no shutdown, no final flush
	<-r.Exited()

	again, err := StartRedis(ctx, conf, filepath.Join(t.TempDir(), "redis.log"), "--dir", r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Stop(10 * time.Second) })
	rc = redisClient(t, again.Addr)
	if n, err := rc.Do(ctx, rc.B().Hget().Key("{p0}:sold").Field("t:tk").Build()).AsInt64(); err != nil || n != 4950 {
		t.Fatalf("after kill -9 and restart: sold %d (%v), want 4950", n, err)
	}
}

func TestStartRedisFailsFastOnABadConfig(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(conf, []byte("appendfsync sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := StartRedis(context.Background(), conf, filepath.Join(t.TempDir(), "redis.log"))
	if errors.Is(err, ErrNoRedisServer) {
		t.Skip(err)
	}
	if err == nil || !strings.Contains(err.Error(), "appendfsync") || time.Since(start) > 20*time.Second {
		t.Fatalf("err %v after %s: want the bad directive, quickly", err, time.Since(start))
	}
}

// TestStartReplicaReturnsOnceLinked: StartReplica returns a replica that
// holds what its primary held before it started and follows the
// primary's writes (WAIT 1 is acknowledged at once).
func TestStartReplicaReturnsOnceLinked(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	primary, err := StartRedis(ctx, "", filepath.Join(dir, "primary.log"), "--save", "", "--repl-diskless-sync-delay", "0")
	if errors.Is(err, ErrNoRedisServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop(10 * time.Second) })
	pc := redisClient(t, primary.Addr)
	if err := pc.Do(ctx, pc.B().Set().Key("before").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	replica, err := StartReplica(ctx, primary, "", filepath.Join(dir, "replica.log"), "--save", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Stop(10 * time.Second) })
	if v, err := redisClient(t, replica.Addr).Do(ctx, pc.B().Get().Key("before").Build()).ToString(); err != nil || v != "1" {
		t.Fatalf("the replica has %q (%v) of the primary's key, want 1", v, err)
	}
	setAndWait(t, pc, "after", "2")
	if err := primary.linked(); err == nil || !strings.Contains(err.Error(), "not a replica") {
		t.Fatalf("the primary's link: %v, want: not a replica", err)
	}
}

// setAndWait sets key to value and WAITs for one replica, failing t
// unless one acknowledged it within 5 s.
func setAndWait(t *testing.T, rc rueidis.Client, key, value string) {
	t.Helper()
	ctx := context.Background()
	err := rc.Dedicated(func(d rueidis.DedicatedClient) error {
		res := d.DoMulti(ctx, d.B().Set().Key(key).Value(value).Build(), d.B().Wait().Numreplicas(1).Timeout(5000).Build())
		if n, err := res[1].AsInt64(); err != nil || n != 1 {
			return fmt.Errorf("WAIT 1: %d (%v), want 1", n, err)
		}
		return res[0].Error()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func redisClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// TestStartClusterServesEverySlot starts a 3-master Redis Cluster as the
// bench's -redis-cluster does: a cluster client found from one address
// sees three masters, and keys of slots on every node are written and read
// back (a slot left uncovered would answer CLUSTERDOWN). Stop removes the
// nodes' directories.
func TestStartClusterServesEverySlot(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed")
	}
	ctx := context.Background()
	c, err := StartCluster(ctx, 3, filepath.Join(t.TempDir(), "redis"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(5 * time.Second)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.Nodes[0].Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if rc.Mode() != rueidis.ClientModeCluster || len(rc.Nodes()) != 3 {
		t.Fatalf("mode %s with %d nodes, want a cluster of 3", rc.Mode(), len(rc.Nodes()))
	}
	// {p0}..{p63}, the event partitions' tags, land on all three masters.
	for p := range 64 {
		k := "{p" + strconv.Itoa(p) + "}:probe"
		if err := rc.Do(ctx, rc.B().Set().Key(k).Value("v").Build()).Error(); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		if v, err := rc.Do(ctx, rc.B().Get().Key(k).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("get %s: %q %v", k, v, err)
		}
	}
	owners := map[string]bool{}
	for addr, n := range rc.Nodes() {
		if keys, err := n.Do(ctx, n.B().Dbsize().Build()).AsInt64(); err == nil && keys > 0 {
			owners[addr] = true
		}
	}
	if len(owners) != 3 {
		t.Fatalf("the 64 partition tags are on %d nodes, want all 3", len(owners))
	}
	dirs := []string{c.Nodes[0].Dir, c.Nodes[1].Dir, c.Nodes[2].Dir}
	if err := c.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("node directory %s left behind (%v)", d, err)
		}
	}
}

// A redis-server whose port was taken between the free-port probe and its
// bind is recognised (PortTaken), so a start tries other ports: here its
// cluster bus port is held by a listener, so every attempt fails so, and
// the error says it.
func TestATakenPortIsRecognised(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_, err = StartRedis(context.Background(), "", filepath.Join(t.TempDir(), "redis.log"),
		"--cluster-enabled", "yes", "--cluster-port", port, "--cluster-config-file", "nodes.conf", "--save", "")
	if errors.Is(err, ErrNoRedisServer) {
		t.Skip(err)
	}
	if !PortTaken(err) {
		t.Fatalf("a start on a taken port: %v, want it recognised as PortTaken", err)
	}
}
