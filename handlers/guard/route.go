package guard

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// Quota is the rate limit one request is counted in: its bucket and
// per-minute limit. The zero Quota counts nothing.
type Quota struct {
	Bucket string
	Limit  int64
}

// Route is the one skeleton every surface's requests pass before their
// handler: the state gate, the surface's authentication, the request
// context (RequestContext, made once here), then the rate limit of the
// caller's bucket. What a caller is, and the answers of a refused
// credential, stay with the surface (Start and Auth); a C is what its
// handlers get of it.
type Route[C any] struct {
	// Gate points at the surface's gate, read at each request (a surface
	// may set it after its routes are mounted): nil, or a gate that says
	// whether the route serves now, nil or the 503 to answer
	// (redisstate.Monitor.Gate). A nil gate serves always.
	Gate *func() *apierr.Error
	// GateLast checks the gate after authentication (the admin surface:
	// a caller without the token learns nothing of the node's state).
	GateLast bool
	// Start, when set, runs first on every request, gate refusals
	// included, and makes the C that Auth completes (the storefront reads
	// its key and sets the CORS headers every answer carries).
	Start func(ctx *fasthttp.RequestCtx) C
	// Auth authenticates the caller: it returns the caller and its quota,
	// or the refusal to answer (written with httpx.Fail). nil lets every
	// caller in, uncounted.
	Auth func(ctx *fasthttp.RequestCtx, c C) (C, Quota, *apierr.Error)
	// Limiter counts the quotas; nil counts none.
	Limiter *ratelimit.Limiter
	// Timeout bounds the request context (RequestContext's default when
	// not positive).
	Timeout time.Duration
	// OwnContext leaves the request context to the handler, which gets
	// rctx nil (the webhooks bound their booking by a timeout of their
	// own); such a route counts no quota.
	OwnContext bool
	// Deferred leaves the rate limit to the handler's first Redis read
	// (Deferred, which the request context carries): for routes whose
	// first Redis call is a read.
	Deferred bool
	// Fail answers the gate's refusal and a failed rate-limit call (with
	// the log arguments "step", "rate limit"); nil is httpx.Error.
	Fail func(ctx *fasthttp.RequestCtx, err error, logArgs ...any)
}

// Handler is a route's handler: rctx is the request context, c the
// authenticated caller.
type Handler[C any] func(ctx *fasthttp.RequestCtx, rctx context.Context, c C)

// Wrap returns h behind the route's checks.
func (r *Route[C]) Wrap(h Handler[C]) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		var c C
		if r.Start != nil {
			c = r.Start(ctx)
		}
		if !r.GateLast && !r.gate(ctx) {
			return
		}
		var q Quota
		if r.Auth != nil {
			var e *apierr.Error
			if c, q, e = r.Auth(ctx, c); e != nil {
				httpx.Fail(ctx, e)
				return
			}
		}
		if r.GateLast && !r.gate(ctx) {
			return
		}
		if r.OwnContext {
			h(ctx, nil, c)
			return
		}
		rctx, cancel := RequestContext(ctx, r.Timeout)
		defer cancel()
		if r.Deferred && q.Bucket != "" && r.Limiter != nil {
			d := &Deferred{quota: q, l: r.Limiter, rctx: rctx}
			h(ctx, context.WithValue(rctx, deferredKey{}, d), c)
			if d.settled || d.sent || d.local {
				// Taken in the handler's read (its answer unread when the
				// read failed: the handler answered that failure), or in
				// the node's memory for an answer from there.
				return
			}
			// The handler made no read: the limit is taken now, and its
			// refusal (or Redis' failure) replaces the handler's answer,
			// the headers Start set kept.
			refused, err := d.Take(ctx, rctx)
			switch {
			case err != nil:
				ctx.Response.ResetBody()
				r.fail(ctx, err, "step", "rate limit")
			case refused != nil:
				ctx.Response.ResetBody()
				httpx.Fail(ctx, refused)
			}
			return
		}
		if q.Bucket != "" && r.Limiter != nil {
			refused, err := Limit(ctx, rctx, r.Limiter, q.Bucket, q.Limit)
			if err != nil {
				// Redis went away before the gate saw it.
				r.fail(ctx, err, "step", "rate limit")
				return
			}
			if refused != nil {
				httpx.Fail(ctx, refused)
				return
			}
		}
		h(ctx, rctx, c)
	}
}

// gate answers false, having written the refusal, while the gate is shut.
func (r *Route[C]) gate(ctx *fasthttp.RequestCtx) bool {
	if r.Gate == nil || *r.Gate == nil {
		return true
	}
	if e := (*r.Gate)(); e != nil {
		r.fail(ctx, e)
		return false
	}
	return true
}

func (r *Route[C]) fail(ctx *fasthttp.RequestCtx, err error, logArgs ...any) {
	if r.Fail != nil {
		r.Fail(ctx, err, logArgs...)
		return
	}
	httpx.Error(ctx, err)
}
