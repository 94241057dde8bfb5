package channel

import (
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// ipLocked is how long the client at ip is locked out; ch is the channel
// of the key it presents, nil for none, and allowed whether ip is on ch's
// allowlist. An IPv6 lock covers a /64, which a hosting provider may share
// with strangers: a caller on ch's allowlist, the channel's own server, is
// held only by a lock its own address earned, unless the allowlist claims
// the whole /64 (then every address there is the channel's, by its own
// word, and the /64's lock holds them all, so guesses from the range stay
// bounded however many addresses they use).
func (a *API) ipLocked(ip netip.Addr, ch *catalog.CompiledChannel, allowed bool) time.Duration {
	if allowed && !ownsSlash64(ch, ip) {
		return a.Lockout.AddrLocked(ip)
	}
	return a.Lockout.IPLocked(ip)
}

// ownsSlash64 reports whether ch's allowlist holds the whole /64 of the
// IPv6 address ip.
func ownsSlash64(ch *catalog.CompiledChannel, ip netip.Addr) bool {
	if !ip.Is6() {
		return false
	}
	for _, p := range ch.Allow {
		if p.Bits() <= 64 && p.Contains(ip) {
			return true
		}
	}
	return false
}

// failed counts a failed authentication from ip (and for the channel key
// keyID, "" for none) and returns e, or the 429 when this failure locked
// the caller out.
func (a *API) failed(ctx *fasthttp.RequestCtx, ip netip.Addr, keyID string, e *apierr.Error) *apierr.Error {
	if wait := a.Lockout.Failed(ip, keyID); wait > 0 {
		return guard.Refuse(ctx, wait)
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
