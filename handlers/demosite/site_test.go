package demosite

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func get(h fasthttp.RequestHandler, path string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetMethod("GET")
	h(&ctx)
	return &ctx
}

// The pages read where ticketd is, the key and the events from
// /config.json, which the server writes from Site.
func TestConfigJSON(t *testing.T) {
	h := Site{AppURL: "http://127.0.0.1:9999/", PublishableKey: "pk_demo", Events: []string{"ev_a", "ev_b"}}.Handler()
	ctx := get(h, "/config.json")
	if ctx.Response.StatusCode() != 200 || !strings.HasPrefix(string(ctx.Response.Header.ContentType()), "application/json") {
		t.Fatalf("config.json: %d %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
	}
	var c struct {
		APIBase, PublishableKey string
		Events                  []string
		PollLimitMs             int64
	}
	if err := json.Unmarshal(ctx.Response.Body(), &c); err != nil {
		t.Fatal(err)
	}
	if c.APIBase != "http://127.0.0.1:9999" || c.PublishableKey != "pk_demo" || strings.Join(c.Events, ",") != "ev_a,ev_b" || c.PollLimitMs != 25000 {
		t.Fatalf("config.json answered %s", ctx.Response.Body())
	}
}

// The success page's wait is the site's PollLimit.
func TestConfigPollLimit(t *testing.T) {
	ctx := get(Site{AppURL: "http://127.0.0.1:9999", PollLimit: 1500 * time.Millisecond}.Handler(), "/config.json")
	var c struct{ PollLimitMs int64 }
	if err := json.Unmarshal(ctx.Response.Body(), &c); err != nil || c.PollLimitMs != 1500 {
		t.Fatalf("config.json answered %s", ctx.Response.Body())
	}
}

// Every page is served with a CSP that lets scripts and styles come from
// the shop only, API calls and the picker frame from ticketd only, and
// lets no one frame the shop.
func TestPagesCarryTheirCSP(t *testing.T) {
	h := Site{AppURL: "https://tickets.example.com", PublishableKey: "pk", Events: []string{"e"}}.Handler()
	for _, p := range []string{"/", "/event.html", "/seated.html", "/success.html", "/cancel.html", "/help.html"} {
		ctx := get(h, p)
		if ctx.Response.StatusCode() != 200 || !strings.HasPrefix(string(ctx.Response.Header.ContentType()), "text/html") {
			t.Fatalf("%s: %d %s", p, ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
		}
		csp := string(ctx.Response.Header.Peek("Content-Security-Policy"))
		for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'self';",
			"connect-src 'self' https://tickets.example.com;", "frame-src https://tickets.example.com;", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
	}
	if ctx := get(h, "/js/common.js"); ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Header.ContentType()), "javascript") {
		t.Fatalf("common.js: %d %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
	}
	if ctx := get(h, "/css/site.css"); ctx.Response.StatusCode() != 200 || !strings.HasPrefix(string(ctx.Response.Header.ContentType()), "text/css") {
		t.Fatalf("site.css: %d %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
	}
}

// An unknown path is a 404 page of the shop; a path climbing out of the
// static folder finds nothing; only GET and HEAD are served.
func TestNotFoundAndMethods(t *testing.T) {
	h := Site{AppURL: "http://localhost:8080"}.Handler()
	for _, p := range []string{"/nope.html", "/../site.go", "/static/index.html", "/js/"} {
		ctx := get(h, p)
		if ctx.Response.StatusCode() != 404 || !strings.Contains(string(ctx.Response.Body()), "We could not find that page") {
			t.Errorf("%s: %d, want the 404 page", p, ctx.Response.StatusCode())
		}
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.SetMethod("POST")
	h(&ctx)
	if ctx.Response.StatusCode() != 405 {
		t.Fatalf("POST /: %d, want 405", ctx.Response.StatusCode())
	}
}

// The pages hold no inline script, inline style or external asset: the
// CSP would block them, and the shop must work offline.
func TestNoInlineCodeOrExternalAssets(t *testing.T) {
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<script(?:(?:\s(?:defer|type="[^"]*"))*)>|<style|\sstyle=|\son[a-z]+=|javascript:`)
	external := regexp.MustCompile(`(?i)(?:src|href)="(?:https?:)?//|url\((?:["']?)(?:https?:)?//|@import`)
	err := fs.WalkDir(files, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := files.ReadFile(path)
		if strings.HasSuffix(path, ".html") && inline.Match(b) {
			t.Errorf("%s has inline script or style: %q", path, inline.Find(b))
		}
		if m := external.Find(b); m != nil && !strings.HasSuffix(path, ".svg") {
			t.Errorf("%s loads an external asset: %q", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The seated page says each change of the buyer's seats once: it has one
// polite live region (#status), not one per part of the summary (the
// waiting room's, on an event with one, is room.js's own).
func TestSeatedPageHasOneLiveRegion(t *testing.T) {
	b, err := fs.ReadFile(files, "static/seated.html")
	if err != nil {
		t.Fatal(err)
	}
	live := regexp.MustCompile(`<[^>]*(aria-live|role="status")[^>]*>`).FindAllString(string(b), -1)
	if len(live) != 1 || !strings.Contains(live[0], `id="status"`) {
		t.Fatalf("seated.html's live regions: %q, want #status only", live)
	}
}
