package clientip

import (
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzClientIP checks the X-Forwarded-For walk every rate limit, lockout
// and allowlist keys on: no header panics it; the address it returns is
// valid, unzoned and unmapped (fit for a bucket); from an untrusted peer
// it is the peer whatever the header says; from a trusted one it is the
// peer or an address written in the header.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"203.0.113.9", "203.0.113.9, 10.0.0.1", "[2001:db8::1]:443", "203.0.113.9:4711", "fe80::1%eth0",
		"::ffff:203.0.113.9", "unknown, 10.0.0.1", ",,,", " , 10.0.0.2 ,", "10.0.0.1, 10.0.0.2, 10.0.0.3", "1.2.3.4\n5.6.7.8", "0.0.0.0", "[::1]", "1:2"} {
		f.Add(s, "10.0.0.0/8,127.0.0.1/32", true)
		f.Add(s, "", false)
	}
	f.Fuzz(func(t *testing.T, xff, trusted string, fromTrusted bool) {
		prefixes, err := ParsePrefixes(trusted)
		if err != nil {
			return
		}
		r := &Resolver{Trusted: prefixes}
		peerIP := net.IPv4(192, 0, 2, 7)
		if fromTrusted {
			peerIP = net.IPv4(127, 0, 0, 1)
		}
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: peerIP, Port: 1234}, nil)
		for _, v := range strings.Split(xff, "\n") {
			ctx.Request.Header.Add(fasthttp.HeaderXForwardedFor, v)
		}
		got := r.ClientIP(&ctx)
		if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
			t.Fatalf("ClientIP = %v: not a bucket address", got)
		}
		p := Peer(ctx.RemoteAddr())
		if !r.trusts(p) {
			if got != p {
				t.Fatalf("untrusted peer %v: ClientIP = %v from %q", p, got, xff)
			}
			return
		}
		if got == p {
			return
		}
		for _, v := range strings.Split(xff, "\n") {
			for _, e := range strings.Split(v, ",") {
				if a, ok := parseHop([]byte(strings.TrimSpace(e))); ok && a == got {
					return
				}
			}
		}
		t.Fatalf("ClientIP = %v, neither the peer %v nor an entry of %q", got, p, xff)
	})
}
