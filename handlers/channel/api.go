// Package channel serves the partner (channel) surface of interface.md under
// /v1/channel: keyed server-to-server calls and buyer-session calls from the
// embedded checkout.
package channel

import (
	"log/slog"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/lockout"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/handlers/seating"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/seats"
)

// API holds the dependencies of the partner handlers.
type API struct {
	Catalog  func() *catalog.Snapshot
	Orders   *orders.Service
	Seats    *seats.Engine
	Limiter  *ratelimit.Limiter
	ClientIP *clientip.Resolver
	// Lockout throttles failed authentications; nil throttles none.
	Lockout  *lockout.Guard
	Sessions *Sessions
	// Gate, when set, says whether sales run: nil, or the 503 to answer
	// (redisstate.Monitor.Gate: Redis unreachable, lost or being rebuilt).
	// It is checked before anything else, so a stopped node answers at once.
	Gate func() *apierr.Error
	// Metrics counts newly paid orders; nil counts nothing.
	Metrics *metrics.Metrics
	// Timeout bounds each request's Redis work; fasthttp contexts are not
	// cancelled per request.
	Timeout time.Duration
	Logger  *slog.Logger
	Now     func() time.Time
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Register mounts the partner routes.
func (a *API) Register(r *router.Router) {
	g := r.Group("/v1/channel")
	g.GET("/events", a.guard(authEither, catalog.ScopeCatalogRead, guard.Catalog, a.listEvents))
	g.GET("/events/{id}", a.guard(authEither, catalog.ScopeCatalogRead, guard.Catalog, a.eventDetail))
	g.POST("/events/{id}/quote", a.guard(authEither, catalog.ScopeCatalogRead, guard.Catalog, a.quote))
	// Reserve's limit rides in its first round trip (orders.ReserveRequest.Along).
	g.POST("/events/{id}/checkout", a.route(authEither, catalog.ScopeOrdersWrite, guard.Checkout, true, a.checkout))
	g.POST("/orders/confirm", a.guard(authKeyed, catalog.ScopeOrdersConfirm, guard.Confirm, a.confirm))
	g.POST("/orders/status", a.guard(authEither, catalog.ScopeOrdersRead, guard.Status, a.status))
	g.POST("/session", a.guard(authKeyed, catalog.ScopeSessionsWrite, guard.Session, a.createSession))
	g.GET("/session", a.guard(authSession, "", guard.Resolve, a.resolveSession))

	seating.Mount(g.Group("/seating/events/{id}"), a.Seats, a.seatGate)
}

// seatGate is the partner surface's gate for the shared seat endpoints:
// a key or a buyer session, the seats rate class, the event of the
// caller's catalog on sale. Writes (hold-token, hold, extend, release,
// best-available) need orders:write. A session owns one derived hold token
// per event; a keyed caller names its own.
func (a *API) seatGate(ep seating.Endpoint, h seating.Handler) fasthttp.RequestHandler {
	scope := catalog.ScopeCatalogRead
	if ep.Writes() {
		scope = catalog.ScopeOrdersWrite
	}
	// Best-available's first Redis call reads seats: its limit rides there.
	return a.route(authEither, scope, guard.Seats, ep == seating.BestAvailable, func(ctx *fasthttp.RequestCtx, c *caller) {
		ev, e := a.saleable(ctx, c)
		if e != nil {
			httpx.Fail(ctx, e)
			return
		}
		r := seating.Request{Ctx: c.ctx, Event: ev}
		if c.Session != nil {
			r.OwnToken = a.Sessions.HoldToken(c.Session, ev.ID)
		}
		h(ctx, r)
	})
}
