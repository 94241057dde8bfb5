package main

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/inventory/keys"
)

// TestBenchOnClusterMetersEachNodeAndDeletesOnlyItsKeys: on a Redis
// Cluster the bench meters every master apart (so the one that holds a hot
// event shows its cost), and its clean-up deletes its own keys on every
// node, event partitions and their own-slot keys alike, and nothing under
// another prefix.
func TestBenchOnClusterMetersEachNodeAndDeletesOnlyItsKeys(t *testing.T) {
	ctx := context.Background()
	c, err := procs.StartCluster(ctx, 3, filepath.Join(t.TempDir(), "redis"))
	if errors.Is(err, procs.ErrNoRedisServer) || errors.Is(err, procs.ErrNoRedisCLI) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(5 * time.Second)
	rc, err := connectRedis(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()

	if cpuuse.Supported() {
		srcs := localRedis(ctx, rc, c.URL())
		if len(srcs) != 3 {
			t.Fatalf("metered %d redis processes, want the 3 masters", len(srcs))
		}
		for _, s := range srcs {
			if !strings.HasPrefix(s.Name, "redis 127.0.0.1:") {
				t.Fatalf("source %q does not name its node", s.Name)
			}
		}
	}

	mine, theirs := keys.Space{Prefix: "bench:mine:"}, keys.Space{Prefix: "bench:theirs:"}
	var cmds rueidis.Commands
	for i := range 200 {
		ev := "ev" + strconv.Itoa(i)
		for _, s := range []keys.Space{mine, theirs} {
			cmds = append(cmds, rc.B().Hset().Key(s.Sold(ev)).FieldValue().FieldValue("t:tk", "1").Build(),
				rc.B().Set().Key(s.Idempotency("k"+strconv.Itoa(i))).Value("x").Build())
		}
	}
	for _, r := range rc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := redismem.DeletePrefix(ctx, rc, mine.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if n != 400 {
		t.Fatalf("deleted %d keys, want the 400 under %s", n, mine.Prefix)
	}
	total := int64(0)
	for addr, node := range rc.Nodes() {
		k, err := node.Do(ctx, node.B().Dbsize().Build()).AsInt64()
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		total += k
	}
	if total != 400 {
		t.Fatalf("%d keys left on the cluster, want the other prefix's 400", total)
	}
}
