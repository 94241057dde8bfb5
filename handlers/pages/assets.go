package pages

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/valyala/fasthttp"
)

// assetPrefix is where the pages' own style sheets are served: under a
// path of this package's so no other surface's routes meet them.
const assetPrefix = "/assets/pages/"

// asset is an embedded file a page links to. Its href carries a hash of
// its content, so it can be cached for a year (a ticket page opened at
// the door without signal still has its style) and a new release is
// still fetched at once.
type asset struct {
	path, href string
	body       []byte
}

func newAsset(name, body string) asset {
	sum := sha256.Sum256([]byte(body))
	path := assetPrefix + name
	return asset{path: path, href: path + "?v=" + hex.EncodeToString(sum[:6]), body: []byte(body)}
}

func (a asset) serve(ctx *fasthttp.RequestCtx) {
	hd := &ctx.Response.Header
	hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	hd.Set("X-Content-Type-Options", "nosniff")
	ctx.SetContentType("text/css; charset=utf-8")
	ctx.SetBody(a.body)
}
