package apidoc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/apidoc"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// notDescribed are the served routes the document leaves out, each with
// its reason. Nothing else may be missing.
var notDescribed = map[string]string{
	// A catch-all ({path:*} matches slashes too): OpenAPI's path
	// templates have no such parameter. The document's info.description
	// names it.
	"OPTIONS /v1/storefront/{path:*}": "the storefront's CORS preflight, a catch-all",
}

func load(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(apidoc.Document)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	return doc
}

// TestEveryComponentIsUsed: every response, schema and parameter under
// components is referenced: one nobody uses describes nothing ticketd
// answers, and a reader looking it up is misled.
func TestEveryComponentIsUsed(t *testing.T) {
	var raw struct {
		Components map[string]map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(apidoc.Document, &raw); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"responses", "schemas", "parameters"} {
		for _, name := range slices.Sorted(maps.Keys(raw.Components[kind])) {
			if !bytes.Contains(apidoc.Document, []byte(`"#/components/`+kind+`/`+name+`"`)) {
				t.Errorf("components.%s.%s is referenced nowhere: use it or remove it", kind, name)
			}
		}
	}
}

// TestDocumentValidates: the document is valid OpenAPI 3.0 (kin-openapi's
// full validation, examples against their schemas included).
func TestDocumentValidates(t *testing.T) {
	doc := load(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.0.") {
		t.Errorf("openapi is %q, want 3.0.x", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not valid: %v", err)
	}
}

// documented is every "METHOD /path" of the document.
func documented(doc *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out[method+" "+path] = true
		}
	}
	return out
}

// template is a fasthttp/router path template in OpenAPI's syntax:
// {name} stays, a constrained {name:regex} loses its constraint; ok is
// false for a catch-all ({name:*}) or an optional ({name?}) parameter,
// which OpenAPI cannot express.
func template(p string) (string, bool) {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			b.WriteString(p)
			return b.String(), true
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return "", false
		}
		param := p[i+1 : i+j]
		name, constraint, _ := strings.Cut(param, ":")
		if constraint == "*" || strings.HasSuffix(name, "?") {
			return "", false
		}
		b.WriteString(p[:i])
		b.WriteString("{" + name + "}")
		p = p[i+j+1:]
	}
}

// TestEveryRouteIsDocumented: every route the whole server serves (the
// test stack mounts every surface, the conditional ones included) is in
// the document with its method and path template, and every operation of
// the document is served.
func TestEveryRouteIsDocumented(t *testing.T) {
	doc := load(t)
	s := servertest.Start(t, servertest.Options{})
	inDoc := documented(doc)
	served := map[string]bool{}
	for method, paths := range s.Routes {
		for _, p := range paths {
			route := method + " " + p
			if reason, ok := notDescribed[route]; ok {
				t.Logf("not described: %s (%s)", route, reason)
				continue
			}
			tmpl, ok := template(p)
			if !ok {
				t.Errorf("%s is served with a path OpenAPI cannot express: describe what it does in notDescribed, with the reason", route)
				continue
			}
			served[method+" "+tmpl] = true
		}
	}
	for r := range notDescribed {
		method, path, _ := strings.Cut(r, " ")
		if !slices.Contains(s.Routes[method], path) {
			t.Errorf("notDescribed lists %s, which is not served: drop it", r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(served)) {
		if !inDoc[r] {
			t.Errorf("%s is served but not in handlers/apidoc/openapi.json: describe it", r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(inDoc)) {
		if !served[r] {
			t.Errorf("%s is in handlers/apidoc/openapi.json but not served", r)
		}
	}
	if len(served) < 60 {
		t.Errorf("only %d routes served: the test stack lost surfaces", len(served))
	}
}

// TestServedWithoutCredentials: GET /openapi.json answers the document,
// 200 application/json, to a request with no credentials.
func TestServedWithoutCredentials(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(s.URL + apidoc.Path)
	if err := s.Client.Do(req, resp); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != 200 {
		t.Fatalf("GET %s: %d %.300s", apidoc.Path, resp.StatusCode(), resp.Body())
	}
	if ct := string(resp.Header.ContentType()); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !bytes.Equal(resp.Body(), apidoc.Document) {
		t.Errorf("the body (%d bytes) is not the document (%d bytes)", len(resp.Body()), len(apidoc.Document))
	}
	if _, err := openapi3.NewLoader().LoadFromData(resp.Body()); err != nil {
		t.Errorf("the served document does not load: %v", err)
	}
}

// clientAmountMismatch is AMOUNT_MISMATCH's status on the storefront's
// payment calls (apierr.ClientAmountMismatch), the one code with two.
var clientAmountMismatch = apierr.ClientAmountMismatch("x").Status

// TestErrorCodesMatchTheTable: every error code the document names is in
// inventory/apierr's table, under the status the table gives it; each
// error response lists its codes in x-error-codes and as the code's enum.
func TestErrorCodesMatchTheTable(t *testing.T) {
	doc := load(t)
	seen := map[string]bool{}
	check := func(where, status string, r *openapi3.Response) {
		st, err := strconv.Atoi(status)
		if err != nil || st < 400 || r.Content.Get("application/json") == nil {
			return // a success, or a page's HTML error
		}
		raw, ok := r.Extensions["x-error-codes"].([]any)
		if !ok || len(raw) == 0 {
			t.Errorf("%s %s: an error response without x-error-codes", where, status)
			return
		}
		var codes []string
		for _, c := range raw {
			code := fmt.Sprint(c)
			codes = append(codes, code)
			seen[code] = true
			switch {
			case !apierr.Known(code):
				t.Errorf("%s %s: code %s is not in inventory/apierr/codes.go", where, status, code)
			case apierr.Status(code) != st && !(code == "AMOUNT_MISMATCH" && st == clientAmountMismatch):
				t.Errorf("%s: code %s listed under %d, its status is %d", where, code, st, apierr.Status(code))
			}
		}
		if enum := codeEnum(r); !slices.Equal(enum, codes) {
			t.Errorf("%s %s: the code enum %v differs from x-error-codes %v", where, status, enum, codes)
		}
	}
	for name, ref := range doc.Components.Responses {
		// A component's status is the one it is used under: the names end in it.
		check("components.responses."+name, name[len(name)-3:], ref.Value)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, ref := range op.Responses.Map() {
				if ref.Ref != "" {
					name := strings.TrimPrefix(ref.Ref, "#/components/responses/")
					if !strings.HasSuffix(name, status) {
						t.Errorf("%s %s: response %s uses %s, whose status is another", method, path, status, name)
					}
					continue
				}
				check(method+" "+path, status, ref.Value)
			}
		}
	}
	if len(seen) < 50 {
		t.Errorf("the document names only %d error codes", len(seen))
	}
}

// codeEnum is the enum of the error envelope's code in r's JSON schema
// (inline, or in an allOf branch).
func codeEnum(r *openapi3.Response) []string {
	sch := r.Content.Get("application/json").Schema.Value
	for _, s := range append([]*openapi3.SchemaRef{{Value: sch}}, sch.AllOf...) {
		if p := s.Value.Properties["code"]; p != nil && len(p.Value.Enum) > 0 {
			var out []string
			for _, v := range p.Value.Enum {
				out = append(out, fmt.Sprint(v))
			}
			return out
		}
	}
	return nil
}
