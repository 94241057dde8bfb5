package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// app is the baseline server: a pool, the in-memory catalog and settings.
type app struct {
	pool       *pgxpool.Pool
	cat        atomic.Pointer[snapshot]
	applyMu    sync.Mutex // one catalog apply at a time, so snapshots load in order
	adminToken string
	// bearerSum is SHA-256 of "Bearer <admin token>": comparing digests
	// of equal length in constant time tells nothing of the token, not
	// even its length (as handlers/server does).
	bearerSum [sha256.Size]byte
	orderTTL  time.Duration
	log       *slog.Logger
}

// newApp loads the catalog already in the database (a restart keeps it).
func newApp(ctx context.Context, pool *pgxpool.Pool, adminToken string, orderTTL time.Duration, log *slog.Logger) (*app, error) {
	a := &app{pool: pool, adminToken: adminToken, bearerSum: sha256.Sum256([]byte("Bearer " + adminToken)), orderTTL: orderTTL, log: log}
	s, err := load(ctx, pool)
	if err != nil {
		return nil, err
	}
	a.cat.Store(s)
	return a, nil
}

// handler routes the endpoints the bench drives on ticketd's own root
// handler (server.Handler): the same router settings, /healthz and
// envelope for unknown routes and panics. /readyz has no probes: it
// answers 200 whenever the server is up. As in ticketd, metrics.Instrument
// wraps it: it logs the requests a handler failed (httpx.Failure) and
// counts every request, so the two pay the same per request.
func (a *app) handler() fasthttp.RequestHandler {
	return metrics.New().Instrument(server.Handler(nil, a))
}

// Register mounts the baseline's routes (server.Surface).
func (a *app) Register(r *router.Router) {
	r.PUT("/v1/admin/catalog", a.applyCatalog)
	r.POST("/v1/channel/events/{id}/checkout", a.keyed(a.checkout))
	r.POST("/v1/channel/orders/confirm", a.keyed(a.confirm))
	r.GET("/v1/channel/events/{id}", a.keyed(a.eventDetail))
	r.GET("/v1/baseline/stats/{id}", a.stats)
}

// newServer is ticketd's server (server.New: its body and buffer limits,
// timeouts and error envelope), so transport costs match; only the Server
// header names the baseline.
func newServer(h fasthttp.RequestHandler) *fasthttp.Server {
	s := server.New(h)
	s.Name = "ticketd-baseline"
	return s
}

// reqCtx bounds a request's database work.
func reqCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

var errAdminUnauthorized = apierr.Of("ADMIN_UNAUTHORIZED", "a valid Authorization: Bearer admin token is required")

// applyCatalog is PUT /v1/admin/catalog.
func (a *app) applyCatalog(ctx *fasthttp.RequestCtx) {
	if a.adminToken == "" {
		httpx.NotFound(ctx)
		return
	}
	sum := sha256.Sum256(ctx.Request.Header.Peek("Authorization"))
	if subtle.ConstantTimeCompare(sum[:], a.bearerSum[:]) != 1 {
		httpx.Fail(ctx, errAdminUnauthorized)
		return
	}
	var doc document
	if err := json.Unmarshal(ctx.PostBody(), &doc); err != nil {
		httpx.Fail(ctx, apierr.Of("INVALID_CATALOG", "the catalog document is not valid JSON of the expected shape: %v", err))
		return
	}
	if err := doc.validate(); err != nil {
		httpx.Fail(ctx, apierr.Of("INVALID_CATALOG", "%s", err.Error()))
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	var n applied
	err := withRetry(rctx, func() (err error) {
		n, err = apply(rctx, a.pool, &doc)
		return err
	})
	if err != nil {
		var ic *invalidCatalog
		if errors.As(err, &ic) {
			httpx.Fail(ctx, apierr.Of("INVALID_CATALOG", "%s", ic.msg))
			return
		}
		httpx.Error(ctx, err)
		return
	}
	s, err := load(rctx, a.pool)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	a.cat.Store(s)
	httpx.OK(ctx, map[string]any{"applied": n})
}
