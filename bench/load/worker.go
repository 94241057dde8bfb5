package load

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Worker is one goroutine of a run: its own request and response, reused
// for every call, the shared HTTP client and its shard of the recorder.
// An Actor drives it; nothing of a Worker is safe for another goroutine.
type Worker struct {
	ID   int
	Req  *fasthttp.Request
	Resp *fasthttp.Response
	// Buf is scratch space an Actor may reuse between calls.
	Buf []byte

	hc *fasthttp.HostClient
	sh *shard
	rc *recorder
}

// Prepare resets w.Req for a new call of method on path (a request URI
// without scheme and host).
func (w *Worker) Prepare(method, path string) {
	w.Req.Reset()
	w.Req.Header.SetMethod(method)
	w.Req.SetRequestURI(path)
	w.Req.Header.SetHost(w.hc.Addr)
}

// Send sends w.Req and reads the answer into w.Resp. It returns the HTTP
// status, or 0 and a transport error code ("timeout", "conn_refused",
// "conn_closed", "conn") when no answer came. Every call counts as a request.
func (w *Worker) Send() (status int, transport string) {
	err := w.hc.Do(w.Req, w.Resp)
	w.sh.mu.Lock()
	w.sh.requests++
	w.sh.mu.Unlock()
	if err != nil {
		return 0, TransportCode(err)
	}
	return w.Resp.StatusCode(), ""
}

// Observe records the time from start to now under op and returns it.
func (w *Worker) Observe(op int, start time.Time) time.Duration {
	d := time.Since(start)
	w.ObserveDuration(op, d)
	return d
}

// ObserveDuration records d under op.
func (w *Worker) ObserveDuration(op int, d time.Duration) {
	v := micros(d)
	w.sh.mu.Lock()
	_ = w.sh.hists[op].RecordValue(v)
	if op == w.rc.primary {
		_ = w.sh.window.RecordValue(v)
	}
	w.sh.mu.Unlock()
}

// Done counts n completed units (the scenario's unit of throughput).
func (w *Worker) Done(n int) {
	w.sh.mu.Lock()
	w.sh.units += int64(n)
	w.sh.mu.Unlock()
}

// Error counts an unexpected answer or transport failure under code.
func (w *Worker) Error(code string) {
	w.sh.mu.Lock()
	w.sh.errors[code]++
	w.sh.mu.Unlock()
}

// Reject counts an answer that is an expected business outcome under load
// (sold out, seat taken), not an error.
func (w *Worker) Reject(code string) {
	w.sh.mu.Lock()
	w.sh.rejects[code]++
	w.sh.mu.Unlock()
}

// Code is the envelope code of w.Resp, "HTTP_<status>" when it has none.
func (w *Worker) Code() string {
	if c := Field(w.Resp.Body(), `"code":`); len(c) > 0 {
		return string(c)
	}
	return "HTTP_" + strconv.Itoa(w.Resp.StatusCode())
}

// TransportCode names a client error as the error code of a request that
// got no answer.
func TransportCode(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no_free_conns"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn_refused"
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "conn_closed"
	}
	return "conn"
}
