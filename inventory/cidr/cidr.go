// Package cidr parses the address ranges operators write: a channel's IP
// allowlist and ticketd's trusted proxies. Both are matched against
// unmapped, zone-free client addresses, so the ranges are brought to that
// form here, once for both.
package cidr

import (
	"errors"
	"net/netip"
	"strings"
)

// Parse accepts a CIDR or a bare address (a prefix of one address). An
// IPv4-mapped range (::ffff:10.0.0.0/104) becomes its IPv4 form
// (10.0.0.0/8); an IPv6 zone is refused, since no client address has one.
func Parse(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if a.Zone() != "" {
			return netip.Prefix{}, errors.New("an IPv6 zone is not allowed")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return p.Masked(), nil // wider than the mapped block: stays IPv6
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}
