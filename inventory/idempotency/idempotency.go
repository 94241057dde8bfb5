// Package idempotency holds the rules of the Idempotency-Key header every
// checkout (reserve, register) carries: required, 1 to 255 printable ASCII
// characters (space included; docs/decisions.md).
package idempotency

import "github.com/ticketd/ticketd/inventory/apierr"

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// MaxLen is the longest key accepted.
const MaxLen = 255

// The two refusals of a key.
var (
	ErrRequired = apierr.Of("IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header (a UUID) on every reserve")
	ErrInvalid  = apierr.Of("INVALID_IDEMPOTENCY_KEY", "Idempotency-Key must be 1 to 255 printable ASCII characters")
)

// Check returns the key as a string, or ErrRequired when it is empty and
// ErrInvalid when it breaks the rules. Handlers pass the header as read:
// idempotency.Check(ctx.Request.Header.Peek(idempotency.Header)).
func Check(k []byte) (string, *apierr.Error) {
	if len(k) == 0 {
		return "", ErrRequired
	}
	if len(k) > MaxLen {
		return "", ErrInvalid
	}
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return "", ErrInvalid
		}
	}
	return string(k), nil
}
