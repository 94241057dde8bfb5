package server

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"
)

// lockedBuffer collects log output written from fasthttp's workers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const (
	secretHeader = "cs_partner_SECRET_value_42"
	bearerToken  = "admin_BEARER_token_77"
)

// fasthttp put the raw request, headers and all, into the log line of a
// malformed request (duplicate Content-Length and the rest below): the
// partner's secret and the operator's token with it. Each shape here is
// one fasthttp logs; the log line must come, through slog, without them.
func TestMalformedRequestsLogNoHeaderValue(t *testing.T) {
	out := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(out, nil))
	addr := serve(t, New(Handler(nil), AdminToken("tok"), Logger(log)))

	creds := "X-Service-Key: ck_partner\r\nX-Service-Secret: " + secretHeader + "\r\nAuthorization: Bearer " + bearerToken + "\r\n"
	for _, tc := range []struct{ name, raw, kind string }{
		{"duplicate Content-Length", "POST /v1/channel/orders/confirm HTTP/1.1\r\nHost: t\r\n" + creds + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "duplicate content-length"},
		{"request line without protocol", "GET /v1/channel/events\r\nHost: t\r\n" + creds + "\r\n", "malformed request headers"},
		{"invalid method", "G@T /v1/channel/events HTTP/1.1\r\nHost: t\r\n" + creds + "\r\n", "bad method"},
		{"extra space in the request line", "GET  /v1/channel/events HTTP/1.1\r\nHost: t\r\n" + creds + "\r\n", "malformed request headers"},
		{"non-numeric Content-Length", "POST /v1/channel/orders/confirm HTTP/1.1\r\nHost: t\r\n" + creds + "Content-Length: x1\r\n\r\n", "malformed request headers"},
		{"unsupported Transfer-Encoding", "POST /v1/channel/orders/confirm HTTP/1.1\r\nHost: t\r\n" + creds + "Transfer-Encoding: gzip\r\n\r\n", "unsupported transfer-encoding"},
		{"header line without a colon", "GET /v1/channel/events HTTP/1.1\r\nHost: t\r\n" + creds + "X-Service-Secret " + secretHeader + "\r\n\r\n", "malformed request headers"},
		{"control character in the secret", "GET /v1/channel/events HTTP/1.1\r\nHost: t\r\nX-Service-Secret: " + secretHeader + "\x01\r\nAuthorization: Bearer " + bearerToken + "\r\n\r\n", "malformed request headers"},
		{"no Host", "GET /v1/channel/events HTTP/1.1\r\n" + creds + "\r\n", "malformed request headers"},
		{"broken chunked body", "POST /v1/channel/orders/confirm HTTP/1.1\r\nHost: t\r\n" + creds + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", ""},
		{"body too large", "POST /v1/channel/orders/confirm HTTP/1.1\r\nHost: t\r\n" + creds + "Content-Length: 100000\r\n\r\n", "body too large"},
	} {
		before := strings.Count(out.String(), "\n")
		status := roundTrip(t, addr, tc.raw, nil).Status
		if status < 400 || status >= 500 {
			t.Errorf("%s: answered %d, want a 4xx", tc.name, status)
		}
		// fasthttp logs once the connection is done: wait for the line.
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(out.String(), "\n") == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) == before {
			t.Errorf("%s: nothing logged", tc.name)
			continue
		}
		var rec struct {
			Level, Msg, Kind, Remote string
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
			t.Errorf("%s: log line is not JSON: %q", tc.name, lines[len(lines)-1])
			continue
		}
		if rec.Msg == "" || rec.Kind == "" || rec.Remote == "" || (tc.kind != "" && rec.Kind != tc.kind) {
			t.Errorf("%s: log line %q, want a message, the remote address and kind %q", tc.name, lines[len(lines)-1], tc.kind)
		}
	}
	logged := out.String()
	for _, s := range []string{secretHeader, bearerToken, "ck_partner", "X-Service-Secret", "Bearer"} {
		if strings.Contains(logged, s) {
			t.Errorf("the log shows %q:\n%s", s, logged)
		}
	}
}

// Whatever fasthttp passes the logger, strings (a formatted request, a
// URI from RequestCtx.Logger) are dropped; the format's text stays.
func TestLoggerDropsStringArguments(t *testing.T) {
	out := &lockedBuffer{}
	l := &logger{log: slog.New(slog.NewJSONHandler(out, nil))}
	l.Printf("%.3f %s - %s", 0.5, "#0000000100000001 - 127.0.0.1:8080<->127.0.0.1:5555 - GET http://t/x?accessCode="+secretHeader, "note "+bearerToken)
	l.Printf("error when serving connection %q<->%q: %v", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 4242},
		fasthttp.ErrBodyTooLarge)
	got := out.String()
	if strings.Contains(got, secretHeader) || strings.Contains(got, bearerToken) || strings.Contains(got, "accessCode") {
		t.Fatalf("logged a string argument: %s", got)
	}
	if !strings.Contains(got, `"remote":"10.0.0.9:4242"`) || !strings.Contains(got, `"kind":"body too large"`) || strings.Count(got, "\n") != 2 {
		t.Fatalf("want two lines, the second with the remote address and kind: %s", got)
	}
}

// A flood of malformed requests cannot flood the log: at most
// logPerSecond lines a second, and the next line says how many it left out.
func TestLoggerIsRateLimited(t *testing.T) {
	var out bytes.Buffer
	l := &logger{log: slog.New(slog.NewJSONHandler(&out, nil))}
	for range 3 * logPerSecond {
		l.Printf("error when serving connection %q<->%q: %v", "a", "b", errors.New("x"))
	}
	lines := strings.Count(out.String(), "\n")
	if lines > 2*logPerSecond { // the burst may straddle two seconds
		t.Fatalf("%d lines for %d calls in a burst", lines, 3*logPerSecond)
	}
	time.Sleep(1100 * time.Millisecond)
	out.Reset()
	l.Printf("error when serving connection %q<->%q: %v", "a", "b", errors.New("x"))
	if !strings.Contains(out.String(), `"dropped_before":`) {
		t.Fatalf("the line after the burst does not count what was left out: %s", out.String())
	}
}

// fasthttp logs a budget refusal and a body over the limit with the same
// error; the line says which one the client got.
func TestBudgetRefusalIsLoggedAsOne(t *testing.T) {
	out := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(out, nil))
	b := NewBodies(65_000, quiet)
	addr := serve(t, New(echoLen, BodyBudget(b), Logger(log)))
	slowSender(t, addr, 65_000, 10)
	waitReserved(t, b, 65_000)

	kindOf := func(head string, want int) string {
		t.Helper()
		before := strings.Count(out.String(), "\n")
		if r := roundTrip(t, addr, head, nil); r.Status != want {
			t.Fatalf("%q: %d %s, want %d", head, r.Status, r.Body, want)
		}
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(out.String(), "\n") == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var rec struct{ Kind string }
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &rec)
		return rec.Kind
	}
	if k := kindOf("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 40000\r\n\r\n", 503); k != "body budget full" {
		t.Errorf("a body refused for the budget logged kind %q, want %q", k, "body budget full")
	}
	if k := kindOf("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n", 413); k != "body too large" {
		t.Errorf("a body over the limit logged kind %q, want %q", k, "body too large")
	}
}
