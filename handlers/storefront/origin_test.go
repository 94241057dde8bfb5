package storefront

import (
	"fmt"
	"strings"
	"testing"
)

func TestHostAllowedMatchesWholeLabelsOnly(t *testing.T) {
	domains := []string{NormalDomain("Shop.Example.com"), NormalDomain("*.example.org"), NormalDomain("localhost:3000"), NormalDomain("[::1]")}
	for host, want := range map[string]bool{
		"shop.example.com": true, "a.example.org": true, "x.y.example.org": true, "localhost": true, "::1": true,
		"example.org": false, "shop.example.com.evil.test": false, "evilexample.org": false, "xexample.org": false,
		"www.shop.example.com": false, "hop.example.com": false, "": false, ".example.org": false,
	} {
		if got := hostAllowed(domains, host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	for raw, want := range map[string]string{
		"https://Shop.Example.com:8443": "shop.example.com", "http://localhost:3000/x": "localhost",
		"https://shop.example.com./": "shop.example.com", "http://[::1]:8080": "::1",
		"null": "", "ftp://shop.example.com": "", "https://u:p@shop.example.com": "", "shop.example.com": "",
	} {
		if got := urlHost(raw); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A successUrl or Origin whose host carries CSP or header syntax (; , ' "
// or a space: url.Parse lets them through) is not a host on any domain
// list, even under a "*." entry; plain names, ports and IP literals are.
func TestURLHostRefusesHostsOutsideDNSAndIP(t *testing.T) {
	domains := []string{NormalDomain("*.example.com"), NormalDomain("127.0.0.1"), NormalDomain("[::1]")}
	for _, raw := range []string{
		"https://a;sandbox.example.com/", "https://a,form-action;b.example.com/ok",
		"https://a'b.example.com/", `https://a"b.example.com/`, "https://a b.example.com/",
		"https://a%20b.example.com/", "https://a_b.example.com/", "https://ex\u00e4mple.example.com/",
		"http://[fe80::1%25eth0]/",
	} {
		if h := urlHost(raw); h != "" || hostAllowed(domains, h) {
			t.Errorf("urlHost(%q) = %q, want it refused", raw, h)
		}
	}
	for raw, want := range map[string]string{
		"https://Shop.Example.com:8443/x": "shop.example.com", "https://xn--mnchen-3ya.example.com/": "xn--mnchen-3ya.example.com",
		"http://127.0.0.1:8081/done?s=1": "127.0.0.1", "http://[::1]:8080/": "::1", "https://a-b.example.com/": "a-b.example.com",
	} {
		if h := urlHost(raw); h != want || !hostAllowed(domains, h) {
			t.Errorf("urlHost(%q) = %q (allowed %v), want %q allowed", raw, h, hostAllowed(domains, h), want)
		}
	}
}

// originHostOf answers as urlHost does whether it parsed the Origin or
// remembered it, with more distinct values than it has slots, and its
// answer is its own: fasthttp reuses the header's bytes for the next
// request.
func TestOriginHostOfAnswersAsURLHost(t *testing.T) {
	var values []string
	for i := range 3 * originSlots {
		values = append(values, fmt.Sprintf("https://shop%d.example", i))
	}
	values = append(values, "null", "https://Shop.Example.com:8443", "https://shop.example.com.", "http://x;y.example")
	values = append(values, "https://"+strings.Repeat("a", maxURLLen)+".example")
	for range 2 {
		for _, v := range values {
			for range 2 { // parsed or found, then found: the slot is its own
				header := []byte(v)
				value, host := originHostOf(header)
				copy(header, strings.Repeat("x", len(header)))
				if value != v || host != urlHost(v) {
					t.Fatalf("originHostOf(%q) = %q, %q; want %q, %q", v, value, host, v, urlHost(v))
				}
			}
		}
	}
}
