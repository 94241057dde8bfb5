package storefront

import "testing"

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
