package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/ticketd/ticketd/handlers/apidoc"
)

// Every request a test server answers, whoever sent it (Do, Send, a
// browser, ticketctl), is checked against handlers/apidoc/openapi.json
// with kin-openapi's openapi3filter:
//
//   - the answer always: its status must be one the operation documents,
//     its Content-Type one that status documents, its body that schema
//     (error codes are each response's code enum). Object schemas that do
//     not say otherwise take no undocumented field here (see strict).
//   - the request only when the server accepted it (status < 400): tests
//     send malformed requests on purpose, and refusing them is right; a
//     request the document forbids that is accepted is a mismatch.
//
// A request the document has no operation for (the CORS preflight
// catch-all, an unknown path, a method a path lacks) is not checked:
// handlers/apidoc's TestEveryRouteIsDocumented covers what is served.
//
// Each mismatch fails the test that started the server, at its end. The
// operations called, with each status answered, are also written to
// TICKETD_API_CALLS (a directory) when it is set: handlers/apidoc's TestEveryOperationIsCalled, which
// .ci/test.sh runs after every package's tests, reads them.

// CallsEnv names the directory the operations called are written to.
const CallsEnv = "TICKETD_API_CALLS"

// Call is one line of a calls file under TICKETD_API_CALLS: an
// operation (its method and the document's path template) answered with
// a status, written "METHOD /template STATUS".
type Call struct {
	Method, Path string
	Status       int
}

// String is c's line.
func (c Call) String() string {
	return fmt.Sprintf("%s %s %d", c.Method, c.Path, c.Status)
}

// ParseCall reads a line String wrote; ok is false for any other line.
func ParseCall(line string) (c Call, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || !strings.HasPrefix(f[1], "/") {
		return Call{}, false
	}
	st, err := strconv.Atoi(f[2])
	if err != nil || st < 100 || st > 599 {
		return Call{}, false
	}
	return Call{Method: f[0], Path: f[1], Status: st}, true
}

// contract is the document, loaded once a process: resp is a strict copy
// for answers, reqDoc the document as written for requests.
//
// Two parses, not one: strict closes schemas in place, and kin-openapi
// resolves every $ref to its component's one *openapi3.Schema, so a
// schema a request body and an answer both use would be closed for
// requests too, and a test's accepted request with a field the document
// leaves open would be reported. One lookup serves both: the answer's
// route is found in resp, and the request's is the same path and method
// of reqDoc (reqRoute).
type contract struct {
	resp          routers.Router
	reqDoc        *openapi3.T
	respOpt       *openapi3filter.Options
	reqOpt        *openapi3filter.Options
	err           error
	callsFile     string
	callsMu       sync.Mutex
	callsReported map[string]bool
}

// loadContract returns the process's contract, loading it on the first
// call.
var loadContract = sync.OnceValue(func() *contract {
	c := &contract{callsReported: map[string]bool{}}
	// The pages' and assets' bodies are checked for their
	// Content-Type only: read as strings.
	for _, ct := range []string{"text/html", "text/css", "text/javascript", "image/png"} {
		if openapi3filter.RegisteredBodyDecoder(ct) == nil {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
	}
	var respDoc *openapi3.T
	if c.reqDoc, c.err = load(); c.err != nil {
		return c
	}
	if respDoc, c.err = load(); c.err != nil {
		return c
	}
	strict(respDoc)
	if c.resp, c.err = gorillamux.NewRouter(respDoc); c.err != nil {
		return c
	}
	// Short messages: where in the body, and why (the default prints
	// the whole schema and value).
	var schemaReason func(err *openapi3.SchemaError) string
	schemaReason = func(err *openapi3.SchemaError) string {
		msg := "/" + strings.Join(err.JSONPointer(), "/") + ": " + err.Reason
		// An allOf's reason is only that a branch failed: say which way.
		var inner *openapi3.SchemaError
		if errors.As(err.Origin, &inner) {
			msg += " (" + schemaReason(inner) + ")"
		} else if err.Origin != nil {
			msg += " (" + err.Origin.Error() + ")"
		}
		return msg
	}
	c.reqOpt = &openapi3filter.Options{
		// ticketd checks the credentials; the document only names them.
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true,
	}
	c.reqOpt.WithCustomSchemaErrorFunc(schemaReason)
	c.respOpt = &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	c.respOpt.WithCustomSchemaErrorFunc(schemaReason)
	if dir := os.Getenv(CallsEnv); dir != "" {
		if c.err = os.MkdirAll(dir, 0o755); c.err != nil {
			return c
		}
		c.callsFile = filepath.Join(dir, fmt.Sprintf("calls-%d.txt", os.Getpid()))
	}
	return c
})

// reqRoute is route (found in the strict copy) in the document as
// written, for checking the request.
func (c *contract) reqRoute(route *routers.Route) *routers.Route {
	r := *route
	r.Spec = c.reqDoc
	r.PathItem = c.reqDoc.Paths.Value(route.Path)
	r.Operation = r.PathItem.GetOperation(route.Method)
	return &r
}

func load() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.Document)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	// Any host: the test server listens on a loopback port.
	doc.Servers = nil
	return doc, nil
}

// strict makes every object schema with properties that says nothing of
// additionalProperties refuse undocumented fields, so that an answer's
// new field fails until the document names it. The document itself stays
// open (a client should tolerate fields added later). A schema used as
// an allOf branch keeps its openness: each branch sees the whole object,
// the other branches' fields included.
func strict(doc *openapi3.T) {
	branches := map[*openapi3.Schema]bool{}
	seen := map[*openapi3.Schema]bool{}
	var all []*openapi3.Schema
	var walk func(*openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		all = append(all, s)
		for _, b := range s.AllOf {
			if b.Value != nil {
				branches[b.Value] = true
			}
			walk(b)
		}
		for _, p := range slices.Sorted(maps.Keys(s.Properties)) {
			walk(s.Properties[p])
		}
		for _, r := range append(slices.Clone(s.OneOf), s.AnyOf...) {
			walk(r)
		}
		walk(s.Items)
		walk(s.Not)
		walk(s.AdditionalProperties.Schema)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
	no := false
	for _, s := range all {
		if branches[s] || len(s.Properties) == 0 || s.AdditionalProperties.Has != nil || s.AdditionalProperties.Schema != nil {
			continue
		}
		s.AdditionalProperties.Has = &no
	}
}

// validator checks the requests of one test server and keeps what failed.
type validator struct {
	c      *contract
	mu     sync.Mutex
	failed map[string]*mismatch // by operation, status and reason
	order  []*mismatch
	called map[string]bool // Call.String()
}

// wrap validates the requests h answers (see above).
func (v *validator) wrap(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		req := &http.Request{}
		// Taken before h runs: a handler may change its request.
		convErr := fasthttpadaptor.ConvertRequest(ctx, req, true)
		body := slices.Clone(ctx.PostBody())
		h(ctx)
		if convErr != nil {
			return // not a request an http.Request can hold: a fuzz input
		}
		v.check(req, body, &ctx.Response)
	}
}

func (v *validator) check(req *http.Request, body []byte, resp *fasthttp.Response) {
	route, params, err := v.c.resp.FindRoute(req)
	if err != nil {
		return // no such operation in the document (see above)
	}
	op := req.Method + " " + route.Path
	status := resp.StatusCode()
	v.mu.Lock()
	v.called[Call{Method: req.Method, Path: route.Path, Status: status}.String()] = true
	v.mu.Unlock()
	ctx := context.Background()
	if status < 400 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: v.c.reqRoute(route), Options: v.c.reqOpt}
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			v.fail(op, status, "the request, accepted, is not what the document allows: "+short(err), nil)
		}
	}
	header := http.Header{}
	for k, val := range resp.Header.All() {
		header.Add(string(k), string(val))
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: v.c.respOpt},
		Status:                 status,
		Header:                 header,
		Options:                v.c.respOpt,
	}
	in.SetBodyBytes(resp.Body())
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		v.fail(op, status, "the answer is not in the document: "+short(err), resp.Body())
	}
}

// short is err's message without kin-openapi's repetition of the request.
func short(err error) string {
	switch e := err.(type) {
	case *openapi3filter.ResponseError:
		if e.Err != nil {
			return e.Reason + ": " + e.Err.Error()
		}
		return e.Reason
	case *openapi3filter.RequestError:
		return e.Error()
	}
	return err.Error()
}

// mismatch is one kind of finding: an operation's status and what was
// wrong, with the first answer's body as an example and how many times it
// was seen. The body is not part of its kind: answers that differ only in
// their ids are one finding.
type mismatch struct {
	op, what string
	status   int
	body     []byte
	n        int
}

func (m *mismatch) String() string {
	msg := fmt.Sprintf("%s -> %d: %s", m.op, m.status, m.what)
	if bytes.HasPrefix(m.body, []byte("{")) { // a page's HTML says little in 300 bytes
		msg += fmt.Sprintf(" (first body %.300s)", m.body)
	}
	return msg
}

func (v *validator) fail(op string, status int, what string, body []byte) {
	key := fmt.Sprintf("%s %d %s", op, status, what)
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.failed[key]
	if m == nil {
		m = &mismatch{op: op, status: status, what: what, body: slices.Clone(body)}
		v.failed[key] = m
		v.order = append(v.order, m)
	}
	m.n++
}

// newValidator returns t's validator; at t's end (after the server
// stopped: register it before the server's own cleanup) it fails t with
// each mismatch and records the operations called.
func newValidator(t testing.TB) *validator {
	c := loadContract()
	if c.err != nil {
		t.Fatalf("servertest: the OpenAPI document: %v", c.err)
	}
	v := newValidatorOf(c)
	t.Cleanup(func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		for i, m := range v.order {
			if i == 20 {
				t.Errorf("servertest: OpenAPI: and %d more mismatches", len(v.order)-i)
				break
			}
			t.Errorf("servertest: OpenAPI (handlers/apidoc/openapi.json) mismatch, %d times: %s", m.n, m)
		}
		if err := c.record(v.called); err != nil {
			t.Errorf("servertest: %s: %v", CallsEnv, err)
		}
	})
	return v
}

func newValidatorOf(c *contract) *validator {
	return &validator{c: c, failed: map[string]*mismatch{}, called: map[string]bool{}}
}

// record appends the operations not yet written by this process to its
// file under TICKETD_API_CALLS.
func (c *contract) record(called map[string]bool) error {
	if c.callsFile == "" {
		return nil
	}
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	var b strings.Builder
	for _, op := range slices.Sorted(maps.Keys(called)) {
		if !c.callsReported[op] {
			c.callsReported[op] = true
			b.WriteString(op + "\n")
		}
	}
	if b.Len() == 0 {
		return nil
	}
	f, err := os.OpenFile(c.callsFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Validating returns a wrapper of a handler that checks what it answers
// as a test server's handler is checked, reporting to t at its end: for a
// whole ticketd a test runs in its own process (cmd/ticketd's tests).
func Validating(t testing.TB) func(fasthttp.RequestHandler) fasthttp.RequestHandler {
	return newValidator(t).wrap
}
