// Package httpx writes ticketd's JSON envelope {success, data?, message?,
// code?} and decodes request bodies, so that every surface answers alike and
// nothing a client sends can produce a 500. Every answer ends with a
// newline, so a curl's output ends its line rather than running into the
// next prompt.
package httpx

import (
	"errors"
	"fmt"
	"net"
	"reflect"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/jsonpos"
)

// MaxBody is the request body limit of every surface (64 KB).
const MaxBody = 64 * 1024

type okEnvelope struct {
	Success bool `json:"success"`
	Data    any  `json:"data,omitempty"`
}

// OK writes a 200 success envelope with data.
func OK(ctx *fasthttp.RequestCtx, data any) {
	Write(ctx, fasthttp.StatusOK, data)
}

// Write writes a success envelope with the given status.
func Write(ctx *fasthttp.RequestCtx, status int, data any) {
	b, err := json.Marshal(okEnvelope{Success: true, Data: data})
	if err != nil {
		failed(ctx, fmt.Errorf("httpx: encode response: %w", err))
		Fail(ctx, Internal())
		return
	}
	writeJSON(ctx, status, b)
}

// Fail writes e as a failure envelope. Extra fields of e (serverTotal,
// refundRequired, reason) sit at the top level beside code and message.
func Fail(ctx *fasthttp.RequestCtx, e *apierr.Error) {
	m := make(map[string]any, 5+len(e.Fields))
	for k, v := range e.Fields {
		m[k] = v
	}
	m["success"] = false
	m["code"] = e.Code
	m["message"] = e.Message
	if e.Reason != "" {
		m["reason"] = e.Reason
	}
	if e.Data != nil {
		m["data"] = e.Data
	}
	b, _ := json.Marshal(m)
	writeJSON(ctx, e.Status, b)
}

// writeJSON sends b, a JSON answer, ended with a newline.
func writeJSON(ctx *fasthttp.RequestCtx, status int, b []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(b, '\n'))
}

// Error writes err: an *apierr.Error as itself, anything else as a 503
// (the failures left are Redis or Postgres trouble, which a retry may
// cure) recorded as the request's failure: metrics.Instrument counts and
// logs it.
func Error(ctx *fasthttp.RequestCtx, err error) {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		Fail(ctx, ae)
		return
	}
	failed(ctx, err)
	Fail(ctx, Unavailable())
}

// failureKey is the user value of a request's failure.
type failureKey struct{}

// failed records err as the request's failure.
func failed(ctx *fasthttp.RequestCtx, err error) { ctx.SetUserValue(failureKey{}, err) }

// Failure is what a handler failed the request with (Error's store
// failure, an encoding failure, a panic), or nil when the answer, an
// error envelope or not, is what the handler meant to send. The one who
// serves the request logs it: metrics.Instrument, with the route, through
// a logger that collapses repeats.
func Failure(ctx *fasthttp.RequestCtx) error {
	err, _ := ctx.UserValue(failureKey{}).(error)
	return err
}

// Unavailable is the answer when a backing store fails: retry later.
func Unavailable() *apierr.Error {
	return apierr.Unavailable("temporarily unavailable, retry")
}

// Internal is the answer to a defect in the service itself.
func Internal() *apierr.Error {
	return apierr.Of("INTERNAL", "internal error")
}

// Decode parses the JSON body into v. An empty body decodes as {}.
func Decode(ctx *fasthttp.RequestCtx, v any) *apierr.Error {
	body := ctx.PostBody()
	if len(body) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return apierr.Invalid("request body is not valid JSON for this endpoint: %s", jsonMessage(err, body))
	}
	return nil
}

// jsonMessage shortens a decoder error of body to something a client can
// act on: the field and the JSON it takes, or where the JSON breaks.
func jsonMessage(err error, body []byte) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return "field " + te.Field + " must be " + jsonKind(te.Type)
		}
		return "expected " + jsonKind(te.Type)
	}
	if p, ok := jsonpos.Of(body, err); ok {
		return "malformed JSON " + p.String() + ": " + p.Msg
	}
	return err.Error()
}

// jsonKind names the JSON a Go type takes, for messages a client reads
// (not Go type names).
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// ServerErrorHandler answers what fasthttp rejects before any handler runs:
// an oversized body is 413 PAYLOAD_TOO_LARGE, a request that did not arrive
// within the read timeout 408 REQUEST_TIMEOUT, anything else malformed 400.
func ServerErrorHandler(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		Fail(ctx, apierr.Of("PAYLOAD_TOO_LARGE", "request body is too large: 64 KB at most (8 MB for the operator's authenticated catalog)"))
		return
	}
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) {
		Fail(ctx, apierr.Of("HEADERS_TOO_LARGE", "request headers are larger than 8 KB"))
		return
	}
	// A connection a client opened and never used (a pool's or a
	// browser's spare one) times out here too: nothing was malformed, and
	// HTTP clients read a 408 on an idle connection as the server closing
	// it, where a 400 is an answer to a request they never sent.
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		Fail(ctx, apierr.Of("REQUEST_TIMEOUT", "the request did not arrive within the read timeout"))
		return
	}
	Fail(ctx, apierr.Invalid("malformed HTTP request"))
}

// NotFound answers unknown routes.
func NotFound(ctx *fasthttp.RequestCtx) {
	Fail(ctx, apierr.Of("NOT_FOUND", "no such endpoint"))
}

// MethodNotAllowed answers a known path with the wrong method.
func MethodNotAllowed(ctx *fasthttp.RequestCtx) {
	Fail(ctx, apierr.Of("METHOD_NOT_ALLOWED", "method not allowed on this endpoint"))
}

// PanicHandler turns a handler panic into the 500 envelope; the panic is a
// defect, recorded as the request's failure (Failure) to be logged.
func PanicHandler(ctx *fasthttp.RequestCtx, p any) {
	failed(ctx, fmt.Errorf("handler panic: %v", p))
	Fail(ctx, Internal())
}
