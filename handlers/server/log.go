package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// logger is fasthttp's Logger, written through slog. fasthttp formats the
// request into its messages: the error of a malformed request carries the
// raw header block ("contents: ..." or the first line "in %q", headers
// included, whatever SecureErrorLogMessage says), and RequestCtx.Logger
// prefixes the full URI. So no argument is ever formatted: the message is
// fasthttp's format string (constant text from its source) or a fixed
// sentence, errors are reduced to a kind, addresses and numbers are kept,
// and every string is dropped.
//
// Anyone can make fasthttp log (a malformed request a line), so at most
// logPerSecond lines a second are written; the next line written says how
// many were left out.
type logger struct {
	log *slog.Logger // nil: slog.Default()

	mu      sync.Mutex
	second  int64 // unix second of the current window
	written int
	dropped int
	// budget counts, by remote address, the ErrBodyTooLarge that the
	// error handler answered as a body budget refusal (503), not as a
	// body over the limit (413): fasthttp logs the same error for both,
	// after the error handler and on the same goroutine, naming the
	// connection's addresses.
	budget map[string]int
}

// budgetRefusal records that the connection from remote was refused for
// the body budget; its log line says so.
func (l *logger) budgetRefusal(remote net.Addr) {
	if remote == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget == nil || len(l.budget) >= maxBudgetMarks {
		// Never reached while fasthttp logs every such error; a bound
		// all the same.
		l.budget = map[string]int{}
	}
	l.budget[remote.String()]++
}

// maxBudgetMarks bounds the refusals waiting for their log line.
const maxBudgetMarks = 4096

// wasBudget reports whether the body-too-large error of the connection
// from remote was a budget refusal, and forgets it.
func (l *logger) wasBudget(remote string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.budget[remote]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(l.budget, remote)
	} else {
		l.budget[remote] = n - 1
	}
	return true
}

// logPerSecond bounds fasthttp's log lines.
const logPerSecond = 20

// allow reports whether a line may be written now, and how many lines
// were left out before it.
func (l *logger) allow() (ok bool, dropped int) {
	now := time.Now().Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now != l.second {
		l.second, l.written = now, 0
	}
	if l.written >= logPerSecond {
		l.dropped++
		return false, 0
	}
	l.written++
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// fasthttp v1.74.0's Printf sites that a server reaches (workerpool.go,
// server.go), by the start of their format.
var logFormats = []struct {
	prefix, msg string
	level       slog.Level
}{
	{"error when serving connection", "http: request refused or connection failed", slog.LevelWarn},
	{"The incoming connection cannot be served", "http: connection refused: too many concurrent connections", slog.LevelWarn},
	{"The number of connections from", "http: connection refused: too many connections from one IP", slog.LevelWarn},
	{"Timeout error when accepting", "http: accept timed out", slog.LevelError},
	{"Permanent error when accepting", "http: accept failed", slog.LevelError},
}

func (l *logger) Printf(format string, args ...any) {
	// Forgotten whether the line is written or not.
	budget := l.budgetLine(args)
	ok, dropped := l.allow()
	if !ok {
		return
	}
	msg, level := "http: "+format, slog.LevelWarn
	for _, f := range logFormats {
		if strings.HasPrefix(format, f.prefix) {
			msg, level = f.msg, f.level
			break
		}
	}
	attrs := make([]slog.Attr, 0, len(args))
	addrs := 0
	for _, a := range args {
		switch v := a.(type) {
		case error:
			kind := errorKind(v)
			if budget {
				kind = "body budget full"
			}
			attrs = append(attrs, slog.String("kind", kind))
		case net.Addr:
			// The connection's local then remote address.
			if addrs++; addrs == 2 {
				attrs = append(attrs, slog.String("remote", v.String()))
			}
		case int:
			attrs = append(attrs, slog.Int("n", v))
		}
	}
	if dropped > 0 {
		attrs = append(attrs, slog.Int("dropped_before", dropped))
	}
	log := l.log
	if log == nil {
		log = slog.Default()
	}
	log.LogAttrs(context.Background(), level, msg, attrs...)
}

// budgetLine reports whether a line's arguments are a connection's
// ErrBodyTooLarge that the error handler answered as a budget refusal.
func (l *logger) budgetLine(args []any) bool {
	var tooLarge bool
	var remote string
	addrs := 0
	for _, a := range args {
		switch v := a.(type) {
		case error:
			tooLarge = errors.Is(v, fasthttp.ErrBodyTooLarge)
		case net.Addr:
			if addrs++; addrs == 2 {
				remote = v.String()
			}
		}
	}
	return tooLarge && addrs == 2 && l.wasBudget(remote)
}

// errorKind names what went wrong without the error's text, which may
// hold the request's bytes.
func errorKind(err error) string {
	var small *fasthttp.ErrSmallBuffer
	var chunk *fasthttp.ErrBrokenChunk
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return "body too large"
	case errors.As(err, &small):
		return "headers too large"
	case errors.Is(err, fasthttp.ErrDuplicateContentLength):
		return "duplicate content-length"
	case errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding):
		return "unsupported transfer-encoding"
	case errors.Is(err, fasthttp.ErrMissingRequestMethod), errors.Is(err, fasthttp.ErrUnsupportedRequestMethod):
		return "bad method"
	case errors.Is(err, fasthttp.ErrEmptyRequestURI), errors.Is(err, fasthttp.ErrExtraWhitespaceInRequestLine):
		return "bad request line"
	case errors.As(err, &chunk):
		return "broken chunked body"
	case errors.Is(err, fasthttp.ErrBadTrailer):
		return "bad trailer"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.HasPrefix(err.Error(), "error when reading request headers"):
		return "malformed request headers"
	}
	return "malformed request or connection error"
}
