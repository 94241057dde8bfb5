package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// catalogPath is the one route that takes the admin body limit
// (handlers/admin registers it).
const catalogPath = "/v1/admin/catalog"

// admission decides, from a request's header alone and before fasthttp
// reads the body, how large a body it may send, how long the body may
// take, and whether the body budget has room for it; an oversized body is
// refused unread (413), and so is one the budget has no room for (503).
//
// Only the operator's catalog, sent with the valid admin token, may exceed
// the 64 KB client limit: a larger body is never buffered for a caller who
// has not authenticated (a path prefix alone let anyone make ticketd hold
// 8 MB per connection). It is not counted in the budget either.
type admission struct {
	// bearerSum is the SHA-256 of "Bearer <token>"; comparing digests in
	// constant time tells nothing of the token, not even its length.
	// hasToken is false without an admin token: no request is the
	// operator's.
	bearerSum   [sha256.Size]byte
	hasToken    bool
	bodies      *Bodies // nil: no budget
	bodyTimeout time.Duration
	log         *logger // fasthttp's: told which ErrBodyTooLarge was the budget's
}

func newAdmission(st settings, log *logger) *admission {
	a := &admission{bodies: st.bodies, bodyTimeout: st.bodyTimeout, log: log}
	if st.adminToken != "" {
		a.hasToken = true
		a.bearerSum = sha256.Sum256([]byte("Bearer " + st.adminToken))
	}
	return a
}

var (
	// A request without a body keeps the header deadline.
	noBody = fasthttp.RequestConfig{MaxRequestBodySize: httpx.MaxBody}
	// Over the budget: any body is larger than 1 byte, so fasthttp
	// refuses it with ErrBodyTooLarge before reading it, and the error
	// handler answers 503 (a 1-byte body reaches the handler wrapper,
	// which does).
	overBudget = fasthttp.RequestConfig{MaxRequestBodySize: 1}
)

// config is the server's HeaderReceived.
func (a *admission) config(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if a.bodies != nil {
		// A hold still on this ctx is its previous request's, one that
		// neither handler saw (the connection broke while "100 Continue"
		// was written): it ends here, so that a refusal never answers a
		// later request, the catalog's included.
		a.bodies.give(h)
	}
	if a.isCatalog(h) {
		return fasthttp.RequestConfig{MaxRequestBodySize: admin.MaxCatalogBody, ReadTimeout: CatalogBodyTimeout}
	}
	n := int64(h.ContentLength())
	switch {
	case n == 0 || n == -2: // no body (-2: neither length nor chunked)
		return noBody
	case n > httpx.MaxBody: // 413, unread
		return noBody
	case n == -1: // chunked: it may grow to the limit
		n = httpx.MaxBody
	}
	if n > SmallBody && a.bodies != nil && !a.bodies.take(h, n, a.bodyTimeout+holdGrace) {
		return overBudget
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: httpx.MaxBody, ReadTimeout: a.bodyTimeout}
}

func (a *admission) isCatalog(h *fasthttp.RequestHeader) bool {
	if !a.hasToken || !h.IsPut() {
		return false
	}
	path := h.RequestURI()
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if string(path) != catalogPath {
		return false
	}
	sum := sha256.Sum256(h.Peek(fasthttp.HeaderAuthorization))
	return subtle.ConstantTimeCompare(sum[:], a.bearerSum[:]) == 1
}

// handler runs next and then gives the request's hold back. Whether the
// request holds anything is looked up, never read off its header: fasthttp
// rewrites an empty chunked body's header to Content-Length: 0 once read.
func (a *admission) handler(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	if a.bodies == nil {
		return next
	}
	return func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Request.Header
		held, refused := a.bodies.state(h)
		if !held {
			next(ctx)
			return
		}
		defer a.bodies.give(h)
		if refused { // a body of at most 1 byte got past the refusal's limit
			overBudgetAnswer(ctx)
			return
		}
		next(ctx)
	}
}

// expect is the server's ExpectHandler: a body the budget refused is
// answered 503 before "100 Continue" invites the client to send it.
// fasthttp writes the response as it stands when the status is not 100
// (its "must not be modified" is for the request that goes on to the
// handler), so the refusal carries the envelope and Retry-After.
func (a *admission) expect(ctx *fasthttp.RequestCtx) int {
	if a.bodies == nil {
		return fasthttp.StatusContinue
	}
	h := &ctx.Request.Header
	if _, refused := a.bodies.state(h); !refused {
		return fasthttp.StatusContinue
	}
	a.bodies.give(h)
	overBudgetAnswer(ctx)
	return fasthttp.StatusServiceUnavailable
}

// errorHandler answers what fasthttp refused before any handler; a body
// refused for the budget (fasthttp's ErrBodyTooLarge against the refusal's
// 1-byte limit) is 503, anything else httpx.ServerErrorHandler's, hold or
// not. fasthttp resets the request after a failed body read, so the hold
// is looked up whatever the header says now.
func (a *admission) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	if a.bodies != nil && a.bodies.give(&ctx.Request.Header) && errors.Is(err, fasthttp.ErrBodyTooLarge) {
		a.log.budgetRefusal(ctx.RemoteAddr())
		overBudgetAnswer(ctx)
		return
	}
	httpx.ServerErrorHandler(ctx, err)
}

// overBudgetAnswer is the answer to a body the budget had no room for:
// retry in a second, on a new connection (the unread body is still on
// this one).
func overBudgetAnswer(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Retry-After", "1")
	ctx.SetConnectionClose()
	httpx.Fail(ctx, apierr.Unavailable("ticketd is receiving too many large request bodies at once; retry in a second"))
}
