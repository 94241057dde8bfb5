package server

import (
	"context"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"
)

type readyEnvelope struct {
	Success bool   `json:"success"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Status      string `json:"status"`
		Redis       string `json:"redis"`
		Durability  string `json:"durability"`
		Postgres    string `json:"postgres"`
		SyncBacklog *struct {
			Entries       int64   `json:"entries"`
			OldestSeconds float64 `json:"oldestSeconds"`
		} `json:"syncBacklog"`
	} `json:"data"`
}

func getReadyz(t *testing.T, health HealthFunc) (int, readyEnvelope, string) {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/readyz")
	Handler(health)(&ctx)
	var env readyEnvelope
	if err := json.Unmarshal(ctx.Response.Body(), &env); err != nil {
		t.Fatalf("readyz: not JSON: %q", ctx.Response.Body())
	}
	return ctx.Response.StatusCode(), env, string(ctx.Response.Body())
}

func fixed(h Health) HealthFunc { return func(context.Context) Health { return h } }

// A load balancer keeps a node while sales work, Postgres or not: the
// status says degraded and shows the backlog the sync worker owes.
func TestReadyzIsOKWhileSalesWork(t *testing.T) {
	st, env, body := getReadyz(t, fixed(Health{Sales: true, Redis: "current", Durability: "nothing", Postgres: PostgresOK,
		Backlog: &Backlog{Entries: 0}}))
	if st != 200 || !env.Success || env.Data.Status != "ok" || env.Data.Redis != "current" || env.Data.Durability != "nothing" ||
		env.Data.Postgres != "ok" || env.Data.SyncBacklog == nil {
		t.Fatalf("healthy: %d %s", st, body)
	}

	st, env, body = getReadyz(t, fixed(Health{Sales: true, Redis: "current", Durability: "second", Postgres: PostgresUnreachable,
		Backlog: &Backlog{Entries: 1234, Oldest: 4500 * time.Millisecond}}))
	if st != 200 || env.Data.Status != "degraded" || env.Data.Postgres != "unreachable" || env.Data.SyncBacklog == nil ||
		env.Data.SyncBacklog.Entries != 1234 || env.Data.SyncBacklog.OldestSeconds != 4.5 {
		t.Fatalf("Postgres down: %d %s, want 200 degraded with the backlog", st, body)
	}

	// Running without Postgres is a configuration, not a fault.
	st, env, body = getReadyz(t, fixed(Health{Sales: true, Redis: "current", Durability: "everything", Postgres: PostgresOff}))
	if st != 200 || env.Data.Status != "ok" || env.Data.Postgres != "off" || env.Data.SyncBacklog != nil {
		t.Fatalf("Postgres off: %d %s", st, body)
	}
}

// When sales stop the probe fails with the reason, in the envelope.
func TestReadyzIs503WhenSalesStop(t *testing.T) {
	st, env, body := getReadyz(t, fixed(Health{Sales: false, Reason: "Redis lost ticketd's state: rebuilding", Redis: "rebuilding",
		Durability: "unknown", Postgres: PostgresOK}))
	if st != 503 || env.Success || env.Code != "NOT_READY" || env.Message != "Redis lost ticketd's state: rebuilding" ||
		env.Data.Status != "unavailable" || env.Data.Redis != "rebuilding" || env.Data.Postgres != "ok" {
		t.Fatalf("sales stopped: %d %s", st, body)
	}
	if st, env, body := getReadyz(t, fixed(Health{Redis: "unreachable"})); st != 503 || env.Code != "NOT_READY" || env.Message == "" {
		t.Fatalf("sales stopped without a reason: %d %s, want 503 with a message", st, body)
	}
}

// A stalled dependency must not hang the probe: the health source gets a
// deadline.
func TestReadyzGivesTheHealthSourceADeadline(t *testing.T) {
	var left time.Duration
	getReadyz(t, func(ctx context.Context) Health {
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatal("health source called without a deadline")
		}
		left = time.Until(d)
		return Health{Sales: true}
	})
	if left <= 0 || left > ReadyTimeout {
		t.Fatalf("deadline %v away, want within %v", left, ReadyTimeout)
	}
}

// Without a health source (the bench's baseline) /readyz answers while the
// server is up.
func TestReadyzWithoutHealthSource(t *testing.T) {
	if st, _, body := getReadyz(t, nil); st != 200 || body != "{\"success\":true,\"data\":{\"status\":\"ok\"}}\n" {
		t.Fatalf("no health source: %d %s", st, body)
	}
}
