package picker

import (
	"context"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/seating"
	"github.com/ticketd/ticketd/handlers/storefront"
	"github.com/ticketd/ticketd/handlers/views"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/seats"
)

// The token failures reuse the storefront's key codes: the token is what
// the page presents instead of a publishable key.
var (
	errNoToken  = apierr.Of("MISSING_KEY", "send the seat picker's token in the x-picker-token header")
	errBadToken = apierr.Of("INVALID_KEY", "the seat picker's token is invalid, expired or for another event; reload the page")
)

// seatGate puts the seat endpoints behind the picker's gate: the Redis
// state, the page's token (good, unexpired, for the path's event id and
// its tenant, and the tenant still has a site: an enabled publishable key
// with a domain, as the page needs to be served, so disabling the keys
// stops pages already open), the client IP's budget, then the
// storefront's event rule: switched on for the storefront, and on sale
// for writes. Reads (guard.Read) and holds (guard.Write) count in the same
// per-IP buckets as the storefront's keyless calls, so one address has one
// budget whichever surface it uses; availability polls count in a bucket
// of their own (guard.Poll) and share a short-lived read (availCache).
// Each page names its own hold tokens (from hold-token or best-available),
// as the storefront does, and they count for its client IP
// (Holds, inventory/holds) as the storefront's do.
func (p *Picker) seatGate(ep seating.Endpoint, h seating.Handler) fasthttp.RequestHandler {
	cl := guard.Read
	switch {
	case ep == seating.Availability:
		cl = guard.Poll
	case ep.Writes():
		cl = guard.Write
	}
	rt := &guard.Route[caller]{Gate: &p.Gate, Limiter: p.Limiter, Timeout: p.Timeout, Deferred: ep == seating.BestAvailable,
		Auth: func(ctx *fasthttp.RequestCtx, _ caller) (caller, guard.Quota, *apierr.Error) {
			ev, e := p.authenticate(ctx)
			if e != nil {
				return caller{}, guard.Quota{}, e
			}
			ip := p.ClientIP.ClientIP(ctx)
			return caller{ev: ev, ip: ip}, guard.Quota{Bucket: guard.IPBucket(ip, cl), Limit: guard.IPLimit(cl)}, nil
		}}
	return rt.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, c caller) {
		ev := c.ev
		e := storefront.Switched(ev)
		if e == nil && ep.Writes() {
			e = views.OnSale(ev, time.Now())
		}
		if e != nil {
			httpx.Fail(ctx, e)
			return
		}
		req := seating.Request{Ctx: rctx, Event: ev}
		if ep.Writes() {
			req.Client = p.Holds.Client(clientip.Subscriber(c.ip))
		}
		// a waiting room's pass, which the host page handed the picker
		if e := storefront.SeatPass(p.Room, ctx, ep, ev, &req); e != nil {
			httpx.Fail(ctx, e)
			return
		}
		if ep == seating.Availability {
			req.Read = func(c context.Context, ev *catalog.CompiledEvent) (seats.Availability, error) {
				return p.avail.read(c, ev, func() (seats.Availability, error) { return p.Seats.Availability(c, ev) })
			}
		}
		h(ctx, req)
		if ep.Writes() {
			p.avail.changed(ev.ID)
		}
	})
}

// caller is a picker request past the gate: the token's event and the
// client IP.
type caller struct {
	ev *catalog.CompiledEvent
	ip netip.Addr
}

// authenticate checks the page's token: good, unexpired, for the path's
// event id and its tenant, and the tenant still has a site.
func (p *Picker) authenticate(ctx *fasthttp.RequestCtx) (*catalog.CompiledEvent, *apierr.Error) {
	raw := ctx.Request.Header.Peek(TokenHeader)
	if len(raw) == 0 {
		return nil, errNoToken
	}
	id, _ := ctx.UserValue("id").(string)
	evID, tenantID, ok := verify(p.Key, string(raw), time.Now())
	if !ok || evID != id {
		return nil, errBadToken
	}
	snap := p.Catalog()
	ev := snap.Events[id]
	if ev != nil && ev.TenantID != tenantID || !p.idx.Of(snap, buildIndex).hasSite(tenantID) {
		return nil, errBadToken
	}
	return ev, nil
}
