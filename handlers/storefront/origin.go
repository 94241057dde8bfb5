package storefront

import (
	"hash/maphash"
	"net"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// requestHost returns the lower-cased host of the request's Origin header
// (originHost, as origin returned it), or, when the request has none, of
// its Referer; "" when neither names an http(s) origin. A present Origin
// is final: an unusable one ("null" from a sandboxed frame, a file: page)
// is not rescued by a Referer.
func requestHost(ctx *fasthttp.RequestCtx, originHost string) string {
	if len(ctx.Request.Header.Peek("Origin")) > 0 {
		return originHost
	}
	return urlHost(string(ctx.Request.Header.Peek("Referer")))
}

// hasOriginHeader reports whether the request names its page at all: a
// non-empty Origin or Referer header, usable or not.
func hasOriginHeader(ctx *fasthttp.RequestCtx) bool {
	return len(ctx.Request.Header.Peek("Origin")) > 0 || len(ctx.Request.Header.Peek("Referer")) > 0
}

// origin returns the request's Origin header when it is a usable http(s)
// origin (the value CORS headers echo), else "".
func origin(ctx *fasthttp.RequestCtx) (value, host string) {
	o := ctx.Request.Header.Peek("Origin")
	if len(o) == 0 {
		return "", ""
	}
	value, host = originHostOf(o)
	if host == "" {
		return "", ""
	}
	return value, host
}

// maxURLLen is the longest URL urlHost reads a host from.
const maxURLLen = 2048

// originSlots is how many Origin values originHostOf remembers.
const originSlots = 64

// A seenOrigin is an Origin header's value and its urlHost.
type seenOrigin struct{ value, host string }

var (
	// seenOrigins remembers the urlHost of recent Origin values, one per
	// slot of their hash: a storefront is called from the few pages of
	// its hosts, and url.Parse of every request's Origin was 2% of a
	// waiting room's CPU. Any number of distinct values holds 64 entries
	// at most; a value whose slot another took is parsed again.
	seenOrigins    [originSlots]atomic.Pointer[seenOrigin]
	seenOriginSeed = maphash.MakeSeed()
)

// originHostOf is o as a string and its urlHost, from seenOrigins when o
// was seen last in its slot.
func originHostOf(o []byte) (value, host string) {
	if len(o) > maxURLLen {
		return string(o), "" // no host; not worth a slot
	}
	slot := &seenOrigins[maphash.Bytes(seenOriginSeed, o)%originSlots]
	if e := slot.Load(); e != nil && e.value == string(o) {
		return e.value, e.host
	}
	e := &seenOrigin{value: string(o)}
	e.host = urlHost(e.value)
	slot.Store(e)
	return e.value, e.host
}

// urlHost is the host of an absolute http(s) URL, lower-cased, without
// port, brackets or a trailing dot; "" for anything else, including a host
// that is neither a DNS name of [a-z0-9.-] (IDN as punycode) nor an IP
// literal. url.Parse lets ; , ' " through in a host, and a "*." domain
// entry would match them; such a successUrl would reach the pay page's CSP.
func urlHost(raw string) string {
	if raw == "" || len(raw) > maxURLLen {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return ""
	}
	if h := normalHost(u.Hostname()); plainHost(h) {
		return h
	}
	return ""
}

// plainHost reports whether h (as normalHost returns it) is a DNS name of
// [a-z0-9.-] or an IP address.
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// NormalDomain is a domain list entry as hostAllowed compares it: like a
// host, and without a port ("localhost:3000" is "localhost"). The seat
// picker (handlers/picker) compares its host pages the same way.
func NormalDomain(d string) string {
	if h, _, err := net.SplitHostPort(d); err == nil {
		d = h
	}
	return normalHost(d)
}

// hostAllowed reports whether host (as urlHost returns it) is on a
// publishable key's domain list (entries as NormalDomain returns them):
// an entry "shop.example.com" matches that host exactly, "*.example.com"
// matches its subdomains at any depth but not example.com itself, and
// nothing matches by prefix or substring, so shop.example.com.evil.test
// and evilexample.com match neither.
func hostAllowed(domains []string, host string) bool {
	if host == "" {
		return false
	}
	for _, d := range domains {
		if suffix, ok := strings.CutPrefix(d, "*."); ok {
			if len(host) > len(suffix)+1 && strings.HasSuffix(host, suffix) && host[len(host)-len(suffix)-1] == '.' {
				return true
			}
			continue
		}
		if host == d {
			return true
		}
	}
	return false
}
