//go:build !race

package metrics

import (
	"testing"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
)

// Instrument wraps every request of a flash sale: once a route and code
// have been seen, counting and timing a request allocates nothing beyond
// what the router itself does.
func TestInstrumentDoesNotAllocate(t *testing.T) {
	r := router.New()
	r.SaveMatchedRoutePath = true
	r.POST("/v1/channel/events/{id}/checkout", func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(200) })
	bare := r.Handler
	wrapped := New().Instrument(bare)
	for _, uri := range []string{"/v1/channel/events/ev_1/checkout", "/nowhere"} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(uri)
		run := func(h fasthttp.RequestHandler) float64 {
			h(&ctx) // the first request of a route and code makes its series
			return testing.AllocsPerRun(200, func() {
				ctx.Response.Reset()
				h(&ctx)
				ctx.Request.ResetUserValues()
			})
		}
		if b, w := run(bare), run(wrapped); w != b {
			t.Errorf("%s: %v allocations per request instrumented, %v bare", uri, w, b)
		}
	}
}
