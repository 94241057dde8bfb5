package cidr

import (
	"net/netip"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/8":          "10.0.0.0/8",
		"127.0.0.1":           "127.0.0.1/32",
		"::1":                 "::1/128",
		"2001:db8::/32":       "2001:db8::/32",
		"10.1.2.3/8":          "10.0.0.0/8",
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"::ffff:10.0.0.1/128": "10.0.0.1/32",
		"::ffff:192.0.2.1":    "192.0.2.1/32",
	} {
		got, err := Parse(in)
		if err != nil || got != netip.MustParsePrefix(want) {
			t.Errorf("Parse(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"nope", "10.0.0.0/33", "300.1.1.1", "fe80::1%eth0", "10.0.0.0/", ""} {
		if p, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, p)
		}
	}
	// The parsed range matches the unmapped addresses clients arrive with.
	p, _ := Parse("::ffff:10.0.0.0/104")
	if !p.Contains(netip.MustParseAddr("10.9.8.7")) {
		t.Errorf("%v does not contain 10.9.8.7", p)
	}
}
