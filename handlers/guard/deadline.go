package guard

import (
	"context"
	"time"
)

// DefaultTimeout bounds a request's Redis work when its surface sets none.
const DefaultTimeout = 5 * time.Second

// RequestContext returns the context that bounds one request's Redis and
// Postgres work: d long, or DefaultTimeout when d is not positive.
// fasthttp's own context ends only at shutdown, so every surface takes
// one of these per request.
func RequestContext(d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = DefaultTimeout
	}
	return context.WithTimeout(context.Background(), d)
}
