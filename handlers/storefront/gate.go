package storefront

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
)

var (
	errMissingKey = apierr.Of("MISSING_KEY", "send the publishable key in the x-service-key header")
	errInvalidKey = apierr.Of("INVALID_KEY", "the publishable key is unknown or disabled")
	errNoOrigin   = apierr.Of("ORIGIN_NOT_ALLOWED",
		"the request has no Origin or Referer header; storefront calls come from a page on one of the key's domains")
	// errBadOrigin is a header that names no usable origin: "null" (a
	// sandboxed frame, a file: page), another scheme than http(s), or user
	// info in the URL.
	errBadOrigin = apierr.Of("ORIGIN_NOT_ALLOWED",
		"the page's Origin (or Referer) is not an http(s) origin without user info (Origin: null comes from a sandboxed frame or a file: page); storefront calls come from an http(s) page on one of the key's domains")
)

// errOrigin refuses a page whose origin host (as hostAllowed compares it:
// a DNS name or an IP literal, so safe to echo) is not on key's domains
// (key nil: any enabled key's, for a preflight), or names no usable host,
// and says where the list is set.
func errOrigin(ctx *fasthttp.RequestCtx, host string, key *pubKey) *apierr.Error {
	switch {
	case host == "" && !hasOriginHeader(ctx):
		return errNoOrigin
	case host == "":
		return errBadOrigin
	case key == nil:
		return apierr.Of("ORIGIN_NOT_ALLOWED", "the page's origin host %s is on no enabled publishable key's domain list; %s", host, domainsAt)
	}
	return apierr.Of("ORIGIN_NOT_ALLOWED", "the page's origin host %s is not on the domain list of publishable key %s; %s", host, key.key, domainsAt)
}

// domainsAt says where a publishable key's domain list is set.
const domainsAt = "a key's list is its domains in the catalog (tenants[].publishableKeys[].domains), applied with ticketctl apply"

// request is an authenticated storefront request.
type request struct {
	// snap is the catalog the request was authenticated against; the
	// whole request reads this one snapshot.
	snap     *catalog.Snapshot
	ix       *index
	key      *pubKey
	tenantID string
	// ctx bounds the request's Redis work (API.Timeout); fctx is the
	// request itself (a deferred rate limit's 429 sets its Retry-After).
	ctx  context.Context
	fctx *fasthttp.RequestCtx

	// What the gate read before it answers: whether a key was sent at
	// all, and the Origin's host.
	keySent bool
	oHost   string
}

type handler func(ctx *fasthttp.RequestCtx, r *request)

// guard runs the storefront gate before h (guard.Route): the Redis
// state, the publishable key, the page's origin, then the client IP's
// rate limit of the class. The event (the third condition of the gate)
// depends on the endpoint; handlers ask a.event. Every answer carries the
// CORS headers an allowed origin needs to read it.
func (a *API) guard(cl guard.Class, h handler) fasthttp.RequestHandler {
	return a.route(cl, false, h)
}

// guardRead is guard for a route whose first Redis call reads the
// registration (lookup): the rate limit rides in that read's round trip
// (guard.Deferred).
func (a *API) guardRead(cl guard.Class, h handler) fasthttp.RequestHandler {
	return a.route(cl, true, h)
}

func (a *API) route(cl guard.Class, deferred bool, h handler) fasthttp.RequestHandler {
	rt := &guard.Route[*request]{Gate: &a.Gate, Start: a.start, Limiter: a.Limiter, Timeout: a.Timeout, Deferred: deferred,
		Auth: func(ctx *fasthttp.RequestCtx, r *request) (*request, guard.Quota, *apierr.Error) {
			if e := a.authenticate(ctx, r); e != nil {
				return nil, guard.Quota{}, e
			}
			return r, guard.Quota{Bucket: guard.IPBucket(a.ClientIP.ClientIP(ctx), cl), Limit: guard.IPLimit(cl)}, nil
		}}
	return rt.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, r *request) {
		r.ctx, r.fctx = rctx, ctx
		h(ctx, r)
	})
}

// start reads the request's key and Origin, once, and sets the CORS
// headers every answer carries, the gate's refusal included.
func (a *API) start(ctx *fasthttp.RequestCtx) *request {
	snap := a.Catalog()
	ix := a.idx.Of(snap, buildIndex)
	rawKey := ctx.Request.Header.Peek("x-service-key")
	key := ix.keys[string(rawKey)]
	if key != nil && !key.enabled {
		key = nil
	}
	// The Origin is parsed once: CORS and the gate's check share it.
	o, oHost := origin(ctx)
	a.cors(ctx, ix, key, o, oHost)
	r := &request{snap: snap, ix: ix, key: key, keySent: len(rawKey) > 0, oHost: oHost}
	if key != nil {
		r.tenantID = key.tenantID
	}
	return r
}

// authenticate checks the publishable key, then the page's origin
// against the key's domains.
func (a *API) authenticate(ctx *fasthttp.RequestCtx, r *request) *apierr.Error {
	if !r.keySent {
		return errMissingKey
	}
	if r.key == nil {
		return errInvalidKey
	}
	if host := requestHost(ctx, r.oHost); host == "" || !hostAllowed(r.key.domains, host) {
		return errOrigin(ctx, host, r.key)
	}
	return nil
}

// Headers of CORS answers.
const (
	allowMethods  = "GET, POST"
	allowHeaders  = "x-service-key, content-type, authorization, x-queue-pass"
	exposeHeaders = "Retry-After"
	maxAge        = "600"
)

// cors sets the CORS headers of an actual request's answer: the Origin is
// echoed (never "*", no credentials) when the key presented allows it, or,
// before a key is known to be good, when any enabled key does (so that a
// page can read its MISSING_KEY or a 503). Vary: Origin always, as the
// answer depends on it.
func (a *API) cors(ctx *fasthttp.RequestCtx, ix *index, key *pubKey, o, oHost string) {
	domains := ix.anyKey
	if key != nil {
		domains = key.domains
	}
	if o := allowedOrigin(ctx, o, oHost, domains); o != "" {
		ctx.Response.Header.Set("Access-Control-Allow-Origin", o)
		ctx.Response.Header.Set("Access-Control-Expose-Headers", exposeHeaders)
	}
}

// allowedOrigin sets Vary: Origin and returns the request's Origin o (as
// origin returns it, with its host) when it is on domains, else "".
func allowedOrigin(ctx *fasthttp.RequestCtx, o, host string, domains []string) string {
	ctx.Response.Header.Set("Vary", "Origin")
	if o == "" || !hostAllowed(domains, host) {
		return ""
	}
	return o
}

// preflight answers a CORS preflight (OPTIONS) of any storefront path. It
// carries no x-service-key, so an origin is allowed when some enabled key
// lists it; the request itself is then checked against its own key. A
// foreign origin (or none) gets 403 ORIGIN_NOT_ALLOWED without CORS
// headers, which the browser reports as a refused preflight.
func (a *API) preflight(ctx *fasthttp.RequestCtx) {
	o, host := origin(ctx)
	o = allowedOrigin(ctx, o, host, a.idx.Of(a.Catalog(), buildIndex).anyKey)
	if o == "" {
		httpx.Fail(ctx, errOrigin(ctx, host, nil))
		return
	}
	h := &ctx.Response.Header
	h.Set("Access-Control-Allow-Origin", o)
	h.Set("Access-Control-Allow-Methods", allowMethods)
	h.Set("Access-Control-Allow-Headers", allowHeaders)
	h.Set("Access-Control-Max-Age", maxAge)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}
