package connlimit

import (
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// The answers written to a refused connection before it is closed, built
// once: the envelope and headers every other refusal has, and Connection:
// close. A client that sent its request before reading may see the reset
// instead; the answer is a courtesy to the well-behaved ones, the close is
// the limit.
var refusals = map[string][]byte{
	refusedTotal: canned(func(ctx *fasthttp.RequestCtx) *apierr.Error {
		ctx.Response.Header.Set("Retry-After", "1")
		return apierr.Unavailable("ticketd has as many connections open as it takes; retry shortly")
	}),
	refusedPerIP: canned(func(ctx *fasthttp.RequestCtx) *apierr.Error {
		e := guard.Refuse(ctx, time.Second)
		e.Message = "too many connections open from your address; reuse or close some and retry"
		return e
	}),
}

// canned is the whole response of build's error, without a Date header,
// which would be stale.
func canned(build func(*fasthttp.RequestCtx) *apierr.Error) []byte {
	var ctx fasthttp.RequestCtx
	httpx.Fail(&ctx, build(&ctx))
	r := &ctx.Response
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nServer: ticketd\r\nContent-Type: %s\r\nContent-Length: %d\r\nRetry-After: %s\r\nConnection: close\r\n\r\n%s",
		r.StatusCode(), fasthttp.StatusMessage(r.StatusCode()), r.Header.ContentType(), len(r.Body()), r.Header.Peek("Retry-After"), r.Body())
}

// refuseWrite bounds the write of a refusal; a new connection's send
// buffer is empty, so it never waits in practice.
const refuseWrite = 100 * time.Millisecond

// refuse answers c with the refusal of reason and closes it.
func (l *Listener) refuse(c net.Conn, reason string) {
	l.stats.refused.WithLabelValues(reason).Inc()
	_ = c.SetWriteDeadline(time.Now().Add(refuseWrite))
	_, _ = c.Write(refusals[reason])
	_ = c.Close()
}
