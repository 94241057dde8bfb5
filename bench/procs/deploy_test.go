package procs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/loopback"
)

// deployFile is the absolute path of a shipped file in deploy/: an include
// given after --dir is resolved from that directory, where Redis has moved.
func deployFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startShipped starts redis-server with deploy/redis.conf, then includes
// (shipped files, in order) and extra arguments, as an operator would with
// port and dir overridden, and stops it when t ends.
func startShipped(t *testing.T, includes []string, extra ...string) *Redis {
	t.Helper()
	var args []string
	for _, f := range includes {
		args = append(args, "--include", deployFile(t, f))
	}
	r, err := StartRedis(context.Background(), deployFile(t, "redis.conf"), filepath.Join(t.TempDir(), "redis.log"), append(args, extra...)...)
	if errors.Is(err, ErrNoRedisServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(10 * time.Second) })
	return r
}

// wantConfig fails t unless every CONFIG GET name of the server answers
// its value in want.
func wantConfig(t *testing.T, rc rueidis.Client, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, err := rc.Do(context.Background(), rc.B().ConfigGet().Parameter(k).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestShippedReplicationConfigs starts what deploy/redis-replica.conf and
// deploy/sentinel.conf describe: a primary and a replica from
// deploy/redis.conf plus deploy/redis-replica.conf, and a Sentinel from a
// copy of deploy/sentinel.conf (Sentinel rewrites its file) watching the
// primary. Every directive is valid for this Redis, redis.conf's
// durability survives the include, the primary refuses writes until a
// replica is there (min-replicas-to-write), a write then reaches the
// replica (WAIT 1), and the Sentinel sees the primary, its replica and the
// shipped failover settings.
func TestShippedReplicationConfigs(t *testing.T) {
	ctx := context.Background()
	primary := startShipped(t, []string{"redis-replica.conf"})
	rc := redisClient(t, primary.Addr)
	wantConfig(t, rc, map[string]string{"appendonly": "yes", "appendfsync": "always", "maxmemory-policy": "noeviction",
		"min-replicas-to-write": "1", "min-replicas-max-lag": "5", "repl-backlog-size": "67108864", "replica-read-only": "yes",
		"repl-diskless-sync-delay": "1"})
	write := func() error { return rc.Do(ctx, rc.B().Set().Key("{p0}:probe").Value("v").Build()).Error() }
	if err := write(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Fatalf("a write without replicas: %v, want NOREPLICAS", err)
	}

	host, port, _ := strings.Cut(primary.Addr, ":")
	replica := startShipped(t, []string{"redis-replica.conf"}, "--replicaof", host, port)
	deadline := time.Now().Add(15 * time.Second)
	for write() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the primary refuses writes 15 s after its replica started: %v\n%s", write(), replica.Tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	setAndWait(t, rc, "{p0}:probe", "w")
	// An order's hash, with a record of well over 64 bytes, stays one
	// compact listpack (hash-max-listpack-value): a third less memory a
	// pending order than a hash table.
	hset := rc.B().Hset().Key("{p0}:ord").FieldValue().FieldValue("st", "pending").FieldValue("rec", strings.Repeat("r", 1500)).Build()
	if err := rc.Do(ctx, hset).Error(); err != nil {
		t.Fatal(err)
	}
	if enc, err := rc.Do(ctx, rc.B().ObjectEncoding().Key("{p0}:ord").Build()).ToString(); err != nil || enc != "listpack" {
		t.Fatalf("an order-sized hash is %q (%v), want listpack", enc, err)
	}
	if v, err := redisClient(t, replica.Addr).Do(ctx, rc.B().Get().Key("{p0}:probe").Build()).ToString(); err != nil || v != "w" {
		t.Fatalf("the replica has %q (%v), want the primary's write", v, err)
	}

	shipped, err := os.ReadFile(deployFile(t, "sentinel.conf"))
	if err != nil {
		t.Fatal(err)
	}
	const monitor = "\nsentinel monitor mymaster 127.0.0.1 6379 2\n"
	if !strings.Contains(string(shipped), monitor) {
		t.Fatalf("deploy/sentinel.conf has no line %q for the test to point at its primary", strings.TrimSpace(monitor))
	}
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	ours := strings.Replace(string(shipped), monitor, "\nsentinel monitor mymaster 127.0.0.1 "+port+" 2\n", 1)
	if err := os.WriteFile(conf, []byte(ours), 0o644); err != nil {
		t.Fatal(err)
	}
	sentinel, err := StartRedis(ctx, conf, filepath.Join(t.TempDir(), "sentinel.log"), "--sentinel")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sentinel.Stop(10 * time.Second) })
	sc := redisClient(t, sentinel.Addr)
	deadline = time.Now().Add(15 * time.Second)
	for {
		m, err := sc.Do(ctx, sc.B().Arbitrary("SENTINEL", "MASTER").Args("mymaster").Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		got := []string{m["ip"] + ":" + m["port"], m["flags"], m["quorum"], m["down-after-milliseconds"], m["failover-timeout"], m["parallel-syncs"], m["num-slaves"]}
		want := []string{primary.Addr, "master", "2", "5000", "30000", "1", "1"}
		if strings.Join(got, " ") == strings.Join(want, " ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sentinel sees master, flags, quorum, down-after, failover-timeout, parallel-syncs, replicas %q, want %q\n%s",
				got, want, sentinel.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShippedClusterConfig starts a node with deploy/redis.conf,
// deploy/redis-replica.conf and deploy/redis-cluster.conf, as a cluster
// node is started (the bus on a free port of its own: port + 10000 need
// not be free here): every directive is valid for this Redis, the node is
// cluster-enabled with the shipped failover settings, and the durability
// of redis.conf survives the includes.
func TestShippedClusterConfig(t *testing.T) {
	bus, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, busPort, _ := strings.Cut(bus, ":")
	n := startShipped(t, []string{"redis-replica.conf", "redis-cluster.conf"}, "--cluster-port", busPort)
	rc := redisClient(t, n.Addr)
	wantConfig(t, rc, map[string]string{"cluster-enabled": "yes", "cluster-node-timeout": "5000",
		"cluster-replica-validity-factor": "10", "cluster-require-full-coverage": "yes", "min-replicas-to-write": "0",
		"appendonly": "yes", "appendfsync": "always", "maxmemory-policy": "noeviction"})
	if _, err := os.Stat(filepath.Join(n.Dir, "nodes.conf")); err != nil {
		t.Errorf("the cluster config file is not in the node's dir: %v", err)
	}
}
