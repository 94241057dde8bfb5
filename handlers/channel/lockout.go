package channel

import (
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// ipLocked is how long the client at ip is locked out. A caller on the
// allowlist of the key it presents is the channel's own server: only a
// lock its own address earned holds it, since an IPv6 lock covers a /64
// that a hosting provider may share with strangers.
func (a *API) ipLocked(ip netip.Addr, allowlisted bool) time.Duration {
	if allowlisted {
		return a.Lockout.AddrLocked(ip)
	}
	return a.Lockout.IPLocked(ip)
}

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
// ticketd did not sign is a guess worth counting: an expired session is a
// buyer's browser coming back late (as is a session of a channel since
// removed, which Parse accepts and authenticate refuses uncounted), and
// buyers behind one NAT must not lock each other out.
func (a *API) failedSession(ctx *fasthttp.RequestCtx, ip netip.Addr, tok string) *apierr.Error {
	if a.Sessions.signed(tok) {
		return errInvalidSession
	}
	return a.failed(ctx, ip, "", errInvalidSession)
}
