package pages

import "testing"

// form-action is built from origin(): a host with CSP syntax (; , ' " or a
// space, which url.Parse accepts) must not reach the header, while plain
// names, punycode, ports and IP literals must.
func TestOriginKeepsCSPSyntaxOut(t *testing.T) {
	for _, u := range []string{
		"https://a;sandbox.example.com/", "https://a,form-action;b.example.com/ok",
		"https://a'b.example.com/", `https://a"b.example.com/`, "https://a b.example.com/",
		"https://a%20b.example.com/", "https://shop.example.com:80;x/", "https://shop.example.com:123456/",
		"http://[fe80::1%25eth0]/", "javascript:alert(1)", "https:///nohost", "/relative",
	} {
		if o := origin(u); o != "" {
			t.Errorf("origin(%q) = %q, want it dropped", u, o)
		}
	}
	for u, want := range map[string]string{
		"https://Shop.Example.com/done?sid=1":   "https://shop.example.com",
		"http://localhost:8081/x":               "http://localhost:8081",
		"http://127.0.0.1:8081/done":            "http://127.0.0.1:8081",
		"http://[::1]:8080/":                    "http://[::1]:8080",
		"https://xn--mnchen-3ya.example.com/ok": "https://xn--mnchen-3ya.example.com",
	} {
		if o := origin(u); o != want {
			t.Errorf("origin(%q) = %q, want %q", u, o, want)
		}
	}
}
