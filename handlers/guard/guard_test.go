package guard

import (
	"net/netip"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// TestLimits: the storefront's per-IP limits are interface.md's (about 120
// reads, 30 writes, 20 payment calls a minute; the seat picker polls on a
// budget of its own, 300), and a partner key's
// seating calls count against its catalog budget with its override.
func TestLimits(t *testing.T) {
	for c, want := range map[Class]int64{Read: 120, Write: 30, Payment: 20, Poll: 300} {
		if got := IPLimit(c); got != want {
			t.Errorf("IPLimit(%s) = %d, want %d", c, got, want)
		}
	}
	rl := catalog.RateLimits{Catalog: 900}
	if got := KeyedLimit(KeyedClass(Seats), rl); got != 900 {
		t.Errorf("a key's seat calls: limit %d, want the catalog override 900", got)
	}
	if got := KeyedLimit(Checkout, catalog.RateLimits{}); got != 60 {
		t.Errorf("checkout default %d, want 60", got)
	}
	if b := Bucket(ByIP, "203.0.113.9", Write); b != "ip:203.0.113.9:write" {
		t.Errorf("bucket %q", b)
	}
	// An IPv6 client counts by its /64, which one subscriber holds whole.
	if b := IPBucket(netip.MustParseAddr("2001:db8:1:2:aaaa::1"), Poll); b != "ip:2001:db8:1:2::/64:poll" {
		t.Errorf("IPv6 bucket %q", b)
	}
	if b := IPBucket(netip.MustParseAddr("203.0.113.9"), Read); b != "ip:203.0.113.9:read" {
		t.Errorf("IPv4 bucket %q", b)
	}
}

// TestRefuseHeaderAndBodyAgree: Retry-After and retryAfter carry the same
// whole seconds, rounded up, at least one.
func TestRefuseHeaderAndBodyAgree(t *testing.T) {
	for wait, want := range map[time.Duration]int64{0: 1, 1500 * time.Millisecond: 2, 3 * time.Second: 3} {
		var ctx fasthttp.RequestCtx
		e := Refuse(&ctx, wait)
		if e.Status != 429 || e.Code != "RATE_LIMITED" || e.Fields["retryAfter"] != want ||
			string(ctx.Response.Header.Peek("Retry-After")) != string(fasthttp.AppendUint(nil, int(want))) {
			t.Errorf("wait %v: %+v, header %q", wait, e, ctx.Response.Header.Peek("Retry-After"))
		}
	}
}
