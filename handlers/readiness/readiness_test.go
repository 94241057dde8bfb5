package readiness

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/unsynced"
)

// TestPostgresDownIsDegradedWithTheBacklog: sales work while Postgres is
// away, so /readyz stays 200, says degraded, and shows the paid orders
// waiting for Postgres and how old the oldest is; it names no host.
func TestPostgresDownIsDegradedWithTheBacklog(t *testing.T) {
	rc, space := redistest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mon := &redisstate.Monitor{Redis: rc, Space: space, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if v := mon.Check(ctx); v.Status != redisstate.Current {
		t.Fatalf("Redis state %s: %s", v.Status, v.Reason)
	}
	// One paid order on a stream, added 5 s ago.
	id := time.Now().Add(-5 * time.Second).UnixMilli()
	if err := rc.Do(ctx, rc.B().Xadd().Key(space.Paid(3)).Id(strconv.FormatInt(id, 10)+"-0").FieldValue().FieldValue("o", "x").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: every ping fails.
	pool, err := pgxpool.New(ctx, "postgres://ticketd_user@127.0.0.1:1/ticketd_db?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := &Backlog{Redis: rc, Space: space}
	go b.Run(ctx, time.Hour) // the first read is at once
	deadline := time.Now().Add(10 * time.Second)
	for _, ok := b.Last(); !ok; _, ok = b.Last() {
		if time.Now().After(deadline) {
			t.Fatal("no backlog read in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	var rctx fasthttp.RequestCtx
	rctx.Request.Header.SetMethod("GET")
	rctx.Request.SetRequestURI("/readyz")
	server.Handler(Health(mon, pool, b))(&rctx)
	body := string(rctx.Response.Body())
	var env struct {
		Data struct {
			Status, Redis, Postgres string
			SyncBacklog             *struct {
				Entries       int64
				OldestSeconds float64
			}
		}
	}
	if err := json.Unmarshal(rctx.Response.Body(), &env); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	d := env.Data
	if rctx.Response.StatusCode() != 200 || d.Status != server.StatusDegraded || d.Redis != "current" || d.Postgres != server.PostgresUnreachable ||
		d.SyncBacklog == nil || d.SyncBacklog.Entries != 1 || d.SyncBacklog.OldestSeconds < 5 {
		t.Fatalf("Postgres down, one paid order waiting: %d %s", rctx.Response.StatusCode(), body)
	}
	for _, leak := range []string{"127.0.0.1", "ticketd_user", "ticketd_db", "dial", "refused"} {
		if strings.Contains(body, leak) {
			t.Fatalf("/readyz shows %q: %s", leak, body)
		}
	}
}

// The backlog's one reader feeds the TICKETD_MAX_UNSYNCED gate: with more
// paid orders on the streams (real Redis) than the limit allows, /readyz
// is 503 NOT_READY with the limit's reason and the surfaces' gate refuses
// with it; with the monitor's state not current its reason comes first;
// once the streams are drained, both open again by themselves.
func TestBacklogOverTheLimitStopsSalesUntilDrained(t *testing.T) {
	rc, space := redistest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mon := &redisstate.Monitor{Redis: rc, Space: space, Logger: slog.New(slog.DiscardHandler)}
	if v := mon.Check(ctx); v.Status != redisstate.Current {
		t.Fatalf("Redis state %s: %s", v.Status, v.Reason)
	}
	b := &Backlog{Redis: rc, Space: space,
		Limit: &unsynced.Gate{Limit: unsynced.Limit{Age: time.Hour, Entries: 3}, Logger: slog.New(slog.DiscardHandler)}}
	go b.Run(ctx, 20*time.Millisecond)
	gate := b.Limit.After(mon.Gate)
	health := server.Handler(Health(mon, nil, b))
	readyz := func() (int, string) {
		var rctx fasthttp.RequestCtx
		rctx.Request.Header.SetMethod("GET")
		rctx.Request.SetRequestURI("/readyz")
		health(&rctx)
		return rctx.Response.StatusCode(), string(rctx.Response.Body())
	}
	waitGate := func(what string, open bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); (gate() == nil) != open; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s; gate %v", what, gate())
			}
		}
	}

	// Four paid orders over two partitions: over a limit of 3.
	for i := range 4 {
		if err := rc.Do(ctx, rc.B().Xadd().Key(space.Paid(i%2)).Id("*").FieldValue().FieldValue("o", "x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	waitGate("sales stopped over the limit", false)
	e := gate()
	if e.Status != 503 || e.Code != "SERVICE_UNAVAILABLE" || e.Reason != unsynced.Reason || !strings.Contains(e.Message, "4 paid orders") ||
		!strings.Contains(e.Message, "TICKETD_MAX_UNSYNCED=1h,3") {
		t.Fatalf("gate over the limit: %d %s %s %q", e.Status, e.Code, e.Reason, e.Message)
	}
	st, body := readyz()
	if st != 503 || !strings.Contains(body, `"code":"NOT_READY"`) || !strings.Contains(body, "over TICKETD_MAX_UNSYNCED") ||
		!strings.Contains(body, `"redis":"current"`) || !strings.Contains(body, `"entries":4`) {
		t.Fatalf("readyz over the limit: %d %s", st, body)
	}

	// The Redis state's reason wins while both refuse.
	for p := range keys.Partitions {
		if err := rc.Do(ctx, rc.B().Del().Key(space.Live(p)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if v := mon.Check(ctx); v.Status != redisstate.Lost {
		t.Fatalf("markers deleted: state %s", v.Status)
	}
	if e := gate(); e == nil || e.Reason == unsynced.Reason || !strings.Contains(e.Message, "Redis lost its state") {
		t.Fatalf("both closed: gate %v, want the Redis state's", e)
	}
	if st, body := readyz(); st != 503 || !strings.Contains(body, "generation marker") {
		t.Fatalf("readyz with both closed: %d %s, want the Redis state's reason", st, body)
	}

	// Drained (the worker wrote them): the limit opens by itself.
	for p := range 2 {
		if err := rc.Do(ctx, rc.B().Del().Key(space.Paid(p)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); b.Limit.Refusal() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("drained: still stopped after 10 s: %v", b.Limit.Refusal())
		}
	}
	if e := gate(); e == nil || e.Reason == unsynced.Reason {
		t.Fatalf("drained, Redis state lost: gate %v, want the Redis state's", e)
	}
}
