// Package apierr holds the error a client sees: an HTTP status, a code from
// interface.md or decisions.md, a message, and optional extra fields that
// travel in the envelope (reason, serverTotal, refundRequired, conflicts).
//
// Every code has its status in one table (codes.go); Of builds an error
// from the table, so a code cannot leave with two statuses.
package apierr

import (
	"fmt"
	"strings"
)

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

// Of returns the Error of code, with its status from the table and a
// formatted message. An unknown code panics: it is a programming error,
// and codes_test.go finds every code the code base uses.
func Of(code, format string, args ...any) *Error {
	return &Error{Status: Status(code), Code: code, Message: fmt.Sprintf(format, args...)}
}

// Status is the HTTP status of code (the table in codes.go).
func Status(code string) int {
	s, ok := statuses[code]
	if !ok {
		panic("apierr: code " + code + " is not in the table (inventory/apierr/codes.go)")
	}
	return s
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

// WithReason returns a copy of e with a reason.
func (e *Error) WithReason(r string) *Error {
	c := *e
	c.Reason = r
	return &c
}

// WithData returns a copy of e carrying data.
func (e *Error) WithData(d any) *Error {
	c := *e
	c.Data = d
	return &c
}

// Invalid is a 400 INVALID_REQUEST naming the bad field.
func Invalid(format string, args ...any) *Error {
	return Of("INVALID_REQUEST", format, args...)
}

// Unavailable is a 503 SERVICE_UNAVAILABLE: a backing store cannot serve
// the request now; a retry later may succeed.
func Unavailable(format string, args ...any) *Error {
	return Of("SERVICE_UNAVAILABLE", format, args...)
}

// SeatNotPriced is SEAT_NOT_PRICED naming every seat, area or table that
// has no price (the seat engine's hold and pricing both answer it):
// data.seats lists them.
func SeatNotPriced(refs []string) *Error {
	return Of("SEAT_NOT_PRICED", "no price is set for %s; pick other seats", strings.Join(refs, ", ")).
		WithData(map[string]any{"seats": refs})
}

// SeatNotFound is SEAT_NOT_FOUND naming seats that are not on the event's
// map (the seat engine's hold and pricing both answer it): data.seats
// lists them.
func SeatNotFound(labels []string) *Error {
	return Of("SEAT_NOT_FOUND", "no such seats on this event's map: %s", strings.Join(labels, ", ")).
		WithData(map[string]any{"seats": labels})
}

// MaxPerOrder is MAX_PER_ORDER_EXCEEDED: a cart, or a hold token, beyond
// limit (an event's or a ticket type's maxPerOrder), data.maxPerOrder. The
// pricing of carts and the seat engine's holds both answer it; detail says
// what the limit counts.
func MaxPerOrder(limit int64, detail string) *Error {
	return Of("MAX_PER_ORDER_EXCEEDED", "%s", detail).With("maxPerOrder", limit)
}

// InProgress is DUPLICATE_IN_PROGRESS: the same request is still being
// made (a reserve's Idempotency-Key whose first attempt runs, a buyer's
// registrations made at once); detail says what to do.
func InProgress(detail string) *Error {
	return Of("DUPLICATE_IN_PROGRESS", "%s", detail)
}

// Known reports whether code is in the table: the fuzz tests check that
// every refusal a client gets carries one.
func Known(code string) bool {
	_, ok := statuses[code]
	return ok
}
