package clientip

import (
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/valyala/fasthttp"
)

// request builds a RequestCtx as the server would hand it over: from peer,
// with each xff value as one X-Forwarded-For header.
func request(remote net.Addr, xff ...string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.SetRequestURI("http://ticketd.test/v1/events")
	for _, v := range xff {
		req.Header.Add("X-Forwarded-For", v)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, remote, nil)
	return &ctx
}

func tcp(ip string) net.Addr {
	a := netip.MustParseAddr(ip)
	return &net.TCPAddr{IP: a.AsSlice(), Port: 40000, Zone: a.Zone()}
}

func mustPrefixes(t *testing.T, csv string) []netip.Prefix {
	t.Helper()
	p, err := ParsePrefixes(csv)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClientIP(t *testing.T) {
	const proxies = "10.0.0.0/8, ::1, fe80::/10"
	for _, tc := range []struct {
		name    string
		trusted string
		remote  net.Addr
		xff     []string
		want    string
	}{
		{"no trusted proxies: XFF is never believed", "", tcp("10.0.0.1"), []string{"203.0.113.9"}, "10.0.0.1"},
		{"untrusted peer cannot spoof XFF", proxies, tcp("198.51.100.7"), []string{"203.0.113.9"}, "198.51.100.7"},
		{"no XFF from a trusted proxy", proxies, tcp("10.0.0.1"), nil, "10.0.0.1"},
		{"empty XFF", proxies, tcp("10.0.0.1"), []string{""}, "10.0.0.1"},
		{"one hop", proxies, tcp("10.0.0.1"), []string{"203.0.113.9"}, "203.0.113.9"},
		{"rightmost untrusted wins over a spoofed left entry", proxies, tcp("10.0.0.1"),
			[]string{"1.1.1.1, 203.0.113.9, 10.0.0.2"}, "203.0.113.9"},
		{"garbage stops the walk at the last trusted hop", proxies, tcp("10.0.0.1"),
			[]string{"203.0.113.9, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"garbage right away gives the peer", proxies, tcp("10.0.0.1"), []string{"unknown"}, "10.0.0.1"},
		{"trailing comma is garbage", proxies, tcp("10.0.0.1"), []string{"203.0.113.9,"}, "10.0.0.1"},
		{"all hops trusted gives the leftmost", proxies, tcp("10.0.0.1"),
			[]string{"10.0.0.3,10.0.0.2"}, "10.0.0.3"},
		{"several XFF headers form one list", proxies, tcp("10.0.0.1"),
			[]string{"1.1.1.1, 198.51.100.1", "10.0.0.2"}, "198.51.100.1"},
		{"IPv4-mapped peer matches an IPv4 prefix", proxies, tcp("::ffff:10.0.0.1"),
			[]string{"203.0.113.9"}, "203.0.113.9"},
		{"IPv4-mapped peer is returned as IPv4", "", tcp("::ffff:198.51.100.7"), nil, "198.51.100.7"},
		{"IPv4-mapped XFF entry is returned as IPv4", proxies, tcp("10.0.0.1"),
			[]string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"IPv6 hops", proxies, tcp("::1"), []string{"2001:db8::9"}, "2001:db8::9"},
		{"entries with ports", proxies, tcp("10.0.0.1"),
			[]string{"[2001:db8::9]:443, 10.0.0.2:8080"}, "2001:db8::9"},
		{"IPv4 entry with port", proxies, tcp("10.0.0.1"), []string{"203.0.113.9:4711"}, "203.0.113.9"},
		{"zoned XFF entry is garbage", proxies, tcp("10.0.0.1"), []string{"fe80::9%eth0"}, "10.0.0.1"},
		{"zoned peer loses its zone and matches", proxies, tcp("fe80::1%eth0"),
			[]string{"203.0.113.9"}, "203.0.113.9"},
		{"unknown peer is 0.0.0.0", proxies, &net.UnixAddr{Name: "/run/ticketd.sock", Net: "unix"},
			[]string{"203.0.113.9"}, "0.0.0.0"},
		{"nil peer is 0.0.0.0", "", nil, nil, "0.0.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Resolver{Trusted: mustPrefixes(t, tc.trusted)}
			got := r.ClientIP(request(tc.remote, tc.xff...))
			if got != netip.MustParseAddr(tc.want) {
				t.Fatalf("ClientIP = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestZeroResolverIgnoresXFF(t *testing.T) {
	var r Resolver
	got := r.ClientIP(request(tcp("127.0.0.1"), "203.0.113.9"))
	if got != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("ClientIP = %v, want the peer", got)
	}
	var none *Resolver // a surface without one (admin.API.ClientIP unset)
	if got := none.ClientIP(request(tcp("127.0.0.1"), "203.0.113.9")); got != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("nil Resolver: ClientIP = %v, want the peer", got)
	}
}

func TestParsePrefixes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"10.0.0.0/8, 127.0.0.1", []string{"10.0.0.0/8", "127.0.0.1/32"}},
		{"::1,2001:db8::/32", []string{"::1/128", "2001:db8::/32"}},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}},
		{"::ffff:10.0.0.0/104, ::ffff:192.0.2.1", []string{"10.0.0.0/8", "192.0.2.1/32"}},
	} {
		got, err := ParsePrefixes(tc.in)
		if err != nil {
			t.Fatalf("ParsePrefixes(%q): %v", tc.in, err)
		}
		var want []netip.Prefix
		for _, w := range tc.want {
			want = append(want, netip.MustParsePrefix(w))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ParsePrefixes(%q) = %v, want %v", tc.in, got, want)
		}
	}
	for _, bad := range []string{"nope", "10.0.0.0/33", "10.0.0.0/8, 300.1.1.1", "fe80::1%eth0", "10.0.0.0/"} {
		if p, err := ParsePrefixes(bad); err == nil {
			t.Fatalf("ParsePrefixes(%q) = %v, want an error", bad, p)
		}
	}
}
