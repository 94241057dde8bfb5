package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"
)

// serve runs srv on a loopback port until the test ends.
func serve(t *testing.T, srv *fasthttp.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// rawResponse is one answer read off a raw connection.
type rawResponse struct {
	Status int
	Code   string
	Body   string
}

// roundTrip writes head, then body (in the background, so that an answer
// before the body is complete is read), and reads one response.
func roundTrip(t *testing.T, addr, head string, body []byte) rawResponse {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A guard against a hang, not a timing target.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if len(body) > 0 {
		go func() { _, _ = c.Write(body) }()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &env)
	return rawResponse{Status: resp.StatusCode, Code: env.Code, Body: string(b)}
}

// A connection that sends nothing, or stops mid-request, until the read
// timeout passes is answered 408 REQUEST_TIMEOUT, not 400: nothing was
// malformed. A client pool's spare connection, opened and never used, ends
// this way, and clients read a 408 on an idle connection as the server
// closing it (a 400 was logged by Go's client as an unsolicited response).
func TestReadTimeoutIsRequestTimeout(t *testing.T) {
	srv := New(func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusOK) })
	srv.ReadTimeout = 200 * time.Millisecond
	addr := serve(t, srv)
	for name, head := range map[string]string{"nothing sent": "", "headers cut short": "POST /v1/x HTTP/1.1\r\nHost: x\r\n"} {
		if r := roundTrip(t, addr, head, nil); r.Status != fasthttp.StatusRequestTimeout || r.Code != "REQUEST_TIMEOUT" {
			t.Errorf("%s: %d %s, want 408 REQUEST_TIMEOUT", name, r.Status, r.Body)
		}
	}
}
