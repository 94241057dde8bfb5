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
			v := newValidatorOf(c)
			serve(v, tc.method, tc.path, tc.ctype, tc.reqBody, tc.status, tc.body)
			got := findings(v)
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

// TestValidatorCountsAMismatchOnce: answers wrong the same way, whatever
// their bodies' values, are one finding counted each time (a test that
// sends a hundred such requests reports one line, not a hundred), and a
// different reason is a finding of its own.
func TestValidatorCountsAMismatchOnce(t *testing.T) {
	c := loadContract()
	if c.err != nil {
		t.Fatal(c.err)
	}
	v := newValidatorOf(c)
	for _, body := range []string{
		`{"success":true,"data":{"status":"ok","uptime":3}}`,
		`{"success":true,"data":{"status":"ok","uptime":4}}`,
		`{"success":true,"data":{"status":"ok","uptime":5}}`,
	} {
		serve(v, "GET", "/healthz", "", "", 200, body)
	}
	serve(v, "GET", "/healthz", "", "", 200, `{"success":true,"data":{"status":1}}`)
	if len(v.order) != 2 {
		t.Fatalf("%d findings, want 2 (one counted 3 times, one once):\n%s", len(v.order), findings(v))
	}
	if got := v.order[0]; got.n != 3 || !strings.Contains(got.String(), "uptime") || !strings.Contains(got.String(), `"uptime":3`) {
		t.Errorf("first finding %q seen %d times, want 3 naming uptime with the first body", got, got.n)
	}
	if got := v.order[1]; got.n != 1 || !strings.Contains(got.String(), "/data/status") {
		t.Errorf("second finding %q seen %d times, want once naming /data/status", got, got.n)
	}
}

// serve has v's wrapper answer one request with status and body.
func serve(v *validator, method, path, ctype, reqBody string, status int, body string) {
	h := v.wrap(func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(status)
		switch {
		case strings.HasPrefix(body, "<"):
			ctx.SetContentType("text/html; charset=utf-8")
		case strings.HasPrefix(body, "//"):
			ctx.SetContentType("text/javascript; charset=utf-8")
		default:
			ctx.SetContentType("application/json")
		}
		ctx.SetBodyString(body)
	})
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetHost("127.0.0.1:1")
	ctx.Request.Header.Set("x-service-key", "k")
	ctx.Request.Header.Set("x-service-secret", "s")
	if reqBody != "" {
		ctx.Request.Header.SetContentType(ctype)
		ctx.Request.SetBodyString(reqBody)
	}
	h(ctx)
}

func findings(v *validator) string {
	var b strings.Builder
	for _, m := range v.order {
		b.WriteString(m.String() + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestCallLine: a call written to TICKETD_API_CALLS reads back as itself
// (handlers/apidoc's TestEveryOperationIsCalled reads them with
// ParseCall), and a line that is not one is refused rather than misread.
func TestCallLine(t *testing.T) {
	c := Call{Method: "POST", Path: "/v1/channel/events/{id}/quote", Status: 409}
	line := c.String()
	if line != "POST /v1/channel/events/{id}/quote 409" {
		t.Errorf("line %q", line)
	}
	if got, ok := ParseCall(line); !ok || got != c {
		t.Errorf("ParseCall(%q) = %+v, %v; want %+v", line, got, ok, c)
	}
	for _, bad := range []string{"", "GET", "GET /healthz", "GET /healthz ok", "GET healthz 200", "GET /healthz 200 extra", "GET /healthz 2000"} {
		if got, ok := ParseCall(bad); ok {
			t.Errorf("ParseCall(%q) = %+v, want refused", bad, got)
		}
	}
}
