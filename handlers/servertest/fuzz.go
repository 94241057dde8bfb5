package servertest

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// The HTTP fuzz tests (FuzzXxxHTTP in each surface's package) build a
// request from fuzz input and send it through the whole stack; Send checks
// the answer: never a 5xx for anything a client sends while Redis and
// Postgres are up, and every refusal the envelope with a code of
// inventory/apierr's table and the status the table gives it.

// FuzzRequest is one request built from fuzz input.
type FuzzRequest struct {
	Method string
	// Path is the path with its query, sent as is.
	Path    string
	Headers [][2]string
	Body    []byte
	// HTML marks a page route: its answers are HTML pages, not envelopes,
	// and only the status is checked.
	HTML bool
}

// FuzzAnswer is what came back.
type FuzzAnswer struct {
	Status      int
	Body        []byte
	ContentType string
	Code        string
}

// Send sends r to the test server and checks the answer (see above). It
// returns false when the request could not be sent at all (a header or
// URI the client itself refuses to write): nothing reached the server.
func (s *Server) Send(t *testing.T, r FuzzRequest) (FuzzAnswer, bool) {
	t.Helper()
	a, ok := s.send(t, r)
	if ok && a.Status == fasthttp.StatusServiceUnavailable && s.Monitor != nil && s.waitOpen() {
		// The Redis state monitor stopped sales meanwhile (its 1 s check
		// misses on a loaded machine): that 503 is the gate doing its job,
		// not an answer to this input. Asked again with the gate open, a
		// 503 is a finding.
		t.Logf("503 while the gate was closed, asked again: %.200s", a.Body)
		a, ok = s.send(t, r)
	}
	if !ok {
		return a, false
	}
	desc := func() string { return r.Method + " " + r.Path }
	t.Logf("%s -> %d %.200s", desc(), a.Status, a.Body)
	if a.Status >= 500 {
		t.Fatalf("%s: %d %s (request headers %q, body %.300q)", desc(), a.Status, a.Body, r.Headers, r.Body)
	}
	if r.HTML && a.Status < 400 {
		return a, true
	}
	if a.Status < 300 && a.Status != fasthttp.StatusNoContent {
		var env struct {
			Success *bool `json:"success"`
		}
		if err := json.Unmarshal(a.Body, &env); err != nil || env.Success == nil || !*env.Success {
			t.Fatalf("%s: %d answer is not a success envelope: %q", desc(), a.Status, a.Body)
		}
		return a, true
	}
	if a.Status < 400 {
		return a, true
	}
	if r.HTML && !strings.HasPrefix(a.ContentType, "application/json") {
		return a, true // a page's refusal is a page
	}
	a.Code = CheckEnvelope(t, desc(), a.Status, a.Body)
	return a, true
}

// waitOpen waits up to 15 s for the monitor's gate to be open; it
// reports whether the gate was closed at first (sales stopped).
func (s *Server) waitOpen() bool {
	if s.Monitor.Gate() == nil {
		return false
	}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && s.Monitor.Gate() != nil; {
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func (s *Server) send(t *testing.T, r FuzzRequest) (FuzzAnswer, bool) {
	t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(r.Method)
	// The path is written as the fuzzer made it: no normalising, so that
	// the router sees dot segments, doubled slashes and raw bytes.
	req.Header.DisableNormalizing()
	req.URI().DisablePathNormalizing = true
	req.SetRequestURI(s.URL + r.Path)
	for _, h := range r.Headers {
		req.Header.Set(h[0], h[1])
	}
	if r.Body != nil {
		req.SetBody(r.Body)
		if len(req.Header.ContentType()) == 0 {
			req.Header.SetContentType("application/json")
		}
	}
	// A request the server leaves unanswered is a finding too (a handler
	// stuck on client input); 10 s is far beyond any answer here.
	if err := s.Client.DoTimeout(req, resp, 10*time.Second); err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) {
			t.Fatalf("%s %s: no answer in 10 s (request headers %q, body %.200q)", r.Method, r.Path, r.Headers, r.Body)
		}
		// The client refused to write the request (a header it cannot
		// send), or the server dropped the connection: the server must
		// still answer the next one.
		if code, _, herr := s.Client.GetTimeout(nil, s.URL+"/healthz", 10*time.Second); herr != nil || code != fasthttp.StatusOK {
			t.Fatalf("%s %s: %v, and then /healthz: %d %v", r.Method, r.Path, err, code, herr)
		}
		t.Logf("%s %s: not sent: %v", r.Method, r.Path, err)
		return FuzzAnswer{}, false
	}
	return FuzzAnswer{Status: resp.StatusCode(), Body: append([]byte(nil), resp.Body()...),
		ContentType: string(resp.Header.ContentType())}, true
}

// CheckEnvelope fails t unless body is a failure envelope with a known
// code, a message, and the status of the code's table entry; it returns
// the code.
func CheckEnvelope(t testing.TB, what string, status int, body []byte) string {
	t.Helper()
	var env struct {
		Success *bool   `json:"success"`
		Code    *string `json:"code"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Success == nil || *env.Success || env.Code == nil || env.Message == nil || *env.Message == "" {
		t.Fatalf("%s: %d answer is not a failure envelope with code and message: %q", what, status, body)
	}
	code := *env.Code
	if !apierr.Known(code) {
		t.Fatalf("%s: code %q is not in inventory/apierr's table: %q", what, code, body)
	}
	// AMOUNT_MISMATCH is the one code with two statuses (a storefront
	// client's is 400, apierr.ClientAmountMismatch).
	if want := apierr.Status(code); want != status && !(code == "AMOUNT_MISMATCH" && status == 400) {
		t.Fatalf("%s: code %s answered %d, its table status is %d", what, code, status, want)
	}
	return code
}

// FuzzHeaders reads fuzz input as header lines ("Name: value", one a
// line); lines without a colon are skipped, and so are the headers that
// frame the message (Content-Length, Transfer-Encoding, Connection,
// Expect, Host): a Content-Length longer than the body makes the server
// wait for the rest, rightly, and the fuzz run stall.
func FuzzHeaders(s string) [][2]string {
	var out [][2]string
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" || framing[strings.ToLower(strings.TrimSpace(k))] {
			continue
		}
		out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out
}

var framing = map[string]bool{"content-length": true, "transfer-encoding": true, "connection": true, "expect": true, "host": true}

// Subst replaces each $NAME of vars in s: seeds name a live order, hold
// token or session of the running server that no corpus file can hold.
func Subst(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	for k, v := range vars {
		s = strings.ReplaceAll(s, "$"+k, v)
	}
	return s
}

// PathParam escapes fuzz input for a path segment (the raw form is the
// path fuzzing's business, this one reaches the handlers).
func PathParam(s string) string { return url.PathEscape(s) }

var fuzzIP atomic.Uint32

// FuzzClientIP returns a fresh client address for X-Forwarded-For (the
// test server trusting loopback, Options.Trusted), so that per-IP rate
// limits and lockouts do not end a fuzz run's coverage at the first
// minute's budget.
func FuzzClientIP() string {
	n := fuzzIP.Add(1)
	return "10." + itoa(n>>16&255) + "." + itoa(n>>8&255) + "." + itoa(n&255)
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// FuzzTarget picks the route of routes that the fuzzed number route names
// and builds its path from fuzz input. A route is "METHOD /path", the path
// with up to two placeholders in braces ("/events/{id}/hold/{token}"), or
// "METHOD {raw}". id is cut at its first '|' and the halves, path-escaped,
// fill the first and the second placeholder; a {raw} route takes id as it
// is for the whole path (rawPrefix before it unless it starts with '/'),
// so that the router sees dot segments, doubled slashes and raw bytes.
// query, when not empty, follows a '?' as it is. It returns the method,
// the route's path as written (for the callers that treat one route apart)
// and the path to send.
func FuzzTarget(routes []string, route uint8, id, query, rawPrefix string) (method, tmpl, path string) {
	method, tmpl, _ = strings.Cut(routes[int(route)%len(routes)], " ")
	if tmpl == "{raw}" {
		path = id
		if !strings.HasPrefix(id, "/") {
			path = rawPrefix + id
		}
	} else {
		first, second, _ := strings.Cut(id, "|")
		path = fillPlaceholder(fillPlaceholder(tmpl, PathParam(first)), PathParam(second))
	}
	if query != "" {
		path += "?" + query
	}
	return method, tmpl, path
}

// SeatSeeds are seeds of the seat API's routes for event (seats
// in category stalls), in the order the partner, storefront and picker
// fuzzers list those routes: config, availability, hold/{token}, hold-token, hold,
// hold/{token}/extend, release, best-available. Each is the fuzzed id (the
// event, and "|$HOLD" for a route with a hold token) and the JSON body.
func SeatSeeds(event string) [][2]string {
	return [][2]string{
		{event, ""},
		{event, ""},
		{event + "|$HOLD", ""},
		{event, `{}`},
		{event, `{"holdToken":"$HOLD","seatLabels":["A-1","A-2"]}`},
		{event + "|$HOLD", `{}`},
		{event, `{"holdToken":"$HOLD","seatLabels":["A-1"]}`},
		{event, `{"quantity":2,"category":"stalls"}`},
	}
}

// fillPlaceholder replaces path's first "{name}" with v. v is escaped, so
// it holds no brace a later call could take for a placeholder.
func fillPlaceholder(path, v string) string {
	i := strings.IndexByte(path, '{')
	if i < 0 {
		return path
	}
	j := strings.IndexByte(path[i:], '}')
	if j < 0 {
		return path
	}
	return path[:i] + v + path[i+j+1:]
}
