package channel

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// Which credentials an endpoint takes.
type authMode int

const (
	authKeyed   authMode = iota // x-service-key + x-service-secret only
	authSession                 // buyer session only
	authEither                  // keyed, or a buyer session
)

// caller is who is calling: a channel with its key, or a buyer session.
type caller struct {
	Channel *catalog.CompiledChannel
	Session *Session // nil for keyed calls
	// snap is the catalog the request was authenticated against; the whole
	// request reads this one snapshot, so a concurrent apply cannot mix
	// two catalog versions into one answer.
	snap *catalog.Snapshot
	// ctx bounds the request's Redis and Postgres work (API.Timeout).
	ctx context.Context
}

// id names the caller for idempotency keys and rate limits.
func (c *caller) id() string {
	if c.Session != nil {
		return "ss:" + c.Session.ID
	}
	return "ch:" + c.Channel.ID
}

type handler func(ctx *fasthttp.RequestCtx, c *caller)

var (
	errMissingCredentials = apierr.Of("MISSING_CREDENTIALS", "send both x-service-key and x-service-secret")
	errInvalidCredentials = apierr.Of("INVALID_CREDENTIALS", "unknown key or wrong secret; do not retry")
	errIPNotAllowed       = apierr.Of("IP_NOT_ALLOWED", "this egress IP address is not allowlisted for the key")
	errScopeDenied        = apierr.Of("SCOPE_DENIED", "the key lacks the scope for this endpoint")
	errSessionRequired    = apierr.Of("MISSING_CREDENTIALS", "a buyer session (cookie svc_session or Authorization: Bearer) is required")
	errInvalidSession     = apierr.Of("INVALID_SESSION", "the buyer session is unknown or expired; start a new one")
)

// guard runs the partner surface's checks before h (guard.Route): the
// Redis state, then authentication (lockout, credentials or a buyer
// session, the IP allowlist and the scope), then the caller's rate limit:
// a buyer session's, or its key's.
func (a *API) guard(mode authMode, scope string, cl guard.Class, h handler) fasthttp.RequestHandler {
	return a.route(mode, scope, cl, false, h)
}

// route is guard; deferred leaves the rate limit to the handler's first
// Redis read (guard.Route.Deferred).
func (a *API) route(mode authMode, scope string, cl guard.Class, deferred bool, h handler) fasthttp.RequestHandler {
	rt := &guard.Route[*caller]{Gate: &a.Gate, Limiter: a.Limiter, Timeout: a.Timeout, Deferred: deferred,
		Auth: func(ctx *fasthttp.RequestCtx, _ *caller) (*caller, guard.Quota, *apierr.Error) {
			c, e := a.authenticate(ctx, mode, scope)
			if e != nil {
				return nil, guard.Quota{}, e
			}
			if c.Session != nil {
				return c, guard.Quota{Bucket: guard.Bucket(guard.BySession, c.Session.ID, cl), Limit: guard.SessionLimit(cl)}, nil
			}
			kc := guard.KeyedClass(cl)
			return c, guard.Quota{Bucket: guard.Bucket(guard.ByKey, c.Channel.ID, kc), Limit: guard.KeyedLimit(kc, c.Channel.RateLimits)}, nil
		},
		Fail: func(ctx *fasthttp.RequestCtx, err error, logArgs ...any) { a.fail(ctx, cl, err, logArgs...) },
	}
	return rt.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, c *caller) {
		c.ctx = rctx
		h(ctx, c)
	})
}

// fail answers a request of class cl that failed before its handler ran
// (sales stopped, Redis unreachable): a confirm as failConfirm does, with
// logArgs, whatever step met the failure; any other as httpx.Error does.
func (a *API) fail(ctx *fasthttp.RequestCtx, cl guard.Class, err error, logArgs ...any) {
	if cl == guard.Confirm {
		a.failConfirm(ctx, err, logArgs...)
		return
	}
	httpx.Error(ctx, err)
}

// authenticate finds the caller. A client IP locked out after failed
// authentications is refused first (a channel's server on its key's
// allowlist only for its own address' failures, lockout.go), and a
// channel key locked out is refused to callers off the channel's
// allowlist, before any secret is checked; failures are counted. Success
// costs no Redis call.
func (a *API) authenticate(ctx *fasthttp.RequestCtx, mode authMode, scope string) (*caller, *apierr.Error) {
	ip := a.ClientIP.ClientIP(ctx)
	snap := a.Catalog()
	key := ctx.Request.Header.Peek("x-service-key")
	secret := ctx.Request.Header.Peek("x-service-secret")
	keyed := len(key) > 0 || len(secret) > 0
	bySession := mode == authSession || (mode == authEither && !keyed)
	var ch *catalog.CompiledChannel
	var allowed bool // ip is on the allowlist of the key presented
	if !bySession {
		ch = snap.ByKey[string(key)]
		allowed = ch != nil && ch.Allowed(ip)
	}
	if wait := a.ipLocked(ip, ch, allowed); wait > 0 {
		return nil, guard.Refuse(ctx, wait)
	}
	if bySession {
		tok := sessionToken(ctx)
		if tok == "" {
			if mode == authSession {
				return nil, errSessionRequired
			}
			return nil, errMissingCredentials
		}
		s, ok := a.Sessions.Parse(tok, a.now())
		if !ok {
			return nil, a.failedSession(ctx, ip, tok)
		}
		ch = snap.Channels[s.ChannelID]
		if ch == nil {
			return nil, errInvalidSession
		}
		// A session acts for its channel and has no more rights than the
		// channel's key.
		if scope != "" && !ch.Scopes[scope] {
			return nil, errScopeDenied
		}
		return &caller{Channel: ch, Session: s, snap: snap}, nil
	}
	if len(key) == 0 || len(secret) == 0 {
		return nil, errMissingCredentials
	}
	// A known key is locked out and counted for strangers only, so that
	// spraying it cannot lock the channel out of its own servers.
	var keyID string
	if ch != nil && !allowed {
		keyID = ch.ID
		if wait := a.Lockout.KeyLocked(keyID); wait > 0 {
			return nil, guard.Refuse(ctx, wait)
		}
	}
	if ch == nil || !ch.SecretMatches(secret) {
		return nil, a.failed(ctx, ip, keyID, errInvalidCredentials)
	}
	if !allowed {
		return nil, errIPNotAllowed
	}
	if scope != "" && !ch.Scopes[scope] {
		return nil, errScopeDenied
	}
	return &caller{Channel: ch, snap: snap}, nil
}
