package procs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

func redisClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}
