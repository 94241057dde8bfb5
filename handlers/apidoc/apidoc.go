// Package apidoc serves ticketd's contract: the OpenAPI 3.0 document of
// every route the API server serves (openapi.json, beside this file), at
// GET /openapi.json without credentials. The document is kept by hand;
// its tests fail when a route is served and not described, or described
// and not served, and when an error code it names has another status in
// inventory/apierr.
package apidoc

import (
	_ "embed"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
)

// Path is where the document is served.
const Path = "/openapi.json"

// Document is the OpenAPI document, as served.
//
//go:embed openapi.json
var Document []byte

// Register mounts GET /openapi.json on r.
func Register(r *router.Router) { r.GET(Path, serve) }

func serve(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	// A client may cache it for a while: it changes only with a release.
	ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	ctx.SetBody(Document)
}
