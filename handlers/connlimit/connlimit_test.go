package connlimit

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/logrepeat"
)

// server accepts on a wrapped loopback listener and keeps every accepted
// connection until the test closes it.
type server struct {
	l *Listener

	mu       sync.Mutex
	accepted []net.Conn
	notify   chan struct{}
}

func start(t *testing.T, limits Limits, log *slog.Logger) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{l: New(ln, limits, log), notify: make(chan struct{}, 1000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := s.l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted = append(s.accepted, c)
			s.mu.Unlock()
			s.notify <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		s.l.Close()
		<-done
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.accepted {
			c.Close()
		}
	})
	return s
}

func (s *server) addr() string { return s.l.Addr().String() }

// waitAccepted waits until the server has accepted one more connection.
func (s *server) waitAccepted(t *testing.T) net.Conn {
	t.Helper()
	select {
	case <-s.notify:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted[len(s.accepted)-1]
}

func dial(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refusal reads what a refused connection got: a response, then the
// connection's end.
func refusal(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no refusal read: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("the refused connection is still open (%v)", err)
	}
	return resp, string(b)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestPerIPCapRefusesBeyondItAndFreesPlacesOnClose(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	s := start(t, Limits{PerIP: 2}, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	dial(t, "127.0.0.1", s.addr())
	first := s.waitAccepted(t)
	dial(t, "127.0.0.1", s.addr())
	s.waitAccepted(t)

	resp, body := refusal(t, dial(t, "127.0.0.1", s.addr()))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"RATE_LIMITED"`) || !strings.Contains(body, `"retryAfter":1`) {
		t.Fatalf("third connection from one address: %d %v %s, want 429 RATE_LIMITED with Retry-After", resp.StatusCode, resp.Header, body)
	}
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if !strings.Contains(logged, "one client address is at its connection limit") || !strings.Contains(logged, "remote=127.0.0.1") {
		t.Errorf("refusal not logged with its address: %s", logged)
	}

	// Another address is not affected.
	dial(t, "127.0.0.2", s.addr())
	s.waitAccepted(t)

	// A closed connection gives its place back.
	first.Close()
	dial(t, "127.0.0.1", s.addr())
	s.waitAccepted(t)
	if got := s.l.Open(); got != 3 {
		t.Errorf("open connections: %d, want 3", got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestExemptPeersAreNotCappedPerIP(t *testing.T) {
	s := start(t, Limits{PerIP: 1, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.3/32")}}, quiet)
	for range 5 {
		dial(t, "127.0.0.3", s.addr())
		s.waitAccepted(t)
	}
	dial(t, "127.0.0.1", s.addr())
	s.waitAccepted(t)
	if resp, _ := refusal(t, dial(t, "127.0.0.1", s.addr())); resp.StatusCode != 429 {
		t.Fatalf("127.0.0.1 beyond its cap of 1: %d, want 429", resp.StatusCode)
	}
}

func TestTotalCapRefusesWith503AndCountsIt(t *testing.T) {
	s := start(t, Limits{Total: 2, PerIP: 10}, quiet)
	a := dial(t, "127.0.0.1", s.addr())
	s.waitAccepted(t)
	dial(t, "127.0.0.2", s.addr())
	s.waitAccepted(t)
	resp, body := refusal(t, dial(t, "127.0.0.3", s.addr()))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"SERVICE_UNAVAILABLE"`) {
		t.Fatalf("over the total cap: %d %s, want 503 SERVICE_UNAVAILABLE with Retry-After", resp.StatusCode, body)
	}
	if got := counter(t, s.l, "ticketd_connections_refused_total", "total"); got != 1 {
		t.Errorf("refused (total) = %v, want 1", got)
	}
	// The client closing its end frees the place once the server closes
	// its own, as fasthttp does when it reads the end.
	a.Close()
	s.mu.Lock()
	s.accepted[0].Close()
	s.mu.Unlock()
	dial(t, "127.0.0.3", s.addr())
	s.waitAccepted(t)
}

// counter reads one of the listener's counters: refusals by reason, or
// accept errors for "".
func counter(t *testing.T, l *Listener, name, label string) float64 {
	t.Helper()
	var c prometheus.Counter
	switch name {
	case "ticketd_connections_refused_total":
		c = l.stats.refused.WithLabelValues(label)
	case "ticketd_accept_errors_total":
		c = l.stats.acceptErrors
	default:
		t.Fatalf("no counter %s", name)
	}
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// flaky is a listener whose Accept fails with err for the first n calls.
type flaky struct {
	net.Listener
	mu  sync.Mutex
	n   int
	err error
}

func (f *flaky) Accept() (net.Conn, error) {
	f.mu.Lock()
	if f.n > 0 {
		f.n--
		f.mu.Unlock()
		return nil, f.err
	}
	f.mu.Unlock()
	return f.Listener.Accept()
}

// EMFILE and its kind are retried with backoff, never returned: fasthttp
// stops serving on any accept error but a timeout. They are logged at most
// once a second, with how many were not.
func TestAcceptErrorsAreRetriedAndLoggedOnceASecond(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			const failures = 12
			var logs bytes.Buffer
			var mu sync.Mutex
			// ticketd's logger: repeats collapsed into a line a second.
			log := slog.New(logrepeat.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil), logrepeat.Options{}))
			l := New(&flaky{Listener: ln, n: failures, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}},
				Limits{}, log)
			defer l.Close()
			dial(t, "127.0.0.1", l.Addr().String())
			start := time.Now()
			c, err := l.Accept()
			if err != nil {
				t.Fatalf("Accept returned %v, want the connection after the failures", err)
			}
			c.Close()
			elapsed := time.Since(start)
			mu.Lock()
			lines := strings.Count(logs.String(), "accept failed: retrying")
			mu.Unlock()
			// One a wall-clock second: n seconds span at most n+1 of them.
			if lines < 1 || lines > int(elapsed.Seconds())+2 {
				t.Errorf("%d lines for %d failures in %s: want one a second at most", lines, failures, elapsed)
			}
			if got := counter(t, l, "ticketd_accept_errors_total", ""); got != failures {
				t.Errorf("accept errors counted: %v, want %d", got, failures)
			}
		})
	}
}

// An accept error that says the listening socket is unusable ends
// Accept with that error at once: retrying it would spin for ever.
func TestPermanentAcceptErrorsAreReturned(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EBADF, syscall.EINVAL, syscall.ENOTSOCK} {
		t.Run(errno.Error(), func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := New(&flaky{Listener: ln, n: math.MaxInt, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}},
				Limits{}, quiet)
			defer l.Close()
			done := make(chan error, 1)
			go func() { _, err := l.Accept(); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, errno) {
					t.Fatalf("Accept: %v, want %v", err, errno)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Accept still retrying %v after 10 s", errno)
			}
		})
	}
}

// Closing the listener ends Accept, a backoff in progress included, with
// net.ErrClosed (fasthttp's Serve then returns nil).
func TestCloseEndsAcceptDuringABackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(&flaky{Listener: ln, n: math.MaxInt, err: syscall.EMFILE}, Limits{}, quiet)
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	// Let it fail and back off a few times.
	for counter(t, l, "ticketd_accept_errors_total", "") < 3 {
		time.Sleep(time.Millisecond)
	}
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
}

func TestBucketGroupsIPv6By64(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.9":           "203.0.113.9",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::",
		"2001:db8:1:2:ffff::1":  "2001:db8:1:2::",
		"2001:db8:1:3::1":       "2001:db8:1:3::",
		"::ffff:198.51.100.200": "198.51.100.200",
	} {
		a := clientip.Peer(&net.TCPAddr{IP: net.ParseIP(in)})
		if got := bucket(a); got != netip.MustParseAddr(want) {
			t.Errorf("bucket(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDefaultTotalLeavesRoomBelowTheFileLimit(t *testing.T) {
	for nofile, want := range map[uint64]int{
		1024:    768,   // 256 kept
		20_000:  18000, // a tenth kept
		65_536:  50000, // 58,983 by descriptors; the memory bound without a known limit
		256:     128,   // half kept, below 512
		0:       9000,
		100_000: 50000,
	} {
		if got := DefaultTotal(nofile, 0); got != want {
			t.Errorf("DefaultTotal(%d, no memory limit) = %d, want %d", nofile, got, want)
		}
	}
}

// The default total cap bounds memory too: a high descriptor limit does
// not let connections take more than half a container's memory, nor
// about 2 GB without a known limit.
func TestDefaultTotalIsBoundedByMemory(t *testing.T) {
	for _, c := range []struct {
		nofile, memory uint64
		want           int
	}{
		{1 << 20, 0, MaxDefaultTotal},                     // 943,718 by descriptors: 20 GB
		{1 << 20, 1 << 30, (1 << 30) / 2 / PerConnMemory}, // 1 GB container: 13,107
		{1 << 20, 256 << 20, (256 << 20) / 2 / PerConnMemory},
		{1024, 1 << 30, 768}, // descriptors bind first
		{1 << 20, 1 << 40, MaxDefaultTotal},
	} {
		if got := DefaultTotal(c.nofile, c.memory); got != c.want {
			t.Errorf("DefaultTotal(%d, %d) = %d, want %d", c.nofile, c.memory, got, c.want)
		}
		if got := DefaultTotal(c.nofile, c.memory); c.memory > 0 && int64(got)*PerConnMemory > int64(c.memory)/2 {
			t.Errorf("DefaultTotal(%d, %d) = %d connections: %d bytes, over half the memory", c.nofile, c.memory, got, int64(got)*PerConnMemory)
		}
	}
}

// The limit leaves at least the live heap again above the live heap, so a
// large live heap is collected about as often as at Go's default
// GOGC=100 (less the stacks and spans beside it: the next test); open
// connections raise it.
func TestMemoryLimitHeadroomFollowsTheLiveHeap(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct{ base, open, live, want int64 }{
		{96 * mb, 0, 10 * mb, 96 * mb},                       // a sale's heap: the base
		{96 * mb, 0, 20 * mb, 96 * mb},                       // 20 + 64 < 96
		{96 * mb, 0, 40 * mb, 40*mb + minHeadroom},           // the least headroom
		{96 * mb, 0, 100 * mb, 200 * mb},                     // the live heap again, not 164 MB
		{96 * mb, 5000, 30 * mb, 96*mb + 5000*PerConnMemory}, // a flood: the connections
	} {
		if got := memoryLimit(c.base, c.open, c.live, 0); got != c.want {
			t.Errorf("memoryLimit(%d MB, %d conns, %d MB live) = %.1f MB, want %.1f MB", c.base/mb, c.open, c.live/mb,
				float64(got)/mb, float64(c.want)/mb)
		}
	}
}

// The bench's waiting room as a node saw it (queue-sellout: 6,033
// connections polling and long-polling, 120 MB live, 80 MB of stacks,
// partly used spans and metadata beside the heap, which Go's limit counts
// too): the limit leaves the heap the live heap again for garbage, as at
// GOGC=100. Counted at 24 KB a connection the limit was twice the live
// heap, 240 MB, and the heap collected every 40 MB allocated.
func TestMemoryLimitLeavesAWaitingRoomsHeapItsGarbage(t *testing.T) {
	const mb = 1 << 20
	const base, open, live, beside = 96 * mb, 6033, 120 * mb, 80 * mb
	limit := memoryLimit(base, open, live, 0)
	if heap := limit - beside; heap < 2*live {
		t.Fatalf("memoryLimit(96 MB, %d conns, 120 MB live) = %d MB: %d MB for the heap beside 80 MB of stacks and spans, want at least twice the live heap",
			open, limit/mb, heap/mb)
	}
}

// In a container the limit stays below the cgroup's: twice a 260 MB live
// heap is 520 MB, past a 512 MB container, where the kernel would kill
// ticketd before the collector ran. Below 90% of it, the limit is the
// uncapped one.
func TestMemoryLimitStaysBelowTheContainerLimit(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct{ base, open, live, ceiling, want int64 }{
		{96 * mb, 0, 200 * mb, 512 * mb, 400 * mb},              // 400 MB < 460.8 MB: uncapped
		{96 * mb, 0, 260 * mb, 512 * mb, 512 * mb / 1000 * 900}, // 520 MB: capped
		{96 * mb, 0, 600 * mb, 512 * mb, 512 * mb / 1000 * 900}, // live past the cap: still the cap
		{96 * mb, 5000, 30 * mb, 128 * mb, 128 * mb / 1000 * 900},
		{96 * mb, 0, 260 * mb, 0, 520 * mb}, // no limit known
		{96 * mb, 0, 260 * mb, 4 << 30, 520 * mb},
	} {
		got := memoryLimit(c.base, c.open, c.live, c.ceiling)
		if got != c.want {
			t.Errorf("memoryLimit(%d MB, %d conns, %d MB live, %d MB cgroup) = %.1f MB, want %.1f MB", c.base/mb, c.open,
				c.live/mb, c.ceiling/mb, float64(got)/mb, float64(c.want)/mb)
		}
		if c.ceiling > 0 && got > c.ceiling*9/10 {
			t.Errorf("memoryLimit under a %d MB cgroup = %.1f MB: above 90%% of it", c.ceiling/mb, float64(got)/mb)
		}
	}
}

// GovernMemory sets the process's soft memory limit from the open
// connections, and lifts it when the listener closes.
func TestGovernMemoryFollowsOpenConnections(t *testing.T) {
	const base = 1 << 40 // far above this test binary's heap: no GC effect
	s := start(t, Limits{}, quiet)
	done := make(chan struct{})
	go func() { s.l.governMemory(base, 0, time.Millisecond); close(done) }()
	waitLimit := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for debug.SetMemoryLimit(-1) != want {
			if time.Now().After(deadline) {
				t.Fatalf("memory limit %d, want %d", debug.SetMemoryLimit(-1), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitLimit(base)
	dial(t, "127.0.0.1", s.addr())
	s.waitAccepted(t)
	dial(t, "127.0.0.1", s.addr())
	s.waitAccepted(t)
	waitLimit(base + 2*PerConnMemory)
	s.l.Close()
	<-done
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit after Close: %d, want none", got)
	}
}

// GovernMemory's limit is capped at 90% of the cgroup's: the cap the
// process gets, not only the function's answer.
func TestGovernMemoryCapsAtTheContainerLimit(t *testing.T) {
	const base, ceiling = 1 << 40, 1 << 40 // far above this test binary's heap
	s := start(t, Limits{}, quiet)
	done := make(chan struct{})
	go func() { s.l.governMemory(base, ceiling, time.Millisecond); close(done) }()
	want := int64(ceiling / 1000 * 900)
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) != want {
		if time.Now().After(deadline) {
			t.Fatalf("memory limit %d, want %d (90%% of the cgroup's)", debug.SetMemoryLimit(-1), want)
		}
		time.Sleep(time.Millisecond)
	}
	s.l.Close()
	<-done
}
