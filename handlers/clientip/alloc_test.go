//go:build !race

package clientip

import "testing"

// ClientIP runs on every request ahead of the rate limiter.
func TestClientIPDoesNotAllocate(t *testing.T) {
	r := Resolver{Trusted: mustPrefixes(t, "10.0.0.0/8")}
	for _, tc := range []struct{ name, peer, xff string }{
		{"direct", "198.51.100.7", "203.0.113.9"},
		{"through proxies", "10.0.0.1", "1.1.1.1, 203.0.113.9, 10.0.0.2"},
		{"IPv6 with port", "10.0.0.1", "[2001:db8::9]:443"},
	} {
		ctx := request(tcp(tc.peer), tc.xff)
		if n := testing.AllocsPerRun(100, func() { r.ClientIP(ctx) }); n != 0 {
			t.Errorf("%s: %v allocations per ClientIP, want 0", tc.name, n)
		}
	}
}
