package storefront

import (
	"strings"
	"testing"
)

// FuzzOrigin checks the Origin / Referer parser the storefront's CORS and
// domain check run on every call: no panic; a host it returns is plain
// (a DNS name of [a-z0-9.-] or an IP literal), and a host the domain list
// allows is the listed host or a subdomain of the wildcard entry, never a
// prefix or substring match.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{"https://shop.example.com", "https://a.b.example.org:8443", "https://example.org", "http://shop.example.com.evil.test",
		"https://evilexample.org", "https://user@shop.example.com", "javascript:alert(1)", "null", "https://[::1]:3000", "https://SHOP.EXAMPLE.COM.",
		"https://xn--shp-sna.example.com", "https://shöp.example.com", "https://shop.example.com;x.example.org", "https://%73hop.example.com", "//shop.example.com"} {
		f.Add(s)
	}
	domains := []string{NormalDomain("shop.example.com"), NormalDomain("*.example.org"), NormalDomain("localhost:3000")}
	f.Fuzz(func(t *testing.T, raw string) {
		host := urlHost(raw)
		if host == "" {
			if hostAllowed(domains, host) {
				t.Fatal("the empty host is allowed")
			}
			return
		}
		if !plainHost(host) {
			t.Fatalf("urlHost(%q) = %q: not a plain host", raw, host)
		}
		if hostAllowed(domains, host) && host != "shop.example.com" && host != "localhost" && !strings.HasSuffix(host, ".example.org") {
			t.Fatalf("urlHost(%q) = %q is allowed", raw, host)
		}
	})
}
