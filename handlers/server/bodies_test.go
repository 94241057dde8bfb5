package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/admin"
)

// echoLen answers 200 with the length of the body it got.
func echoLen(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	fmt.Fprintf(ctx, "%d", len(ctx.PostBody()))
}

// budgetServer serves h with a body budget of limit bytes and returns its
// address and the budget.
func budgetServer(t *testing.T, limit int64, h fasthttp.RequestHandler, opts ...Option) (string, *Bodies) {
	t.Helper()
	b := NewBodies(limit, quiet)
	return serve(t, New(h, append([]Option{BodyBudget(b), Logger(quiet)}, opts...)...)), b
}

// slowSender is a connection that sent the headers of a size-byte body
// and part of it, and waits.
func slowSender(t *testing.T, addr string, size, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := fmt.Sprintf("POST /x HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
	if _, err := c.Write(append([]byte(head), bytes.Repeat([]byte{' '}, sent)...)); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReserved waits until the budget holds want bytes.
func waitReserved(t *testing.T, b *Bodies, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Reserved() != want {
		if time.Now().After(deadline) {
			t.Fatalf("reserved %d bytes, want %d", b.Reserved(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// headersOnly sends the headers of a size-byte body and reads the answer
// that comes before any of the body.
func headersOnly(t *testing.T, addr string, size int) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", size)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("connection left open after the answer (%v)", err)
	}
	return resp
}

// A body the budget has no room for is refused before it is read: 503
// SERVICE_UNAVAILABLE, Retry-After, and the connection closed. Once the
// slow body completes, its bytes are free again.
func TestBodyOverTheBudgetIsRefusedUnread(t *testing.T) {
	addr, b := budgetServer(t, 100_000, echoLen)
	slow := slowSender(t, addr, 65_000, 1000)
	waitReserved(t, b, 65_000)

	resp := headersOnly(t, addr, 40_000)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(body), `"code":"SERVICE_UNAVAILABLE"`) ||
		resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Fatalf("second body over the budget: %d %v %s, want 503 SERVICE_UNAVAILABLE, Retry-After: 1, Connection: close", resp.StatusCode, resp.Header, body)
	}

	if _, err := slow.Write(bytes.Repeat([]byte{' '}, 64_000)); err != nil {
		t.Fatal(err)
	}
	got, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil || got.StatusCode != 200 {
		t.Fatalf("the slow body, completed: %v %v", got, err)
	}
	waitReserved(t, b, 0)
	if r := roundTrip(t, addr, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 40000\r\n\r\n", bytes.Repeat([]byte{' '}, 40_000)); r.Status != 200 || r.Body != "40000" {
		t.Fatalf("a body after the budget came back: %d %s", r.Status, r.Body)
	}
}

// Bodies up to SmallBody take nothing from the budget: with the budget
// spent by slow large bodies, a storefront or partner call still goes
// through.
func TestSmallBodiesPassWhileTheBudgetIsSpent(t *testing.T) {
	addr, b := budgetServer(t, 65_000, echoLen)
	slowSender(t, addr, 65_000, 10)
	waitReserved(t, b, 65_000)
	body := bytes.Repeat([]byte{' '}, SmallBody)
	head := fmt.Sprintf("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", len(body))
	if r := roundTrip(t, addr, head, body); r.Status != 200 {
		t.Fatalf("small body while the budget is spent: %d %s, want 200", r.Status, r.Body)
	}
	if resp := headersOnly(t, addr, SmallBody+1); resp.StatusCode != 503 {
		t.Fatalf("a body just over SmallBody while the budget is spent: %d, want 503", resp.StatusCode)
	}
}

// A hold is given back when the connection dies mid-body and when the
// body does not arrive within the body deadline (408).
func TestHoldsComeBackWhenTheBodyNeverArrives(t *testing.T) {
	addr, b := budgetServer(t, 1<<20, echoLen, Timeouts(5*time.Second, 300*time.Millisecond))
	c := slowSender(t, addr, 50_000, 100)
	waitReserved(t, b, 50_000)
	c.Close()
	waitReserved(t, b, 0)

	c = slowSender(t, addr, 50_000, 100)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != fasthttp.StatusRequestTimeout {
		t.Fatalf("a stalled body: %v %v, want 408", resp, err)
	}
	waitReserved(t, b, 0)
}

// A chunked body may grow to the client limit, so it holds that much.
func TestChunkedBodyHoldsTheClientLimit(t *testing.T) {
	addr, b := budgetServer(t, 100_000, echoLen)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
	waitReserved(t, b, 64<<10)
	if resp := headersOnly(t, addr, 40_000); resp.StatusCode != 503 {
		t.Fatalf("40 KB beside a chunked body in a 100 KB budget: %d, want 503", resp.StatusCode)
	}
	fmt.Fprintf(c, "0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the chunked body, completed: %v %v", resp, err)
	}
	waitReserved(t, b, 0)
}

// The operator's catalog, with the valid token, is authenticated: it is
// not counted, whatever its size.
func TestAuthenticatedCatalogIsNotCounted(t *testing.T) {
	addr, b := budgetServer(t, 100_000, Handler(nil, &admin.API{Token: testToken}), AdminToken(testToken))
	doc := []byte(`{"tenants": "` + strings.Repeat("a", 1<<20) + `"}`)
	head := fmt.Sprintf("PUT /v1/admin/catalog HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, len(doc))
	if r := roundTrip(t, addr, head, doc); r.Status != 400 || r.Code != "INVALID_CATALOG" {
		t.Fatalf("1 MB authenticated catalog with a 100 KB budget: %d %.200s, want 400 INVALID_CATALOG", r.Status, r.Body)
	}
	if b.Reserved() != 0 {
		t.Fatalf("the catalog took %d bytes of the budget", b.Reserved())
	}
}

// The header and body deadlines are separate: a body that trickles for
// longer than the header deadline, within the body deadline, is read;
// headers that stall past the header deadline are a 408.
func TestHeaderAndBodyDeadlinesAreSeparate(t *testing.T) {
	addr := serve(t, New(echoLen, Logger(quiet), Timeouts(400*time.Millisecond, 10*time.Second)))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n")
	for range 10 {
		time.Sleep(100 * time.Millisecond) // 1 s in all: past the header deadline
		if _, err := c.Write([]byte{' '}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a body trickled over 1 s with a 10 s body deadline: %v %v, want 200", resp, err)
	}
	if r := roundTrip(t, addr, "POST /x HTTP/1.1\r\nHost: t\r\n", nil); r.Status != fasthttp.StatusRequestTimeout {
		t.Fatalf("headers stalled: %d, want 408", r.Status)
	}
}

// With Expect: 100-continue, fasthttp answers 100 before it reads the
// body; a body over the budget is then refused all the same, unread.
func TestExpectContinueOverTheBudgetIsRefusedBefore100(t *testing.T) {
	addr, b := budgetServer(t, 65_000, echoLen)
	slowSender(t, addr, 65_000, 10)
	waitReserved(t, b, 65_000)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 40000\r\n\r\n")
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(body), `"code":"SERVICE_UNAVAILABLE"`) ||
		resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Fatalf("Expect: 100-continue over the budget: %d %v %s, want 503 SERVICE_UNAVAILABLE, Retry-After: 1, Connection: close (and no 100 Continue first)", resp.StatusCode, resp.Header, body)
	}
	waitReserved(t, b, 65_000) // the refusal held nothing

	// With room, the client is told to continue and its body is read.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c2, "POST /x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 8000\r\n\r\n")
	r2 := bufio.NewReader(c2)
	if resp, err := http.ReadResponse(r2, nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("Expect: 100-continue, a small body: %v %v, want 100 Continue", resp, err)
	}
	if _, err := c2.Write(bytes.Repeat([]byte{' '}, 8000)); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(r2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != "8000" {
		t.Fatalf("the body after 100 Continue: %d %s, want 200 8000", resp.StatusCode, body)
	}
}

// An empty chunked body ("0\r\n\r\n") took the client limit from the
// budget when its headers came, and fasthttp then reports its length as 0:
// its bytes still come back once it is answered. Left held, 512 such
// requests every 30 s denied every large body to everyone.
func TestEmptyChunkedBodyGivesItsHoldBack(t *testing.T) {
	addr, b := budgetServer(t, 1<<20, echoLen)
	for i := range 3 {
		r := roundTrip(t, addr, "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", nil)
		if r.Status != 200 || r.Body != "0" {
			t.Fatalf("empty chunked body %d: %d %s, want 200 0", i, r.Status, r.Body)
		}
	}
	waitReserved(t, b, 0)
}

// A request refused for the budget leaves nothing behind for the requests
// after it: the operator's catalog, which the budget does not count, is
// applied, and a malformed request is its 400.
func TestRefusalLeavesNothingForTheNextRequest(t *testing.T) {
	addr, b := budgetServer(t, 65_000, Handler(nil, &admin.API{Token: testToken}), AdminToken(testToken))
	slowSender(t, addr, 65_000, 10)
	waitReserved(t, b, 65_000)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	refusal, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, refusal.Body)

	// The catalog on the same connection if it is still open (the same
	// ctx), else on a new one.
	doc := []byte(`{"tenants": "` + strings.Repeat("a", 20_000) + `"}`)
	head := fmt.Sprintf("PUT /v1/admin/catalog HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, len(doc))
	var got rawResponse
	if refusal.Close {
		got = roundTrip(t, addr, head, doc)
	} else {
		if _, err := c.Write(append([]byte(head), doc...)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		got = rawResponse{Status: resp.StatusCode, Body: string(body)}
		if strings.Contains(got.Body, `"INVALID_CATALOG"`) {
			got.Code = "INVALID_CATALOG"
		}
	}
	if got.Status != 400 || got.Code != "INVALID_CATALOG" {
		t.Fatalf("catalog after a refusal: %d %.200s, want 400 INVALID_CATALOG", got.Status, got.Body)
	}
	if refusal.StatusCode != 503 || !refusal.Close {
		t.Fatalf("empty chunked body over the budget: %d (close %v), want 503 and the connection closed", refusal.StatusCode, refusal.Close)
	}
	waitReserved(t, b, 65_000)
}

// A hold left on a pooled ctx by a request that neither handler saw (the
// connection broke while "100 Continue" was written) is not the next
// request's: the catalog and a small call on that ctx are served, not
// refused, and the stale hold is given back.
func TestStaleHoldOnAReusedCtxIsDropped(t *testing.T) {
	b := NewBodies(65_000, quiet)
	a := newAdmission(settings{bodies: b, bodyTimeout: time.Second, adminToken: testToken}, &logger{log: quiet})
	served := 0
	h := a.handler(func(*fasthttp.RequestCtx) { served++ })

	var filler, ctx fasthttp.RequestCtx
	filler.Request.Header.SetContentLength(65_000)
	a.config(&filler.Request.Header)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.Header.SetContentLength(-1) // chunked, over the budget: refused
	if got := a.config(&ctx.Request.Header); got.MaxRequestBodySize != 1 {
		t.Fatalf("chunked body over the budget: limit %d, want the refusal's 1", got.MaxRequestBodySize)
	}
	// The connection broke: no handler ran. The ctx serves another one.
	for name, set := range map[string]func(*fasthttp.RequestHeader){
		"catalog": func(rh *fasthttp.RequestHeader) {
			rh.SetMethod("PUT")
			rh.SetRequestURI(catalogPath)
			rh.Set("Authorization", "Bearer "+testToken)
			rh.SetContentLength(100_000)
		},
		"small call": func(rh *fasthttp.RequestHeader) {
			rh.SetMethod("POST")
			rh.SetRequestURI("/v1/x")
			rh.SetContentLength(200)
		},
	} {
		ctx.Request.Header.Reset()
		ctx.Response.Reset()
		set(&ctx.Request.Header)
		a.config(&ctx.Request.Header)
		served = 0
		h(&ctx)
		if served != 1 || ctx.Response.StatusCode() != 200 {
			t.Errorf("%s on a ctx with a stale refusal: served %d, status %d; want served, 200", name, served, ctx.Response.StatusCode())
		}
	}
	if b.Reserved() != 65_000 {
		t.Fatalf("reserved %d, want only the other request's 65000", b.Reserved())
	}
	ctx.Request.Header.Reset()
	ctx.Request.Header.SetContentLength(-1)
	a.config(&ctx.Request.Header) // refused again, then the connection breaks again
	a.errorHandler(&ctx, fasthttp.ErrBrokenChunk{})
	if ctx.Response.StatusCode() == 503 {
		t.Errorf("a malformed chunked body after a refusal: 503, want the malformed request's answer")
	}
}
