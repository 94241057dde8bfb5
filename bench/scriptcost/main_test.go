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

// server starts a redis-server of the test's own, without persistence, and
// a client of it.
func server(t *testing.T) (*procs.Redis, rueidis.Client) {
	t.Helper()
	r, err := procs.StartRedis(context.Background(), "", filepath.Join(t.TempDir(), "redis.log"), "--save", "", "--appendonly", "no")
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
	return r, rc
}

// A measurement sells every order it reserves and every registration it
// makes, reads the server's CPU for each phase, and leaves the server as it
// found it: empty.
func TestMeasurePaysEveryOrderAndLeavesNoKey(t *testing.T) {
	ctx := context.Background()
	_, rc := server(t)
	res, err := measure(ctx, rc, 300, 8)
	if err != nil {
		t.Fatal(err)
	}
	sf := res.Storefront
	if res.Orders != 300 || res.ReserveUS < 0 || res.ConfirmUS < 0 ||
		sf.Registrations != 300 || sf.RegisterUS < 0 || sf.CheckoutUS < 0 || sf.PayUS < 0 || sf.ReadUS < 0 {
		t.Fatalf("result %+v", res)
	}
	if n, err := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("%d keys left (%v), want none", n, err)
	}
}

// The CPU read is the Redis server's own: INFO names its process.
func TestServerPIDIsTheRedisProcess(t *testing.T) {
	r, rc := server(t)
	pid, err := serverPID(context.Background(), rc)
	if err != nil || pid != r.PID() {
		t.Fatalf("pid %d (%v), want the server's %d", pid, err, r.PID())
	}
}
