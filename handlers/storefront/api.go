// Package storefront serves the storefront surface of interface.md under
// /v1/storefront: a host's own website, authenticated by a publishable key
// and the Origin of the page, lists an event, quotes, registers a buyer
// and sends them to a hosted payment page. Everything after the gate (cart
// pricing, holds, claims, tickets) is the core the partner surface uses.
package storefront

import (
	"errors"
	"log/slog"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/handlers/seating"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/room"
	"github.com/ticketd/ticketd/inventory/seats"
	"github.com/ticketd/ticketd/inventory/tickets"
)

// Prefix is the path prefix of the surface.
const Prefix = "/v1/storefront"

// API holds the dependencies of the storefront handlers.
type API struct {
	Catalog func() *catalog.Snapshot
	// Orders answers what the partner surface answers too: remaining
	// capacity and discount uses left.
	Orders        *orders.Service
	Registrations *registrations.Service
	Seats         *seats.Engine
	// Card and Wallet open hosted checkouts (payments.Processor); nil
	// answers the payment endpoint 409 PAYMENT_METHOD_UNAVAILABLE, and the
	// event detail's paymentMethods leaves the method out.
	Card, Wallet payments.Processor
	// TestMode says payments are simulated (development, or the built-in
	// test processors on): the event detail and every registration say
	// testMode: true.
	TestMode bool
	// Processors finds a processor by the name a registration recorded,
	// to close an earlier checkout session; Card and Wallet are found
	// without it.
	Processors map[string]payments.Processor
	// Tickets publishes each event's ticket-signing public key
	// (ticket-key); nil answers it 404.
	Tickets *tickets.Keys
	// Room runs the events' waiting rooms (catalog waitingRoom); nil
	// answers an event with one 503 on register-guest and its queue
	// routes 404.
	Room     *room.Service
	Limiter  *ratelimit.Limiter
	ClientIP *clientip.Resolver
	// Holds counts the registrations awaiting payment and seat hold tokens
	// of one client IP per event (TICKETD_HOLDS_PER_IP, under a key derived
	// from TICKETD_SECRETS_KEY); the zero value counts none.
	Holds holds.Policy
	// Gate, when set, says whether sales run: nil, or the 503 to answer
	// (redisstate.Monitor.Gate). It is checked first, as on the partner
	// surface.
	Gate func() *apierr.Error
	// Timeout bounds each request's Redis work (default 5s); fasthttp
	// contexts are not cancelled per request.
	Timeout time.Duration
	Logger  *slog.Logger

	idx catalog.Derived[index]
	// polls counts the status polls the node answers from memory (a
	// waiting room's far places), per client IP with the read limit, so
	// they cost Redis nothing (pollCount).
	polls ratelimit.Local
	// joins counts a waiting room's joins per client IP with the write
	// limit, in the node's memory (queueJoin).
	joins ratelimit.Local
}

func (a *API) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// Register mounts the storefront routes, and the CORS preflight of every
// storefront path.
func (a *API) Register(r *router.Router) {
	g := r.Group(Prefix)
	g.OPTIONS("/{path:*}", a.preflight)
	g.GET("/events/{eventId}", a.guard(guard.Read, a.eventDetail))
	g.GET("/events/{eventId}/ticket-key", a.guard(guard.Read, a.ticketKey))
	g.POST("/quote", a.guard(guard.Read, a.quote))
	g.POST("/register-guest", a.guard(guard.Write, a.registerGuest))
	g.POST("/card/create-checkout-session", a.guardRead(guard.Payment, a.cardSession))
	g.POST("/wallet/create-payment", a.guardRead(guard.Payment, a.walletPayment))
	g.GET("/registration/{registrationId}", a.guardRead(guard.Read, a.registration))
	g.POST("/queue/{eventId}/challenge", a.guard(guard.Read, a.queueChallenge))
	g.POST("/queue/{eventId}/join", a.route(guard.Write, true, a.queueJoin))
	// A status poll's limit is the handler's to take (pollCount): in the
	// node's memory for a place far from the head, else in Redis.
	g.GET("/queue/{eventId}/status", a.route(guard.Read, true, a.queueStatus))
	g.POST("/queue/{eventId}/leave", a.guard(guard.Write, a.queueLeave))
	seating.Mount(g.Group("/seating/events/{id}"), a.Seats, a.seatGate)
}

// seatGate puts the seat endpoints behind the storefront's gate: the key,
// the origin, the client IP's read or write budget, and the path's event
// (id, shortId or slug) of the key's tenant, switched on; writes (holds,
// best-available) take the write class and need it on sale. The caller
// names its own hold tokens (from hold-token, or best-available's new one);
// on an event with a waiting room, those two read the pass (SeatPass).
func (a *API) seatGate(ep seating.Endpoint, h seating.Handler) fasthttp.RequestHandler {
	cl, find := guard.Read, a.event
	if ep.Writes() {
		cl, find = guard.Write, a.saleable
	}
	// Best-available's first Redis call reads seats: its limit rides there.
	return a.route(cl, ep == seating.BestAvailable, func(ctx *fasthttp.RequestCtx, r *request) {
		ref, _ := ctx.UserValue("id").(string)
		ev, e := find(r, ref)
		if e != nil {
			httpx.Fail(ctx, e)
			return
		}
		req := seating.Request{Ctx: r.ctx, Event: ev}
		if ep.Writes() {
			req.Client = a.client(ctx)
		}
		if e := SeatPass(a.Room, ctx, ep, ev, &req); e != nil {
			httpx.Fail(ctx, e)
			return
		}
		h(ctx, req)
	})
}

// client is who the request's holds count for: its client IP, behind
// trusted proxies as the rate limits resolve it.
func (a *API) client(ctx *fasthttp.RequestCtx) holds.Client {
	return a.Holds.Client(clientip.Subscriber(a.ClientIP.ClientIP(ctx)))
}

// unavailable logs a backing store's failure and returns the 503 to
// answer; an *apierr.Error passes through as itself.
func (a *API) unavailable(op string, err error) *apierr.Error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	a.logger().Error("storefront: "+op, "err", err)
	return apierr.Unavailable("temporarily unavailable, retry")
}
