//go:build !race

package lockout

import (
	"net/netip"
	"testing"
)

// IPLocked (or AddrLocked) runs on every authentication, KeyLocked on every
// keyed call from off the allowlist.
func TestLockedDoesNotAllocate(t *testing.T) {
	g := &Guard{}
	a := netip.MustParseAddr("2001:db8::1")
	check := func(state string) {
		t.Helper()
		if n := testing.AllocsPerRun(100, func() { g.IPLocked(a); g.AddrLocked(a); g.KeyLocked("ch_a") }); n != 0 {
			t.Errorf("%s: %v allocations per lookup, want 0", state, n)
		}
	}
	check("empty tables")
	now := clock()
	g.ips.lock(netip.MustParseAddr("192.0.2.1"), now+int64(1e12), now, 8)
	g.addrs.lock(netip.MustParseAddr("2001:db8::2"), now+int64(1e12), now, 8)
	g.keys.lock("ch_b", now+int64(1e12), now, 8)
	check("tables with locks")
}
