// Package ceiling measures the machine's ceilings that ticketd's figures
// are read against: a bare fasthttp server answering canned responses
// (what HTTP alone costs, load generator included) and the claim script
// alone through redis-benchmark (what Redis alone does).
package ceiling

import (
	"bytes"
	"net"

	"github.com/valyala/fasthttp"
)

// The canned answers: a reserve, a confirm, a catalog apply. The order is
// fixed; the load generator signs its confirm all the same, so it does the
// same work as against ticketd.
var (
	cannedReserve = []byte(`{"success":true,"data":{"orderId":"o17cannedcannedcannedcannedcan","amount":26.50,"currency":"USD"}}`)
	cannedConfirm = []byte(`{"success":true,"data":{"orderId":"o17cannedcannedcannedcannedcan","status":"paid",` +
		`"tickets":[{"ticketId":"o17cannedcannedcannedcannedcan-1","label":"General"}]}}`)
	cannedApplied  = []byte(`{"success":true,"data":{"applied":{"tenants":1,"channels":1,"events":1}}}`)
	cannedHealthy  = []byte(`{"success":true,"data":{"status":"ok"}}`)
	cannedNotFound = []byte(`{"success":false,"code":"NOT_FOUND","message":"no such endpoint"}`)

	checkoutSuffix = []byte("/checkout")
	confirmPath    = []byte("/v1/channel/orders/confirm")
)

// Handler answers without reading the request beyond its path: the
// cheapest answer a fasthttp server can give.
func Handler(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	p := ctx.Path()
	switch {
	case bytes.HasSuffix(p, checkoutSuffix):
		ctx.SetBody(cannedReserve)
	case bytes.Equal(p, confirmPath):
		ctx.SetBody(cannedConfirm)
	case ctx.IsPut():
		ctx.SetBody(cannedApplied)
	case ctx.IsGet():
		ctx.SetBody(cannedHealthy)
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetBody(cannedNotFound)
	}
}

// Serve answers canned responses on ln until it fails.
func Serve(ln net.Listener) error {
	srv := &fasthttp.Server{Handler: Handler, Name: "canned", ReadBufferSize: 8 << 10}
	return srv.Serve(ln)
}
