// Package guard holds what every surface's guard needs before its handler
// runs: the rate-limit classes and their per-minute limits, the naming of
// the buckets they are counted in, and the one 429 RATE_LIMITED reply
// (Refuse). Authentication stays with each surface (the partner's keys and
// buyer sessions in handlers/channel, the storefront's publishable key and
// Origin), since what a caller is differs between them.
package guard

import (
	"context"
	"net/netip"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// Class is a rate-limit class: a group of endpoints that share a budget.
// Its value names the bucket.
type Class string

// The partner surface's classes (interface.md, per credential).
const (
	Catalog  Class = "catalog"  // catalog reads and quotes
	Status   Class = "status"   // order status
	Checkout Class = "checkout" // reserve
	Confirm  Class = "confirm"  // confirm after payment
	Session  Class = "session"  // minting a buyer session
	Resolve  Class = "resolve"  // reading the buyer session
	Seats    Class = "seats"    // the seating endpoints
)

// The storefront's classes (interface.md, Storefront limits): per client IP.
const (
	Read    Class = "read"    // events, quotes, registration reads, seat reads
	Write   Class = "write"   // register-guest, seat holds
	Payment Class = "payment" // checkout sessions and wallet payments
	// Poll is the seat picker's availability poll (handlers/picker): one
	// a second while the page is open, apart from the read budget so
	// that polling never starves the buyer's own reads.
	Poll Class = "poll"
)

// KeyedLimit is the per-minute limit of a partner key for a class; the
// channel's catalog overrides (catalog.RateLimits) win over the defaults.
// A key's seating calls share its catalog budget (docs/decisions.md).
func KeyedLimit(c Class, rl catalog.RateLimits) int64 {
	pick := func(override, def int64) int64 {
		if override > 0 {
			return override
		}
		return def
	}
	switch c {
	case Status:
		return pick(rl.Status, 300)
	case Checkout:
		return pick(rl.Checkout, 60)
	case Confirm:
		return pick(rl.Confirm, 60)
	case Session:
		return pick(rl.Session, 60)
	}
	return pick(rl.Catalog, 600) // catalog reads, quotes, seat reads and holds
}

// KeyedClass is the bucket class of a keyed call of class c: seating calls
// count against the catalog budget.
func KeyedClass(c Class) Class {
	if c == Seats {
		return Catalog
	}
	return c
}

// SessionLimit is the per-minute limit of a partner buyer session.
func SessionLimit(c Class) int64 {
	switch c {
	case Resolve, Catalog:
		return 300
	case Seats:
		return 600
	case Status:
		return 120
	}
	return 60 // checkout
}

// IPLimit is the per-minute limit of a storefront client IP.
func IPLimit(c Class) int64 {
	switch c {
	case Write:
		return 30
	case Payment:
		return 20
	case Poll:
		// Five pickers open behind one address (a household, an office
		// NAT) at one poll a second.
		return 300
	}
	return 120 // reads
}

// Who counts a bucket: a partner key, a buyer session, a client IP.
const (
	ByKey     = "k"
	BySession = "s"
	ByIP      = "ip"
)

// Bucket names the bucket of one caller and class: "<who>:<id>:<class>",
// e.g. "k:<channel id>:catalog", "ip:203.0.113.9:write".
func Bucket(who, id string, c Class) string {
	return who + ":" + id + ":" + string(c)
}

// IPBucket is the bucket of a client IP and class: its address, or for
// IPv6 its /64 (clientip.Subscriber).
func IPBucket(ip netip.Addr, c Class) string {
	return Bucket(ByIP, clientip.Subscriber(ip), c)
}

// Limit takes one request from bucket: nil when it may go on, the 429
// (with Retry-After set) when refused; err when Redis failed.
func Limit(ctx *fasthttp.RequestCtx, rctx context.Context, l *ratelimit.Limiter, bucket string, limit int64) (*apierr.Error, error) {
	res, err := l.Allow(rctx, bucket, limit)
	if err != nil {
		return nil, err
	}
	if !res.Allowed {
		return Refuse(ctx, res.RetryAfter), nil
	}
	return nil, nil
}
