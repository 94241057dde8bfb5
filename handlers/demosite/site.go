// Package demosite is the demo host site "Demo Live": a small ticket shop,
// plain HTML, CSS and JavaScript, that sells the demo catalog through
// ticketd's storefront API from the buyer's browser, as a host's own site
// would (interface.md, Recommended flow). ticketd -demo serves it on an
// origin of its own, so CORS, the Origin check and the seat picker's
// messages work as they do on a real host's site.
package demosite

import (
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

//go:embed static
var files embed.FS

// Site is the demo shop's configuration.
type Site struct {
	// AppURL is ticketd's public base URL (TICKETD_APP_URL): the storefront
	// API and the seat picker live there.
	AppURL string
	// PublishableKey is sent in x-service-key (pk_demo).
	PublishableKey string
	// Events are the event ids (or shortIds or slugs) the shop lists, in
	// order.
	Events []string
	// PollLimit is how long the success page waits for a payment's
	// confirmation before it says the ticket will arrive by e-mail; 0 is
	// 25 s.
	PollLimit time.Duration
}

// config is /config.json: what the static pages read before calling the
// API, so that the files themselves stay static.
type config struct {
	APIBase        string   `json:"apiBase"`
	PublishableKey string   `json:"publishableKey"`
	Events         []string `json:"events"`
	PollLimitMs    int64    `json:"pollLimitMs"`
}

// Handler serves the shop: its pages and assets, and /config.json.
func (s Site) Handler() fasthttp.RequestHandler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	base := strings.TrimRight(s.AppURL, "/")
	events := s.Events
	if events == nil {
		events = []string{}
	}
	limit := s.PollLimit
	if limit <= 0 {
		limit = 25 * time.Second
	}
	cfg, _ := json.Marshal(config{APIBase: base, PublishableKey: s.PublishableKey, Events: events, PollLimitMs: limit.Milliseconds()})
	csp := policy(base)
	return func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Response.Header
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
		if !ctx.IsGet() && !ctx.IsHead() {
			h.Set("Allow", "GET, HEAD")
			ctx.Error("method not allowed", fasthttp.StatusMethodNotAllowed)
			return
		}
		p := string(ctx.Path())
		switch {
		case p == "/config.json":
			h.Set("Cache-Control", "no-store")
			ctx.SetContentType("application/json")
			ctx.SetBody(cfg)
			return
		case p == "/" || p == "/index.html":
			p = "/index.html"
		case strings.HasSuffix(p, "/"):
			p += "index.html"
		}
		name := strings.TrimPrefix(path.Clean(p), "/")
		b, err := fs.ReadFile(static, name)
		if err != nil {
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			b, _ = fs.ReadFile(static, "404.html")
			name = "404.html"
		}
		ext := path.Ext(name)
		ct := mime.TypeByExtension(ext)
		if ct == "" {
			ct = "application/octet-stream"
		}
		ctx.SetContentType(ct)
		if ext == ".html" {
			h.Set("Content-Security-Policy", csp)
		}
		// A demo changes with the binary: revalidate rather than cache.
		h.Set("Cache-Control", "no-cache")
		ctx.SetBody(b)
	}
}

// policy is the pages' Content-Security-Policy: scripts and styles from the
// shop itself only (no inline ones), API calls to ticketd, and ticketd's
// seat picker as the only frame.
func policy(appURL string) string {
	api := origin(appURL)
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' " + api + "; frame-src " + api + "; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// origin is scheme://host[:port] of u, or 'none' when u is not an
// absolute http(s) URL.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "'none'"
	}
	return p.Scheme + "://" + p.Host
}
