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
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
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
