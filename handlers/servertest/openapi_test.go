package servertest

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestValidatorFindsMismatches: the validator every test server runs
// (openapi.go) reports an undocumented status, field and error code, and
// a refused malformed request is no finding; no server needed.
func TestValidatorFindsMismatches(t *testing.T) {
	c := loadContract()
	if c.err != nil {
		t.Fatal(c.err)
	}
	cases := []struct {
		name, method, path, ctype, reqBody string
		status                             int
		body                               string
		want                               string // "" : no finding
	}{
		{"documented", "GET", "/healthz", "", "", 200, `{"success":true,"data":{"status":"ok"}}`, ""},
		{"undocumented status", "GET", "/healthz", "", "", 418, `{}`, "status is not supported"},
		{"undocumented field", "GET", "/healthz", "", "", 200, `{"success":true,"data":{"status":"ok","uptime":3}}`, "uptime"},
		{"wrong type", "GET", "/healthz", "", "", 200, `{"success":true,"data":{"status":1}}`, "/data/status"},
		{"undocumented code", "GET", "/v1/channel/events/ev_1", "", "", 404,
			`{"success":false,"code":"NO_SUCH_THING","message":"m"}`, "NO_SUCH_THING"},
		{"documented code", "GET", "/v1/channel/events/ev_1", "", "", 404,
			`{"success":false,"code":"EVENT_NOT_FOUND","message":"m"}`, ""},
		{"malformed request, refused", "POST", "/v1/channel/events/ev_1/quote", "application/json", `{"items":`, 400,
			`{"success":false,"code":"INVALID_REQUEST","message":"m"}`, ""},
		{"malformed request, accepted", "POST", "/v1/channel/events/ev_1/quote", "application/json", `{"items":`, 200,
			`{"success":true,"data":{}}`, "the request, accepted"},
		{"not in the document", "OPTIONS", "/v1/storefront/anything/at/all", "", "", 204, ``, ""},
		{"a page", "GET", "/pay/card/cs_1", "", "", 410, `<!doctype html>`, ""},
		{"an asset", "GET", "/assets/picker/picker.js", "", "", 200, `// js`, ""},
		{"an undocumented content type", "GET", "/healthz", "", "", 200, `<!doctype html>`, "Content-Type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &validator{c: c, failed: map[string]int{}, called: map[string]bool{}}
			h := v.wrap(func(ctx *fasthttp.RequestCtx) {
				ctx.SetStatusCode(tc.status)
				switch {
				case strings.HasPrefix(tc.body, "<"):
					ctx.SetContentType("text/html; charset=utf-8")
				case strings.HasPrefix(tc.body, "//"):
					ctx.SetContentType("text/javascript; charset=utf-8")
				default:
					ctx.SetContentType("application/json")
				}
				ctx.SetBodyString(tc.body)
			})
			ctx := &fasthttp.RequestCtx{}
			ctx.Request.Header.SetMethod(tc.method)
			ctx.Request.SetRequestURI(tc.path)
			ctx.Request.Header.SetHost("127.0.0.1:1")
			ctx.Request.Header.Set("x-service-key", "k")
			ctx.Request.Header.Set("x-service-secret", "s")
			if tc.reqBody != "" {
				ctx.Request.Header.SetContentType(tc.ctype)
				ctx.Request.SetBodyString(tc.reqBody)
			}
			h(ctx)
			got := strings.Join(v.order, "\n")
			t.Log(got)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("a finding where none is due: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("findings %q, want one naming %q", got, tc.want)
			}
		})
	}
}
