package picker

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"path"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/storefront"
	"github.com/ticketd/ticketd/inventory/catalog"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/picker.js static/picker.css
var staticFS embed.FS

var pages = template.Must(template.ParseFS(templateFS, "templates/*.html"))

// staticFile is an embedded asset with its content type and version (a
// hash of its bytes, which the page puts in the asset's URL).
type staticFile struct {
	body        []byte
	contentType string
	version     string
}

var assets = func() map[string]staticFile {
	m := map[string]staticFile{}
	for name, ct := range map[string]string{
		"picker.js":  "text/javascript; charset=utf-8",
		"picker.css": "text/css; charset=utf-8",
	} {
		b, err := staticFS.ReadFile(path.Join("static", name))
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		m[name] = staticFile{body: b, contentType: ct, version: hex.EncodeToString(sum[:6])}
	}
	return m
}()

// asset serves picker.js and picker.css. The page asks for them with
// ?v=<their hash>: that answer can be cached for good, as a new build
// changes the URL; any other is revalidated.
func asset(ctx *fasthttp.RequestCtx) {
	name, _ := ctx.UserValue("file").(string)
	f, ok := assets[name]
	if !ok {
		notFound(ctx)
		return
	}
	hd := &ctx.Response.Header
	hd.Set("X-Content-Type-Options", "nosniff")
	if string(ctx.QueryArgs().Peek("v")) == f.version {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("ETag", `"`+f.version+`"`)
	if string(ctx.Request.Header.Peek("If-None-Match")) == `"`+f.version+`"` {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	ctx.SetContentType(f.contentType)
	ctx.SetBody(f.body)
}

// pageData is what the page template shows; Data is the JSON the script
// reads from the page (data-picker), never executed.
type pageData struct {
	Name, StartsAt, When string
	JS, CSS              string // asset versions
	Data                 string
	TestMode             bool // payments are simulated: the page says so
	// Framed: the browser loads the page into a frame (Sec-Fetch-Dest:
	// iframe), the host's page around it names the event and shows its
	// own test-mode notice, so the page's own header and TEST MODE line
	// are not drawn (picker.js marks the page framed too, for a browser
	// that does not send the header).
	Framed bool
}

// pageConfig is the page's data for its script.
type pageConfig struct {
	EventID  string `json:"eventId"`
	API      string `json:"api"`
	Token    string `json:"token"`
	Currency string `json:"currency"`
	// Domains are the tenant's site domains: the only hosts whose hello
	// the script answers.
	Domains []string `json:"domains"`
	// OnSaleAt is set while the event is not on sale yet.
	OnSaleAt string `json:"onSaleAt,omitempty"`
}

// page is GET /events/{slug}/{shortId}/seatmap?app=storefront. The event
// is found by its shortId (unique across tenants) and must carry the
// slug too; it must be switched on for the storefront, seated, and its
// tenant must have an enabled publishable key. Anything else is the one
// plain 404 page, whatever the reason.
func (p *Picker) page(ctx *fasthttp.RequestCtx) {
	if app := ctx.QueryArgs().Peek("app"); len(app) > 0 && string(app) != "storefront" {
		notFound(ctx)
		return
	}
	ix := p.idx.Of(p.Catalog(), buildIndex)
	slug, _ := ctx.UserValue("slug").(string)
	short, _ := ctx.UserValue("shortId").(string)
	ev := ix.byShortID[short]
	if ev == nil || ev.Slug != slug || storefront.Switched(ev) != nil || !ev.Seated() {
		notFound(ctx)
		return
	}
	if !ix.hasSite(ev.TenantID) {
		notFound(ctx)
		return
	}
	st := ix.tenants[ev.TenantID]
	now := time.Now()
	cfg := pageConfig{EventID: ev.ID, API: Prefix + "/seating/events/" + ev.ID,
		Token: Sign(p.Key, ev.ID, ev.TenantID, now.Add(TokenTTL)), Currency: "USD", Domains: st.domains}
	if !ev.SaleStarted(now) {
		cfg.OnSaleAt = ev.OnSaleAt
	}
	data, _ := json.Marshal(cfg)
	var b bytes.Buffer
	err := pages.ExecuteTemplate(&b, "seatmap.html", pageData{Name: ev.Name, StartsAt: ev.StartsAt, When: when(ev),
		JS: assets["picker.js"].version, CSS: assets["picker.css"].version, Data: string(data), TestMode: p.TestMode,
		Framed: string(ctx.Request.Header.Peek("Sec-Fetch-Dest")) == "iframe"})
	if err != nil {
		p.logger().Error("picker: render page", "event", ev.ID, "err", err)
		ctx.Error("seat map unavailable", fasthttp.StatusInternalServerError)
		return
	}
	hd := &ctx.Response.Header
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "+st.frameAncestors)
	commonHeaders(ctx)
	// The page carries a token: no cache keeps it.
	hd.Set("Cache-Control", "no-store")
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(b.Bytes())
}

// when is the event's start as the page shows it before its script
// rewrites it in the buyer's own time zone.
func when(ev *catalog.CompiledEvent) string {
	t, err := time.Parse(time.RFC3339, ev.StartsAt)
	if err != nil {
		return ev.StartsAt
	}
	return t.UTC().Format("Monday 2 January 2006, 15:04 UTC")
}

func commonHeaders(ctx *fasthttp.RequestCtx) {
	hd := &ctx.Response.Header
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
}

var notFoundPage = func() []byte {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "notfound.html", pageData{CSS: assets["picker.css"].version}); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

// notFound answers the one 404 page: it tells nothing about why.
func notFound(ctx *fasthttp.RequestCtx) {
	commonHeaders(ctx)
	ctx.Response.Header.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.SetStatusCode(fasthttp.StatusNotFound)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(notFoundPage)
}
