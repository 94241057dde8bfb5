package guard

import (
	"context"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// TestRouteOrder: Start runs on every request, then the gate, then Auth,
// then the quota; GateLast puts the gate after Auth; the gate is read at
// each request; the handler gets the request context and Auth's caller.
func TestRouteOrder(t *testing.T) {
	var steps []string
	shut := apierr.Of("NOT_READY", "stopped")
	var gate func() *apierr.Error
	denied := apierr.Of("INVALID_KEY", "no")
	deny := false
	route := func(last bool) *Route[string] {
		return &Route[string]{Gate: &gate, GateLast: last,
			Start: func(*fasthttp.RequestCtx) string { steps = append(steps, "start"); return "s" },
			Auth: func(_ *fasthttp.RequestCtx, c string) (string, Quota, *apierr.Error) {
				steps = append(steps, "auth")
				if deny {
					return "", Quota{}, denied
				}
				return c + "+a", Quota{}, nil
			}}
	}
	serve := func(r *Route[string]) (int, string) {
		steps = nil
		var ctx fasthttp.RequestCtx
		r.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, c string) {
			if _, ok := rctx.Deadline(); !ok {
				t.Error("the request context has no deadline")
			}
			steps = append(steps, "handler "+c)
			ctx.SetStatusCode(200)
		})(&ctx)
		return ctx.Response.StatusCode(), strings.Join(steps, ", ")
	}
	first, last := route(false), route(true)
	if st, got := serve(first); st != 200 || got != "start, auth, handler s+a" {
		t.Fatalf("open: %d %q", st, got)
	}
	gate = func() *apierr.Error { return shut } // set after Wrap: still holds
	if st, got := serve(first); st != shut.Status || got != "start" {
		t.Fatalf("gate shut: %d %q", st, got)
	}
	if st, got := serve(last); st != shut.Status || got != "start, auth" {
		t.Fatalf("gate last, shut: %d %q", st, got)
	}
	deny = true
	if st, got := serve(last); st != denied.Status || got != "start, auth" {
		t.Fatalf("gate last, refused caller: %d %q", st, got)
	}
}

// TestRouteQuota: a caller over its quota gets the one 429 with
// Retry-After; a Limiter that fails (here: the
// request context ended) goes to Fail with the step.
func TestRouteQuota(t *testing.T) {
	rc, space := redistest.New(t)
	l := &ratelimit.Limiter{Redis: rc, Space: space}
	var failed []any
	r := &Route[struct{}]{Limiter: l,
		Auth: func(*fasthttp.RequestCtx, struct{}) (struct{}, Quota, *apierr.Error) {
			return struct{}{}, Quota{Bucket: Bucket(ByIP, "203.0.113.9", Write), Limit: 1}, nil
		},
		Fail: func(_ *fasthttp.RequestCtx, err error, logArgs ...any) {
			failed = append(append(failed, err), logArgs...)
		}}
	h := r.Wrap(func(ctx *fasthttp.RequestCtx, _ context.Context, _ struct{}) { ctx.SetStatusCode(200) })
	var ctx fasthttp.RequestCtx
	h(&ctx)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("first request: %d", ctx.Response.StatusCode())
	}
	ctx.Response.Reset()
	h(&ctx)
	if ctx.Response.StatusCode() != 429 || len(ctx.Response.Header.Peek("Retry-After")) == 0 {
		t.Fatalf("over the quota: %d %q", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	r.Limiter = &ratelimit.Limiter{Redis: rc, Space: space}
	r.Timeout = 1 // the request context ends before Redis answers
	h = r.Wrap(func(ctx *fasthttp.RequestCtx, _ context.Context, _ struct{}) { ctx.SetStatusCode(200) })
	ctx.Response.Reset()
	h(&ctx)
	if len(failed) != 3 || failed[1] != "step" || failed[2] != "rate limit" {
		t.Fatalf("a failed limiter: Fail got %v", failed)
	}
}

// TestRouteDeferredQuota: a deferred limit rides in the handler's read
// (one DoMulti with it) and is taken once; a handler that made no read
// has it taken when it returns, and over the quota its answer becomes
// the 429 (headers Start set are kept).
func TestRouteDeferredQuota(t *testing.T) {
	rc, space := redistest.New(t)
	l := &ratelimit.Limiter{Redis: rc, Space: space}
	quota := Quota{Bucket: Bucket(ByIP, "203.0.113.7", Read), Limit: 2}
	r := &Route[struct{}]{Limiter: l, Deferred: true,
		Start: func(ctx *fasthttp.RequestCtx) struct{} {
			ctx.Response.Header.Set("Access-Control-Allow-Origin", "https://shop.example.com")
			return struct{}{}
		},
		Auth: func(*fasthttp.RequestCtx, struct{}) (struct{}, Quota, *apierr.Error) { return struct{}{}, quota, nil }}
	reads := r.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
		d := DeferredOf(rctx)
		cmds := d.Cmds()
		if len(cmds) != 1 {
			t.Fatalf("a deferred limit of %d a minute sends %d commands along", quota.Limit, len(cmds))
		}
		answers := rc.DoMulti(rctx, append(cmds, rc.B().Ping().Build())...)
		if e, err := d.Settle(ctx, rctx, answers[:1]); err != nil || e != nil {
			if e != nil {
				httpx.Fail(ctx, e)
				return
			}
			t.Fatal(err)
		}
		if d.Cmds() != nil {
			t.Fatal("a settled limit still sends commands")
		}
		ctx.SetStatusCode(200)
	})
	noRead := r.Wrap(func(ctx *fasthttp.RequestCtx, _ context.Context, _ struct{}) {
		httpx.Fail(ctx, apierr.Invalid("bad body"))
	})
	var ctx fasthttp.RequestCtx
	status := func(h fasthttp.RequestHandler) int {
		ctx.Response.Reset()
		h(&ctx)
		return ctx.Response.StatusCode()
	}
	if st := status(reads); st != 200 {
		t.Fatalf("first read: %d", st)
	}
	if st := status(noRead); st != 400 {
		t.Fatalf("second request, no read, within the quota: %d", st)
	}
	if st := status(noRead); st != 429 || len(ctx.Response.Header.Peek("Retry-After")) == 0 ||
		len(ctx.Response.Header.Peek("Access-Control-Allow-Origin")) == 0 {
		t.Fatalf("over the quota without a read: %d %q", st, ctx.Response.Body())
	}
	if st := status(reads); st != 429 {
		t.Fatalf("over the quota with a read: %d", st)
	}
}

// TestRouteDeferredSentOnce: a handler whose read carried the limit but
// failed (its answer unread) has it counted once: the route never sends
// the commands again (rueidis recycles an answered command).
func TestRouteDeferredSentOnce(t *testing.T) {
	rc, space := redistest.New(t)
	l := &ratelimit.Limiter{Redis: rc, Space: space}
	quota := Quota{Bucket: Bucket(ByIP, "203.0.113.8", Read), Limit: 2}
	r := &Route[struct{}]{Limiter: l, Deferred: true,
		Auth: func(*fasthttp.RequestCtx, struct{}) (struct{}, Quota, *apierr.Error) { return struct{}{}, quota, nil }}
	failedRead := r.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
		rc.DoMulti(rctx, DeferredOf(rctx).Cmds()...)
		httpx.Fail(ctx, apierr.Unavailable("the read failed"))
	})
	reads := r.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
		d := DeferredOf(rctx)
		e, err := d.Settle(ctx, rctx, rc.DoMulti(rctx, d.Cmds()...))
		if err != nil {
			t.Fatal(err)
		}
		if e != nil {
			httpx.Fail(ctx, e)
			return
		}
		ctx.SetStatusCode(200)
	})
	var ctx fasthttp.RequestCtx
	status := func(h fasthttp.RequestHandler) int {
		ctx.Response.Reset()
		h(&ctx)
		return ctx.Response.StatusCode()
	}
	if st := status(failedRead); st != 503 {
		t.Fatalf("failed read: %d", st)
	}
	if st := status(reads); st != 200 {
		t.Fatalf("second request: %d: the failed read's limit was counted twice", st)
	}
	if st := status(reads); st != 429 {
		t.Fatalf("third request within a quota of two: %d", st)
	}
}

// TestRouteDeferredLocal: a handler that answers from the node's memory
// counts the request in a Local (no Redis call, and the route takes no
// Redis limit after it), refused as any request over the quota; Take
// counts in Redis apart, in a round trip of its own.
func TestRouteDeferredLocal(t *testing.T) {
	raw, space := redistest.New(t)
	rc := roundtrips.Wrap(raw, nil)
	quota := Quota{Bucket: Bucket(ByIP, "203.0.113.6", Read), Limit: 2}
	r := &Route[struct{}]{Limiter: &ratelimit.Limiter{Redis: rc, Space: space}, Deferred: true,
		Auth: func(*fasthttp.RequestCtx, struct{}) (struct{}, Quota, *apierr.Error) { return struct{}{}, quota, nil }}
	var local ratelimit.Local
	answer := func(ctx *fasthttp.RequestCtx, e *apierr.Error) {
		if e != nil {
			httpx.Fail(ctx, e)
			return
		}
		ctx.SetStatusCode(200)
	}
	fromMemory := r.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
		answer(ctx, DeferredOf(rctx).Local(ctx, &local))
	})
	fromRedis := r.Wrap(func(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
		e, err := DeferredOf(rctx).Take(ctx, rctx)
		if err != nil {
			t.Fatal(err)
		}
		answer(ctx, e)
	})
	var ctx fasthttp.RequestCtx
	status := func(h fasthttp.RequestHandler) int {
		ctx.Response.Reset()
		h(&ctx)
		return ctx.Response.StatusCode()
	}
	for i, want := range []int{200, 200, 429, 429} {
		if st := status(fromMemory); st != want {
			t.Fatalf("answer %d from memory: %d, want %d", i+1, st, want)
		}
	}
	if len(ctx.Response.Header.Peek("Retry-After")) == 0 || !strings.Contains(string(ctx.Response.Body()), "RATE_LIMITED") {
		t.Fatalf("the local refusal: %q %q, want the one 429", ctx.Response.Header.Peek("Retry-After"), ctx.Response.Body())
	}
	if n := rc.Total(); n != 0 {
		t.Fatalf("answers from memory made %d Redis round trips, want 0", n)
	}
	for i, want := range []int{200, 200, 429} {
		if st := status(fromRedis); st != want {
			t.Fatalf("answer %d from Redis: %d, want %d (its own count in Redis)", i+1, st, want)
		}
	}
	if n := rc.Total(); n != 3 {
		t.Fatalf("three limits taken in Redis: %d round trips, want 3", n)
	}
}
