package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/procs"
)

// A measurement sells every order it reserves, reads the server's CPU for
// both phases, and leaves the server as it found it: empty.
func TestMeasurePaysEveryOrderAndLeavesNoKey(t *testing.T) {
	ctx := context.Background()
	r, err := procs.StartRedis(ctx, "", filepath.Join(t.TempDir(), "redis.log"), "--save", "", "--appendonly", "no")
	if errors.Is(err, procs.ErrNoRedisServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(5 * time.Second) })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	res, err := measure(ctx, rc, 300, 8)
	if err != nil {
		t.Fatal(err)
	}
	if res.Orders != 300 || res.ReserveUS < 0 || res.ConfirmUS < 0 {
		t.Fatalf("result %+v", res)
	}
	if n, err := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("%d keys left (%v), want none", n, err)
	}
}

// The CPU read is the Redis server's own: INFO names its process.
func TestServerPIDIsTheRedisProcess(t *testing.T) {
	ctx := context.Background()
	r, err := procs.StartRedis(ctx, "", filepath.Join(t.TempDir(), "redis.log"))
	if errors.Is(err, procs.ErrNoRedisServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(5 * time.Second) })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	pid, err := serverPID(ctx, rc)
	if err != nil || pid != r.PID() {
		t.Fatalf("pid %d (%v), want the server's %d", pid, err, r.PID())
	}
}
