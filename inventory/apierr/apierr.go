// Package apierr holds the error a client sees: an HTTP status, a code from
// interface.md or decisions.md, a message, and optional extra fields that
// travel in the envelope (reason, serverTotal, refundRequired, conflicts).
package apierr

import "fmt"

// Error is a client-facing failure. Handlers write it as the envelope
// {success:false, code, message, ...}.
type Error struct {
	Status  int
	Code    string
	Message string
	// Reason is a finer cause clients may branch on (e.g. "hold_expired").
	Reason string
	// Fields are extra top-level envelope fields (serverTotal, refundRequired).
	Fields map[string]any
	// Data is sent as the envelope's data (e.g. {conflicts: [...]}).
	Data any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an Error with a formatted message.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e carrying an extra top-level field.
func (e *Error) With(name string, v any) *Error {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	for k, x := range e.Fields {
		c.Fields[k] = x
	}
	c.Fields[name] = v
	return &c
}

// Common constructors.
func BadRequest(code, format string, args ...any) *Error {
	return New(400, code, format, args...)
}

// Invalid is a 400 INVALID_REQUEST naming the bad field.
func Invalid(format string, args ...any) *Error {
	return New(400, "INVALID_REQUEST", format, args...)
}

// Unavailable is a 503 SERVICE_UNAVAILABLE: a backing store cannot serve
// the request now; a retry later may succeed.
func Unavailable(format string, args ...any) *Error {
	return New(503, "SERVICE_UNAVAILABLE", format, args...)
}
