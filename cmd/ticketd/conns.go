package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/connlimit"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/server"
)

// connConfig is what keeps one client from stopping or starving ticketd
// through its connections and bodies (README, Running in production;
// docs/decisions.md, Operations).
type connConfig struct {
	// MaxConns is TICKETD_MAX_CONNS; 0 (unset) derives it from the file
	// descriptor limit and the cgroup memory limit (connlimit.DefaultTotal).
	MaxConns int
	// MaxConnsPerIP is TICKETD_MAX_CONNS_PER_IP; 0 turns the cap off.
	MaxConnsPerIP int
	// Exempt is TICKETD_CONN_LIMIT_EXEMPT: peers the per-IP cap does not
	// apply to (TICKETD_TRUSTED_PROXIES are exempt too).
	Exempt []netip.Prefix
	// BodyMemory is TICKETD_BODY_MEMORY_MB in bytes.
	BodyMemory int64
}

func loadConnConfig() (connConfig, error) {
	c := connConfig{MaxConnsPerIP: connlimit.DefaultPerIP, BodyMemory: server.DefaultBodyMemory}
	for _, n := range []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"TICKETD_MAX_CONNS", &c.MaxConns, 1, 10_000_000},
		{"TICKETD_MAX_CONNS_PER_IP", &c.MaxConnsPerIP, 0, 10_000_000},
	} {
		v, set := env(n.name, "")
		if !set {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < n.min || i > n.max {
			return c, fmt.Errorf("%s=%q: want a whole number from %d to %d", n.name, v, n.min, n.max)
		}
		*n.dst = i
	}
	if v, set := env("TICKETD_BODY_MEMORY_MB", ""); set {
		mb, err := strconv.Atoi(v)
		if err != nil || mb < 1 || mb > 1<<16 {
			return c, fmt.Errorf("TICKETD_BODY_MEMORY_MB=%q: want a whole number of megabytes from 1 to 65536", v)
		}
		c.BodyMemory = int64(mb) << 20
	}
	v, _ := env("TICKETD_CONN_LIMIT_EXEMPT", "")
	exempt, err := clientip.ParsePrefixes(v)
	if err != nil {
		return c, fmt.Errorf("TICKETD_CONN_LIMIT_EXEMPT: %w", err)
	}
	c.Exempt = exempt
	return c, nil
}

// connGuard is the API listener's caps and the server's body budget, with
// their metrics on m.
type connGuard struct {
	limits connlimit.Limits
	bodies *server.Bodies
	// bodyMemory is the body budget's size.
	bodyMemory int64
	m          *metrics.Metrics
	log        *slog.Logger
}

// newConnGuard resolves the caps: the total from the file descriptor limit
// unless set, the per-IP exemptions with the trusted proxies added (a load
// balancer carries many clients on one address; the per-IP cap there is
// the clients' rate limits, by their forwarded address).
func newConnGuard(c connConfig, trusted []netip.Prefix, m *metrics.Metrics, log *slog.Logger) *connGuard {
	nofile, memLimit := connlimit.FileLimit(), connlimit.MemoryLimit()
	l := connlimit.Limits{Total: c.MaxConns, PerIP: c.MaxConnsPerIP, Exempt: append(append([]netip.Prefix(nil), c.Exempt...), trusted...)}
	if l.Total == 0 {
		l.Total = connlimit.DefaultTotal(nofile, memLimit)
	} else if nofile > 0 && uint64(l.Total) >= nofile {
		log.Warn("TICKETD_MAX_CONNS is not below the file descriptor limit: accepts will fail (EMFILE) before the cap is reached; raise the limit (ulimit -n, systemd LimitNOFILE)",
			"max_conns", l.Total, "fd_limit", nofile)
	}
	if nofile > 0 && nofile < 8192 {
		log.Warn("the file descriptor limit is low: it caps the client connections ticketd can serve; raise it (ulimit -n, systemd LimitNOFILE)",
			"fd_limit", nofile, "max_conns", l.Total)
	}
	log.Info("connection limits", "max_conns", l.Total, "max_conns_per_ip", l.PerIP, "exempt_prefixes", len(l.Exempt),
		"fd_limit", nofile, "memory_limit_bytes", memLimit, "body_memory_bytes", c.BodyMemory)
	g := &connGuard{limits: l, bodies: server.NewBodies(c.BodyMemory, log), bodyMemory: c.BodyMemory, m: m, log: log}
	m.Registry().MustRegister(g.bodies.Collectors()...)
	return g
}

// memoryBase is the part of the soft memory limit that does not follow
// the open connections, beside the body budget: ticketd's heap between
// two collections in a sale (under 100 MB in the bench's flash at 128
// connections) with room to spare.
const memoryBase = 64 << 20

// wrap puts the caps around the API listener; with memoryLimit it also
// keeps the Go soft memory limit following the open connections until the
// listener closes.
func (g *connGuard) wrap(ln net.Listener, memoryLimit bool) net.Listener {
	cl := connlimit.New(ln, g.limits, g.log)
	g.m.Registry().MustRegister(cl.Collectors()...)
	if memoryLimit {
		go cl.GovernMemory(memoryBase+g.bodyMemory, 250*time.Millisecond)
	}
	return cl
}
