// Package connlimit wraps ticketd's listener so that no client can stop or
// starve the process through its connections. fasthttp's Server.Serve
// returns on any accept error but a timeout, and ticketd then stops; so
// every accept error (EMFILE, ENFILE, ENOBUFS, ...) is retried here, with
// backoff, and only a closed or unusable listener (EBADF, EINVAL,
// ENOTSOCK) ends Serve. Connections are capped in total, below the
// process's file descriptor limit, and per client address (the socket's
// peer, IPv6 by /64), with exempt prefixes for load balancers; a
// connection over a cap gets a short envelope and is closed at once.
//
// Every failed accept and refused connection is logged: a flood of them
// is one line a second with its count through ticketd's logger
// (handlers/logrepeat), and counted in the metrics.
package connlimit

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/handlers/clientip"
)

// Limits are the caps a Listener enforces.
type Limits struct {
	// Total caps the connections open at once; 0 means no cap.
	Total int
	// PerIP caps the connections open at once from one client address
	// (an IPv6 /64); 0 means no cap.
	PerIP int
	// Exempt are peers the per-IP cap does not apply to (load balancers
	// and trusted proxies, which carry many clients on one address). The
	// total cap applies to them too: it protects the process's file
	// descriptors.
	Exempt []netip.Prefix
}

// Accept's backoff after a failed accept: doubling from minBackoff up to
// maxBackoff, reset by the next accepted connection. The ceiling is short
// so that ticketd serves again within a fraction of a second once file
// descriptors are free.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = 250 * time.Millisecond
)

// Listener is a net.Listener that never fails on a temporary accept error
// and enforces Limits. Its connections give their place back when closed.
type Listener struct {
	net.Listener
	limits Limits
	log    *slog.Logger
	stats  *stats

	closed    chan struct{}
	closeOnce sync.Once

	open  atomic.Int64
	mu    sync.Mutex
	perIP map[netip.Addr]int
}

// New wraps ln. log receives a line per failed accept and refused
// connection (nil: slog.Default()); give it a logger that collapses
// repeats (handlers/logrepeat), as ticketd's does.
func New(ln net.Listener, limits Limits, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.Default()
	}
	l := &Listener{Listener: ln, limits: limits, log: log, closed: make(chan struct{}), perIP: map[netip.Addr]int{}}
	l.stats = newStats(l)
	return l
}

// Accept returns the next connection within the limits. A connection over
// a cap is answered and closed here, and Accept waits for the next; a
// failed accept is retried after a backoff. Only a closed listener ends
// it, with net.ErrClosed as fasthttp expects, or one that can never
// accept again (permanent), with its error.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			if permanent(err) {
				l.log.Error("accept failed for good: the listening socket is unusable; the server stops", "err", err)
				return nil, err
			}
			delay = min(max(2*delay, minBackoff), maxBackoff)
			l.stats.acceptErrors.Inc()
			l.log.Error("accept failed: retrying (ticketd keeps serving the connections it has)",
				"err", err, "retry_in", delay.String())
			select {
			case <-time.After(delay):
			case <-l.closed:
				return nil, net.ErrClosed
			}
			continue
		}
		delay = 0
		if ac := l.admit(c); ac != nil {
			return ac, nil
		}
	}
}

// permanent reports whether an accept error says the listening socket
// itself is unusable (closed underneath, never listening, not a socket):
// retrying would spin for ever on a server that can take no connection,
// so it ends Serve, as a closed listener does.
func permanent(err error) bool {
	return errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSOCK)
}

// Close closes the listener and ends a backoff in progress.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Open is the number of connections open now.
func (l *Listener) Open() int64 { return l.open.Load() }

// admit counts c against the caps and returns it wrapped, or refuses it
// (answered and closed) and returns nil.
func (l *Listener) admit(c net.Conn) net.Conn {
	n := l.open.Add(1)
	if l.limits.Total > 0 && n > int64(l.limits.Total) {
		l.open.Add(-1)
		l.log.Warn("connection refused: the total connection limit is reached (TICKETD_MAX_CONNS)",
			"limit", l.limits.Total)
		l.refuse(c, refusedTotal)
		return nil
	}
	ac := &conn{Conn: c, l: l}
	if l.limits.PerIP > 0 {
		addr := clientip.Peer(c.RemoteAddr())
		if !l.exempt(addr) {
			ac.key, ac.counted = bucket(addr), true
			l.mu.Lock()
			k := l.perIP[ac.key] + 1
			if k <= l.limits.PerIP {
				l.perIP[ac.key] = k
			}
			l.mu.Unlock()
			if k > l.limits.PerIP {
				l.open.Add(-1)
				l.log.Warn("connection refused: one client address is at its connection limit (TICKETD_MAX_CONNS_PER_IP)",
					"remote", ac.key.String(), "limit", l.limits.PerIP)
				l.refuse(c, refusedPerIP)
				return nil
			}
		}
	}
	return ac
}

// release gives back the places c held.
func (l *Listener) release(c *conn) {
	l.open.Add(-1)
	if !c.counted {
		return
	}
	l.mu.Lock()
	if k := l.perIP[c.key] - 1; k > 0 {
		l.perIP[c.key] = k
	} else {
		delete(l.perIP, c.key) // no entry kept per address ever seen
	}
	l.mu.Unlock()
}

func (l *Listener) exempt(a netip.Addr) bool {
	for _, p := range l.limits.Exempt {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// conn is an admitted connection; closing it (once, whoever does it
// first: the serving worker or a shutdown) gives its places back.
type conn struct {
	net.Conn
	l       *Listener
	key     netip.Addr
	counted bool // counted under key against the per-IP cap
	closed  atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c)
	}
	return err
}

// bucket is the per-IP key of a: the address itself for IPv4, its /64 for
// IPv6, since one subscriber commonly holds a whole /64 and could
// otherwise open the cap's worth of connections from each address of it.
func bucket(a netip.Addr) netip.Addr {
	if a.Is4() {
		return a
	}
	p, _ := a.Prefix(64)
	return p.Addr()
}
