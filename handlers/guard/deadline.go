package guard

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// DefaultTimeout bounds a request's Redis work when its surface sets none.
const DefaultTimeout = 5 * time.Second

// RequestContext returns the context that bounds one request's Redis and
// Postgres work: d long, or DefaultTimeout when d is not positive.
// fasthttp's own context ends only at shutdown (and is recycled after the
// answer), so every surface takes one of these per request. It carries
// the request's round-trip counter when a test's middleware set one
// (roundtrips.RequestKey).
func RequestContext(rc *fasthttp.RequestCtx, d time.Duration) (context.Context, context.CancelFunc) {
	d = TimeoutOr(d)
	base := context.Background()
	if rc != nil {
		if c, ok := rc.UserValue(roundtrips.RequestKey).(*roundtrips.Counter); ok {
			base = roundtrips.With(base, c)
		}
	}
	return context.WithTimeout(base, d)
}

// TimeoutOr is d, or DefaultTimeout when d is not positive.
func TimeoutOr(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return d
}
