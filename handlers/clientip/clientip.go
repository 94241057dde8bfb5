// Package clientip finds the address of the client behind a request. The
// peer of the connection is the client unless it is a trusted proxy
// (TICKETD_TRUSTED_PROXIES); only then is X-Forwarded-For read, from the
// right, because only the entries appended by trusted hops can be believed:
// anything to their left is whatever the client chose to send.
package clientip

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/cidr"
)

// Resolver resolves client addresses. The zero value, like a nil
// *Resolver, trusts no proxy, so X-Forwarded-For is never believed.
type Resolver struct {
	// Trusted are the proxies whose X-Forwarded-For entries are believed.
	// IPv4 prefixes match IPv4 and IPv4-mapped IPv6 addresses alike.
	Trusted []netip.Prefix
}

// ParsePrefixes parses a comma-separated list of CIDRs and bare addresses,
// e.g. "10.0.0.0/8, 127.0.0.1, ::1"; a bare address is a prefix of one
// address. Empty items are skipped, so "" gives no prefixes and no error.
func ParsePrefixes(csv string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(csv, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := cidr.Parse(item)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ClientIP returns the client address of a request; it is never the zero
// Addr (an unknown peer is 0.0.0.0). IPv4-mapped addresses come back as
// IPv4 and zones are dropped, so the result is fit for a rate-limit bucket.
//
// Starting at the peer, X-Forwarded-For is walked from its right end while
// the hop so far is trusted: a trusted entry becomes the next hop, the first
// untrusted entry is the client. An entry that is not an address ends the
// walk, and the last trusted hop is the client; so does the end of the list.
func (r *Resolver) ClientIP(ctx *fasthttp.RequestCtx) netip.Addr {
	hop := Peer(ctx.RemoteAddr())
	if !r.trusts(hop) {
		return hop
	}
	// Several X-Forwarded-For headers form one list, in order.
	vals := ctx.Request.Header.PeekAll(fasthttp.HeaderXForwardedFor)
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		for len(v) > 0 {
			entry := v
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				v = nil
			}
			a, ok := parseHop(bytes.TrimSpace(entry))
			if !ok {
				return hop
			}
			if !r.trusts(a) {
				return a
			}
			hop = a
		}
	}
	return hop
}

// Subscriber names what one subscriber holds of the address space, as
// ticketd counts clients (rate limits, holds per IP): the address, or for
// IPv6 its /64, which one subscriber usually holds whole. An IPv4-mapped
// address counts as its IPv4 address (else every IPv4 client would share
// ::ffff:0:0/64).
func Subscriber(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

func (r *Resolver) trusts(a netip.Addr) bool {
	if r == nil {
		return false
	}
	for _, p := range r.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Peer returns the address of a connection's remote end, unmapped and
// without zone; 0.0.0.0 when unknown.
func Peer(addr net.Addr) netip.Addr {
	var a netip.Addr
	if t, ok := addr.(*net.TCPAddr); ok {
		a = t.AddrPort().Addr()
	} else if addr != nil {
		if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
			a = ap.Addr()
		}
	}
	if !a.IsValid() {
		return netip.IPv4Unspecified()
	}
	return a.Unmap().WithZone("")
}

// parseHop parses one X-Forwarded-For entry: an address, or an address and
// port as some proxies write it ("203.0.113.9:4711", "[2001:db8::1]:443").
func parseHop(b []byte) (netip.Addr, bool) {
	if len(b) == 0 {
		return netip.Addr{}, false
	}
	// The string aliases the request header, without a copy: nothing parsed
	// from it outlives this call (netip copies zones, and zones are refused).
	s := unsafe.String(unsafe.SliceData(b), len(b))
	var a netip.Addr
	var err error
	if b[0] == '[' || bytes.Count(b, colon) == 1 { // IPv6 needs two colons
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	} else {
		a, err = netip.ParseAddr(s)
	}
	// A zone names an interface of the sender's host: not a client address.
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

var colon = []byte{':'}
