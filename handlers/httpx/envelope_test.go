package httpx

import (
	"bytes"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// Every JSON answer, success or failure, ends with a newline: a curl's
// output ends its line instead of running into the next prompt.
func TestAnswersEndWithANewline(t *testing.T) {
	for name, write := range map[string]func(*fasthttp.RequestCtx){
		"success": func(ctx *fasthttp.RequestCtx) { OK(ctx, map[string]int{"n": 1}) },
		"failure": func(ctx *fasthttp.RequestCtx) { Fail(ctx, apierr.Invalid("bad")) },
		"404":     NotFound,
	} {
		var ctx fasthttp.RequestCtx
		write(&ctx)
		b := ctx.Response.Body()
		if !bytes.HasSuffix(b, []byte("}\n")) || bytes.Count(b, []byte("\n")) != 1 {
			t.Errorf("%s: body %q, want one JSON object and a newline", name, b)
		}
	}
}

// A malformed body is refused with where it breaks: the byte, and its line
// and column, or that the body ends early.
func TestMalformedJSONSaysWhere(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"quantity":1,}`, "malformed JSON at byte 15 (line 1, column 15): invalid character '}' looking for beginning of object key string"},
		{"{\n  \"name\": \"Ada\",\n  \"quantity\": tru\n}", "malformed JSON at byte 37 (line 3, column 18): invalid character '\\n' in literal true"},
		{`{"name":"Ada"`, "malformed JSON at the end of the body (after byte 13): unexpected end of JSON input"},
		{`{"name" "Ada"}`, "malformed JSON at byte 9 (line 1, column 9): invalid character '\"' after object key"},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetBodyString(tc.body)
		var v fuzzBody
		e := Decode(&ctx, &v)
		if e == nil || e.Code != "INVALID_REQUEST" || !strings.Contains(e.Message, tc.want) {
			t.Errorf("Decode(%q) = %v, want INVALID_REQUEST saying %q", tc.body, e, tc.want)
		}
	}
}
