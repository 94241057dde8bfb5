package channel

import (
	"net/netip"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// failed counts a failed authentication from ip (and for the channel key
// keyID, "" for none) and returns e, or the 429 when this failure locked
// the caller out.
func (a *API) failed(ctx *fasthttp.RequestCtx, ip netip.Addr, keyID string, e *apierr.Error) *apierr.Error {
	if wait := a.Lockout.Failed(ip, keyID); wait > 0 {
		return ratelimit.Refuse(ctx, wait)
	}
	return e
}

// failedSession answers a session token Parse refused. Only a token
// ticketd did not sign is a guess worth counting: an expired session, or
// one of a channel since removed, is a buyer's browser coming back late,
// and buyers behind one NAT must not lock each other out.
func (a *API) failedSession(ctx *fasthttp.RequestCtx, ip netip.Addr, tok string) *apierr.Error {
	if a.Sessions.signed(tok) {
		return errInvalidSession
	}
	return a.failed(ctx, ip, "", errInvalidSession)
}
