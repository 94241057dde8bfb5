// Package seats is the seat-hold engine shared by the storefront and the
// partner surface (decisions.md sections 3 and 4). A hold token owns the
// single seats it holds until it expires (TTL, extendable up to a cap from
// its creation); holding is all or nothing. Tables and GA areas are not held
// here: they are counters checked at reserve and claimed at confirm.
//
// Redis model (the order scripts rely on it):
//   - Three hashes per event hold its seats, label -> holder:
//     SeatHolds(ev) "h:<token> <exp ms>" while a token holds the seat,
//     OrderSeats(ev) "o:<orderId> <exp ms>" once a reserve handed it to a
//     pending order, RegSeats(ev) "o:<regId>" for a registration awaiting
//     payment (no expiry). Redis 7.0 has no expiry per field: an entry past
//     its expiry counts as free, the scripts that read one delete it, and
//     the two timed hashes expire with their latest entry
//     (lua/lib/seatholds.lua). Being fixed keys, they let every script
//     declare its keys before it runs, whatever seats it touches (confirm,
//     pay, expire, extend, release read the seats from the order or token
//     hash inside the script).
//   - Hold(ev, token) is a hash: first (ms, creation), exp (ms, expiry) and
//     one field "s:<label>" per held seat, with PEXPIREAT exp, so a
//     timed-out token vanishes and its seats' entries count as free.
//   - Booked(ev) maps sold seat labels to order ids; a booked seat is never
//     held again.
//
// All times are Redis time.
package seats

import (
	"cmp"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/reply"
)

// Defaults of Engine's durations (decisions.md: TICKETD_SEAT_HOLD_TTL).
const (
	DefaultTTL    = 10 * time.Minute
	DefaultMaxTTL = 30 * time.Minute
)

// MaxLabels is the most seats one request may name, and the most seats one
// token may hold; the
// event's maxPerOrder bounds a token further (MaxPerToken).
const MaxLabels = 100

// MaxPerToken is the most seats one hold token of ev may hold: the event's
// maxPerOrder (a hold is for one order), within MaxLabels.
func MaxPerToken(ev *catalog.CompiledEvent) int {
	return int(min(ev.MaxPerOrder, MaxLabels))
}

// Engine runs the seat-hold scripts of one key space.
type Engine struct {
	Redis rueidis.Client
	Space keys.Space
	// TTL is a hold's lifetime from creation and from each extend (default 10m).
	TTL time.Duration
	// MaxTTL caps a hold's expiry, counted from the token's creation (default 30m).
	MaxTTL time.Duration
}

func (e *Engine) maxTTL() time.Duration {
	if e.MaxTTL <= 0 {
		return DefaultMaxTTL
	}
	return e.MaxTTL
}

// ttl is the configured TTL, never longer than the cap.
func (e *Engine) ttl() time.Duration {
	d := e.TTL
	if d <= 0 {
		d = DefaultTTL
	}
	return min(d, e.maxTTL())
}

// Client errors. They are shared values: copy before changing one.
var (
	ErrHoldExpired = apierr.Of("HOLD_EXPIRED", "the seat hold timed out; take a new hold").WithReason("hold_expired")
	// ErrInvalidToken is every INVALID_HOLD_TOKEN: a malformed token, or
	// one the caller does not own (another buyer session's).
	ErrInvalidToken = apierr.Of("INVALID_HOLD_TOKEN",
		"holdToken must be a hold token of yours: 8 to 64 lowercase letters or digits, as returned by hold-token")
	ErrNotSeated = apierr.Of("NOT_SEATED", "this event has no seat map")
	// ErrTokenRequired answers a cart with seats but no seatHoldToken, on
	// both surfaces.
	ErrTokenRequired = apierr.Invalid("seatLabels need the seatHoldToken that holds them")
)

// CheckToken is the hold-token rule of a cart with seats: a token is
// named, and has a token's shape.
func CheckToken(token string) *apierr.Error {
	if token == "" {
		return ErrTokenRequired
	}
	if !ValidToken(token) {
		return ErrInvalidToken
	}
	return nil
}

// ConflictError is the 409 naming the seats booked, or held by another
// token or order (the caller's own earlier order too: Redis keeps the
// order that booked a seat, not who made it).
func ConflictError(labels []string) *apierr.Error {
	return seatConflict(fmt.Sprintf("seats are booked, or held by another hold token or order: %s; pick others", strings.Join(labels, ", ")), labels)
}

// seatConflict is every SEAT_CONFLICT: the message and the conflicting
// labels (none when no seat in particular is to blame).
func seatConflict(msg string, labels []string) *apierr.Error {
	return apierr.Of("SEAT_CONFLICT", "%s", msg).WithData(map[string]any{"conflicts": labels})
}

var lowerB32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewToken returns a fresh hold token: "h" and 128 random bits in lowercase
// base32 (27 characters).
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "h" + lowerB32.EncodeToString(b)
}

// ValidToken reports whether s has a hold token's syntax: 8 to 64 lowercase
// letters or digits. It says nothing about whether the token exists.
func ValidToken(s string) bool {
	if len(s) < 8 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkCount rejects an empty or oversized list and drops repeated labels,
// keeping the first occurrence's order.
func checkCount(labels []string) ([]string, error) {
	if len(labels) == 0 || len(labels) > MaxLabels {
		return nil, apierr.Invalid("seatLabels must name between 1 and %d seats", MaxLabels)
	}
	seen := make(map[string]struct{}, len(labels))
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if _, dup := seen[l]; dup {
			continue
		}
		seen[l] = struct{}{}
		out = append(out, l)
	}
	return out, nil
}

// sortLabels orders labels by row, then by seat number ("A-2" before "A-10").
func sortLabels(ls []string) {
	slices.SortFunc(ls, func(a, b string) int {
		ra, na := splitLabel(a)
		rb, nb := splitLabel(b)
		if c := cmp.Compare(ra, rb); c != 0 {
			return c
		}
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

func splitLabel(l string) (string, int) {
	i := strings.LastIndexByte(l, '-')
	if i < 0 {
		return l, 0
	}
	n, err := strconv.Atoi(l[i+1:])
	if err != nil {
		return l, 0
	}
	return l[:i], n
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func msArg(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func unexpected(op string, code reply.Code) error { return reply.Unexpected("seats: "+op, code) }
