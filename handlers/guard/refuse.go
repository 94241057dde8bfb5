package guard

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// Refuse answers a request refused for wait, by a rate limit or a lockout
// after failed authentications: it sets the Retry-After header and returns
// the 429 RATE_LIMITED to write, with the same whole seconds (at least one,
// rounded up) as retryAfter in the body. Every 429 is built here, so header
// and body always agree.
func Refuse(ctx *fasthttp.RequestCtx, wait time.Duration) *apierr.Error {
	secs := int64((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	ctx.Response.Header.Set("Retry-After", strconv.FormatInt(secs, 10))
	return apierr.Of("RATE_LIMITED", "rate limit exceeded; retry after %d s", secs).With("retryAfter", secs)
}
