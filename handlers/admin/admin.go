// Package admin serves the operator's surface with a bearer token
// (decisions.md §1): PUT /v1/admin/catalog applies a catalog, GET
// /v1/admin/events/{eventId}/queue reads an event's waiting room. Without
// TICKETD_ADMIN_TOKEN it is off: 404 ADMIN_DISABLED.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/netip"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/lockout"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/room"
)

// API is the admin surface.
type API struct {
	Token   string
	Catalog *catalogstore.Store
	// Room reads the waiting rooms (GET .../queue); nil answers every
	// event as having none.
	Room *room.Service
	// Gate, when set, refuses applies (503) while the Redis state is not
	// current: capacities must not be written into a Redis that lost its
	// sold counts.
	Gate func() *apierr.Error
	// ClientIP finds the caller's address for Lockout; nil means the peer.
	ClientIP *clientip.Resolver
	// Lockout throttles wrong tokens per client IP (an admin token has no
	// key to count by, and one lock for everyone would lock the operator
	// out); nil throttles none.
	Lockout *lockout.Guard
}

// MaxCatalogBody is the largest catalog document accepted. Catalogs are an
// operator's, not a client's, so they may exceed the 64 KB client limit;
// the server raises its body limit for a PUT of this path that bears the
// valid token only (server.AdminToken), decided from the headers.
const MaxCatalogBody = 8 << 20

// Register mounts the admin routes. Without a token it mounts one answer
// for every method and path under /v1/admin/: 404 ADMIN_DISABLED, saying
// how to turn the surface on, and no 405 that would reveal a route.
func (a *API) Register(r *router.Router) {
	if a.Token == "" {
		r.ANY("/v1/admin/{path:*}", func(ctx *fasthttp.RequestCtx) { httpx.Fail(ctx, errDisabled) })
		return
	}
	// The token answers before the gate: a caller without it learns
	// nothing of the node's state.
	rt := &guard.Route[struct{}]{Gate: &a.Gate, GateLast: true, Auth: a.authenticate, Timeout: applyTimeout}
	r.PUT("/v1/admin/catalog", rt.Wrap(a.applyCatalog))
	read := &guard.Route[struct{}]{Gate: &a.Gate, GateLast: true, Auth: a.authenticate, Timeout: readTimeout}
	r.GET("/v1/admin/events/{eventId}/queue", read.Wrap(a.queue))
	r.GET("/v1/admin/events/{eventId}/queue/audit", read.Wrap(a.queueAudit))
}

var (
	errUnauthorized = apierr.Of("ADMIN_UNAUTHORIZED", "a valid Authorization: Bearer admin token is required")
	errDisabled     = apierr.Of("ADMIN_DISABLED", "the admin surface is off: this ticketd was started without TICKETD_ADMIN_TOKEN; "+
		"restart it with TICKETD_ADMIN_TOKEN set, and send that token (ticketctl: TICKETD_ADMIN_TOKEN or -token)")
)

func (a *API) authorized(ctx *fasthttp.RequestCtx) bool {
	h := ctx.Request.Header.Peek("Authorization")
	const p = "Bearer "
	if len(h) <= len(p) || string(h[:len(p)]) != p {
		return false
	}
	// Digests, as in the server's body limit: ConstantTimeCompare returns
	// at once on a length mismatch, which would time the token's length.
	got, want := sha256.Sum256(h[len(p):]), sha256.Sum256([]byte(a.Token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// authenticate refuses the caller unless it presents the token. An IP
// locked out after failed attempts is refused before the token is
// compared; a wrong token counts, a missing one is no guess and does not.
func (a *API) authenticate(ctx *fasthttp.RequestCtx, _ struct{}) (struct{}, guard.Quota, *apierr.Error) {
	var ip netip.Addr
	if a.Lockout != nil {
		ip = a.ClientIP.ClientIP(ctx)
		if wait := a.Lockout.IPLocked(ip); wait > 0 {
			return struct{}{}, guard.Quota{}, guard.Refuse(ctx, wait)
		}
	}
	if a.authorized(ctx) {
		return struct{}{}, guard.Quota{}, nil
	}
	if len(ctx.Request.Header.Peek("Authorization")) > 0 {
		if wait := a.Lockout.Failed(ip, ""); wait > 0 {
			return struct{}{}, guard.Quota{}, guard.Refuse(ctx, wait)
		}
	}
	return struct{}{}, guard.Quota{}, errUnauthorized
}

// applyTimeout bounds an apply's Redis and Postgres work.
const applyTimeout = 30 * time.Second

func (a *API) applyCatalog(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
	doc, err := catalog.Decode(ctx.PostBody())
	if err == nil {
		err = catalog.Validate(doc)
	}
	if err != nil {
		failInvalid(ctx, err)
		return
	}
	applied, err := a.Catalog.Apply(rctx, doc)
	switch {
	case err == nil:
		httpx.OK(ctx, map[string]any{"applied": applied})
	case errors.Is(err, catalogstore.ErrBusy):
		httpx.Fail(ctx, apierr.Of("CATALOG_BUSY", "another catalog apply or a rebuild holds the catalog; apply the document again"))
	default:
		failInvalid(ctx, err)
	}
}

func failInvalid(ctx *fasthttp.RequestCtx, err error) {
	var ve *catalog.ValidationError
	if errors.As(err, &ve) {
		httpx.Fail(ctx, apierr.Of("INVALID_CATALOG", "%s", ve.Error()).With("path", ve.Path))
		return
	}
	httpx.Error(ctx, err)
}
