package lockout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// newGuard returns a Guard on a key space of its own that allows perIP
// failures a minute from a client (0: the default).
func newGuard(t *testing.T, perIP int64) *Guard {
	t.Helper()
	c, space := redistest.New(t)
	return &Guard{Limiter: &ratelimit.Limiter{Redis: c, Space: space}, PerIP: perIP, Logger: slog.New(slog.DiscardHandler)}
}

// lock fails from a once more than g.PerIP allows, which locks it, and
// returns the last failure's wait.
func lock(g *Guard, a netip.Addr) time.Duration {
	var w time.Duration
	for range g.PerIP + 1 {
		w = g.Failed(a, "")
	}
	return w
}

var ip = netip.MustParseAddr

func TestIPIsLockedAfterItsLimitOfFailures(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 5)
	a, b := ip("203.0.113.7"), ip("203.0.113.8")
	for i := 1; i <= 5; i++ {
		if w := g.Failed(a, ""); w != 0 {
			t.Fatalf("failure %d of 5 locked the IP for %v", i, w)
		}
		if w := g.IPLocked(a); w != 0 {
			t.Fatalf("IP locked for %v after %d failures of 5", w, i)
		}
	}
	// At 5 a minute the bucket allows a failure again within 12 s.
	w := g.Failed(a, "")
	if w <= 0 || w > 12*time.Second {
		t.Fatalf("sixth failure: wait %v, want in (0, 12s]", w)
	}
	if l := g.IPLocked(a); l <= 0 || l > w {
		t.Fatalf("IPLocked = %v after a lock of %v", l, w)
	}
	if l := g.IPLocked(b); l != 0 {
		t.Fatalf("another IP is locked for %v", l)
	}
}

func TestIPv6ClientsCountByTheirSlash64(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 3)
	for i := 1; i <= 4; i++ {
		g.Failed(ip(fmt.Sprintf("2001:db8:0:7::%x", i)), "")
	}
	if g.IPLocked(ip("2001:db8:0:7:ffff::1")) == 0 {
		t.Fatal("another address of the same /64 is not locked")
	}
	if w := g.IPLocked(ip("2001:db8:0:8::1")); w != 0 {
		t.Fatalf("the next /64 is locked for %v", w)
	}
}

// A neighbour spending the /64's limit does not lock another address of
// it for AddrLocked (a channel's server on its allowlist); an address that
// fails while the /64 is locked is locked itself.
func TestAddrLockedHoldsOnlyTheAddressesThatFailed(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 3)
	neighbour, server := ip("2001:db8:0:9::bad"), ip("2001:db8:0:9::1")
	lock(g, neighbour)
	if g.IPLocked(server) == 0 || g.AddrLocked(neighbour) == 0 {
		t.Fatal("the /64 or the failing address is not locked")
	}
	if w := g.AddrLocked(server); w != 0 {
		t.Fatalf("an address that never failed is locked for %v by its neighbour", w)
	}
	if g.Failed(server, "") == 0 || g.AddrLocked(server) == 0 {
		t.Fatal("an address failing while its /64 is locked is not locked itself")
	}
	// An IPv4 client is its address.
	v4 := ip("192.0.2.44")
	lock(g, v4)
	if g.AddrLocked(v4) == 0 {
		t.Fatal("a locked IPv4 client is not locked for AddrLocked")
	}
}

func TestKeyIsLockedByFailuresFromManyIPs(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 0)
	g.PerKey = 4
	var locked time.Duration
	for i := 1; i <= 5; i++ {
		locked = g.Failed(ip(fmt.Sprintf("198.51.100.%d", i)), "ch_a")
	}
	if locked <= 0 || g.KeyLocked("ch_a") <= 0 {
		t.Fatalf("five failures for a key of limit 4: wait %v, KeyLocked %v", locked, g.KeyLocked("ch_a"))
	}
	if w := g.KeyLocked("ch_b"); w != 0 {
		t.Fatalf("another key is locked for %v", w)
	}
	for i := 1; i <= 5; i++ {
		if w := g.IPLocked(ip(fmt.Sprintf("198.51.100.%d", i))); w != 0 {
			t.Fatalf("an IP with one failure is locked for %v", w)
		}
	}
	// Failures without a key (unknown keys, sessions) never reach the key
	// table, so junk cannot fill it.
	for i := 0; i < 50; i++ {
		g.Failed(ip("192.0.2.1"), "")
	}
	if n := g.keys.len(); n != 1 {
		t.Fatalf("key table holds %d entries, want only ch_a", n)
	}
}

func TestLockEndsWhenTheBucketAllowsAgain(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 600) // one failure every 100 ms
	a := ip("203.0.113.9")
	var w time.Duration
	for i := 0; w == 0; i++ {
		if i == 6000 {
			t.Fatal("6000 failures at 600 a minute never locked the IP")
		}
		w = g.Failed(a, "")
	}
	if w <= 0 || w > 100*time.Millisecond {
		t.Fatalf("lock of %v, want in (0, 100ms]", w)
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.IPLocked(a) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the lock did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The bucket has room for one failure again.
	if w := g.Failed(a, ""); w != 0 {
		t.Fatalf("first failure after the lock ended: locked again for %v", w)
	}
}

func TestNilGuardThrottlesNothing(t *testing.T) {
	t.Parallel()
	var g *Guard
	if g.IPLocked(ip("192.0.2.1")) != 0 || g.KeyLocked("ch") != 0 || g.Failed(ip("192.0.2.1"), "ch") != 0 {
		t.Fatal("a nil Guard locked something")
	}
}

func TestUnreachableRedisCountsNothingAndLocksNothing(t *testing.T) {
	t.Parallel()
	opt, err := rueidis.ParseURL(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	// One connection, closed at once by Close: a Redis Cluster client
	// closes its connections in the background, and a command sent right
	// after would still reach Redis.
	opt.ForceSingleClient = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	var logs bytes.Buffer
	g := &Guard{Limiter: &ratelimit.Limiter{Redis: c}, PerIP: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for i := 0; i < 3; i++ {
		if w := g.Failed(ip("192.0.2.1"), "ch"); w != 0 {
			t.Fatalf("locked for %v without Redis", w)
		}
	}
	if !strings.Contains(logs.String(), "not counted") {
		t.Fatalf("nothing logged: %q", logs.String())
	}
}

func TestLockLogIsRateLimited(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 1)
	var logs bytes.Buffer
	g.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	start := time.Now()
	for i := 0; i < 200; i++ {
		lock(g, ip(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)))
	}
	out := logs.String()
	lines := strings.Count(out, "\n")
	if max := int(time.Since(start)/time.Second) + 1; lines < 1 || lines > max {
		t.Fatalf("%d log lines for 200 locks in %v, want 1 to %d:\n%s", lines, time.Since(start), max, out)
	}
	if !strings.Contains(out, "ip=10.0.0.1 ") {
		t.Fatalf("the first lock does not name its IP: %s", out)
	}
}

// The lock's length is logged in seconds, whatever the log's format: a
// JSON handler writes a Duration as nanoseconds.
func TestLockLogSaysSeconds(t *testing.T) {
	t.Parallel()
	g := newGuard(t, 1)
	var logs bytes.Buffer
	g.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	a := ip("192.0.2.77")
	if lock(g, a) == 0 {
		t.Fatal("two failures at 1 a minute did not lock")
	}
	var line struct {
		RetryAfterSeconds *float64
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || line.RetryAfterSeconds == nil ||
		*line.RetryAfterSeconds <= 0 || *line.RetryAfterSeconds > 60 {
		t.Fatalf("want retryAfterSeconds in (0, 60]: %s", logs.String())
	}
}
