// Package lockout throttles failed authentications: wrong channel keys or
// secrets, forged buyer sessions, wrong admin tokens. Failures are counted
// in Redis (ratelimit's GCRA buckets, Redis time, so every node agrees) per
// client IP and per channel key; a caller over its limit is locked out until
// its bucket allows a failure again.
//
// Each node also remembers the locks it has seen, in a bounded table of
// expiring entries, so a locked caller is refused before its secret is even
// checked and without a Redis call. A successful authentication never
// touches Redis: only failures are counted.
//
// An IPv6 client is counted and locked by its /64, which a hosting
// provider may share among tenants; so each IPv6 address that failed while
// its /64 was locked is remembered too, and AddrLocked tells a lock the
// address earned itself from its neighbours'. The partner surface holds a
// channel's own server (on the allowlist of the key it presents) by the
// former only, so a neighbour cannot lock it out.
package lockout

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/handlers/ratelimit"
)

// Defaults, in failed authentications a minute (docs/decisions.md). A
// partner's servers or a NAT of buyers do not fail 30 times a minute by
// accident; a key is sprayed from many addresses, so its limit is lower.
const (
	DefaultPerIP  = 30
	DefaultPerKey = 20
)

const (
	// maxLocked bounds each table of locks (clients, IPv6 addresses,
	// keys): at about 60 bytes an entry, 4 MB each at most.
	maxLocked = 1 << 16
	// countTimeout bounds the Redis calls that count one failure.
	countTimeout = time.Second
)

// Guard counts failed authentications and refuses locked callers. A nil
// Guard throttles nothing. The zero value with a Limiter uses the defaults.
type Guard struct {
	Limiter *ratelimit.Limiter
	// PerIP and PerKey are the failures a minute allowed from one client
	// IP (an IPv6 client by its /64) and for one channel key; 0 means the
	// default.
	PerIP, PerKey int64
	Logger        *slog.Logger

	ips table[netip.Addr] // by client (IPv6: the /64)
	// addrs are the IPv6 addresses that failed while their /64 was
	// locked (an IPv4 client is its address: ips holds it).
	addrs table[netip.Addr]
	keys  table[string]
	logs  logGate
}

// IPLocked returns how long ip is still locked out, 0 when it is not. It
// never calls Redis.
func (g *Guard) IPLocked(ip netip.Addr) time.Duration {
	if g == nil {
		return 0
	}
	return g.ips.locked(clientOf(ip))
}

// AddrLocked returns how long ip itself is still locked out, 0 when it
// is not: the lock of its /64 counts only if this address failed while
// it lasted. It is for callers on the allowlist of the key they present,
// so that a neighbour in a shared /64 cannot lock a channel's server out.
// It never calls Redis.
func (g *Guard) AddrLocked(ip netip.Addr) time.Duration {
	if g == nil {
		return 0
	}
	if !ip.Is6() {
		return g.ips.locked(ip)
	}
	return g.addrs.locked(ip)
}

// KeyLocked returns how long the key of the channel id is still locked
// out, 0 when it is not. It never calls Redis. Callers ask only for callers off
// the channel's allowlist: strangers spraying a key cannot lock the channel
// out of its own servers.
func (g *Guard) KeyLocked(id string) time.Duration {
	if g == nil || id == "" {
		return 0
	}
	return g.keys.locked(id)
}

// Failed counts a failed authentication from ip, and against the key of
// the channel keyID unless it is "" (unknown keys, sessions and admin
// tokens count per IP only, so junk keys cannot fill the table). It returns how long the
// caller is now locked out, 0 when it is not. If Redis cannot be reached
// the failure is not counted (logged, at most once a second): the attempt
// has failed anyway, and a correct one never needs Redis here.
func (g *Guard) Failed(ip netip.Addr, keyID string) time.Duration {
	if g == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), countTimeout)
	defer cancel()
	var wait time.Duration
	if keyID != "" {
		if w := g.count(ctx, "authfail:key:"+keyID, pick(g.PerKey, DefaultPerKey)); w > 0 {
			now := clock()
			g.keys.lock(keyID, now+int64(w), now, maxLocked)
			g.warn("channel key locked after failed authentications", "channel", keyID, "retryAfterSeconds", seconds(w))
			wait = w
		}
	}
	c := clientOf(ip)
	name := c.String()
	if c.Is6() {
		name += "/64"
	}
	if w := g.count(ctx, "authfail:ip:"+name, pick(g.PerIP, DefaultPerIP)); w > 0 {
		now := clock()
		g.ips.lock(c, now+int64(w), now, maxLocked)
		if ip.Is6() {
			g.addrs.lock(ip, now+int64(w), now, maxLocked)
		}
		g.warn("client IP locked after failed authentications", "ip", name, "retryAfterSeconds", seconds(w))
		wait = max(wait, w)
	}
	return wait
}

// count takes one failure from bucket and returns the wait when it is
// refused.
func (g *Guard) count(ctx context.Context, bucket string, perMinute int64) time.Duration {
	r, err := g.Limiter.Allow(ctx, bucket, perMinute)
	if err != nil {
		g.warn("failed authentication not counted", "err", err)
		return 0
	}
	if r.Allowed {
		return 0
	}
	return max(r.RetryAfter, time.Millisecond)
}

// warn logs at most one line a second, so an attack cannot flood the log;
// each line says how many were left out before it.
func (g *Guard) warn(msg string, args ...any) {
	left, ok := g.logs.allow(clock())
	if !ok {
		return
	}
	log := g.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Warn("lockout: "+msg, append(args, "suppressed", left)...)
}

// seconds is d for a log line: a JSON handler would write a Duration as
// nanoseconds, easily read as seconds.
func seconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

func pick(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// clientOf is the address a client is counted and locked by: an IPv6
// client by its /64, the least a subscriber is given, so one host cannot
// step around its lock by changing address inside it.
func clientOf(ip netip.Addr) netip.Addr {
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// epoch starts the monotonic clock the tables use.
var epoch = time.Now()

// clock is monotonic nanoseconds since epoch.
func clock() int64 { return int64(time.Since(epoch)) }

// logGate lets one log line through a second.
type logGate struct {
	next       atomic.Int64
	suppressed atomic.Int64
}

// allow reports whether a line may be logged now, and how many were
// suppressed since the last one.
func (g *logGate) allow(now int64) (int64, bool) {
	n := g.next.Load()
	if now < n || !g.next.CompareAndSwap(n, now+int64(time.Second)) {
		g.suppressed.Add(1)
		return 0, false
	}
	return g.suppressed.Swap(0), true
}
