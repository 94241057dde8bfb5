//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mrand "math/rand/v2"

	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// No client can stop or starve ticketd through its connections (issue 17):
// real sockets against a real ticketd process started under a file
// descriptor limit. Before, 1,100 idle connections under `ulimit -n 1024`
// made accept fail with EMFILE and the process exit, and 5,000 connections
// trickling 65,000-byte bodies took its memory from 88 to 420 MB.
func TestSecurityOneClientCannotStopTicketd(t *testing.T) {
	bin := buildTicketd(t)

	// The total cap, derived from the fd limit, refuses what is over it:
	// nothing reaches EMFILE.
	t.Run("idle connections over the total cap are refused", func(t *testing.T) {
		t.Parallel()
		p := startLimited(t, bin, 1024)
		idleConnectionsThenHealth(t, p, "connection refused: the total connection limit is reached", 1, "ticketd_connections_refused_total{reason=\"total\"}")
	})
	// A cap set above the fd limit lets accept fail with EMFILE: it is
	// retried with backoff and logged once a second, never fatal.
	t.Run("accept failing with EMFILE is retried", func(t *testing.T) {
		t.Parallel()
		p := startLimited(t, bin, 1024, "TICKETD_MAX_CONNS=4000")
		// Twice: still failing, and retrying, a second later.
		idleConnectionsThenHealth(t, p, "accept failed: retrying", 2, "ticketd_accept_errors_total")
	})
	t.Run("per-IP cap, a second address, exempt ones", func(t *testing.T) {
		t.Parallel()
		perIPCap(t, startLimited(t, bin, 1024, "TICKETD_MAX_CONNS_PER_IP=20", "TICKETD_CONN_LIMIT_EXEMPT=127.0.0.3/32",
			"TICKETD_TRUSTED_PROXIES=127.0.0.4/32"))
	})
	t.Run("slow bodies stay within the body budget", func(t *testing.T) {
		t.Parallel()
		slowBodies(t, startLimited(t, bin, 16384), 8*time.Second)
	})
}

// idleConnectionsThenHealth opens 1,100 connections that each send a
// request line and nothing more, waits for want in the log (times lines),
// checks it was logged at most once a second, closes the connections and
// waits for /healthz: the process lived through it.
func idleConnectionsThenHealth(t *testing.T, p *limitedTicketd, want string, times int, metric string) {
	start := time.Now()
	conns := make([]net.Conn, 0, 1100)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1100 {
		c, err := net.DialTimeout("tcp", p.addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		// Refused ones are closed by ticketd: the write may fail, which
		// is the point.
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\n")
		conns = append(conns, c)
	}
	p.waitLogCount(t, want, times)
	elapsed := time.Since(start)
	if n := strings.Count(p.log.String(), want); n > int(elapsed.Seconds())+2 {
		t.Errorf("%q logged %d times in %s: want at most one line a second", want, n, elapsed.Round(time.Millisecond))
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	closed := time.Now()
	p.waitHealthy(t, "127.0.0.1")
	t.Logf("/healthz answered %s after the 1,100 connections closed", time.Since(closed).Round(time.Millisecond))
	if v := p.metric(t, metric); v < 1 {
		t.Errorf("%s = %v, want at least 1", metric, v)
	}
}

// perIPCap: 20 connections from 127.0.0.1 are served, the 21st is refused
// with 429, another address gets in meanwhile, an exempt one and a trusted
// proxy are not capped, and a closed connection frees its place.
func perIPCap(t *testing.T, p *limitedTicketd) {
	var held []*bufio.ReadWriter
	var raw []net.Conn
	defer func() {
		for _, c := range raw {
			c.Close()
		}
	}()
	keepAlive := func(from string) (net.Conn, *bufio.ReadWriter, int) {
		c := dialFrom(t, from, p.addr)
		rw := bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))
		return c, rw, healthOn(t, rw)
	}
	for i := range 20 {
		c, rw, st := keepAlive("127.0.0.1")
		raw = append(raw, c)
		if st != 200 {
			t.Fatalf("connection %d from 127.0.0.1: /healthz %d, want 200", i+1, st)
		}
		held = append(held, rw)
	}
	c := dialFrom(t, "127.0.0.1", p.addr)
	st, body := readRefusal(t, c)
	if st != 429 || !strings.Contains(body, `"code":"RATE_LIMITED"`) {
		t.Fatalf("21st connection from 127.0.0.1: %d %s, want 429 RATE_LIMITED and the connection closed", st, body)
	}
	if st := p.health(t, "127.0.0.2"); st != 200 {
		t.Fatalf("127.0.0.2 while 127.0.0.1 is at its cap: /healthz %d, want 200", st)
	}
	for _, from := range []string{"127.0.0.3", "127.0.0.4"} {
		for i := range 30 {
			c, _, st := keepAlive(from)
			raw = append(raw, c)
			if st != 200 {
				t.Fatalf("exempt %s, connection %d: /healthz %d, want 200 (not capped)", from, i+1, st)
			}
		}
	}
	// The held connections are still served.
	if st := healthOn(t, held[0]); st != 200 {
		t.Fatalf("a held connection: /healthz %d, want 200", st)
	}
	raw[0].Close()
	p.waitHealthy(t, "127.0.0.1")
	p.waitLog(t, "connection refused: one client address is at its connection limit")
	if v := p.metric(t, `ticketd_connections_refused_total{reason="per_ip"}`); v < 1 {
		t.Errorf("per-IP refusals in /metrics: %v, want at least 1", v)
	}
}

// slowBodies: 5,000 connections from four addresses send the headers of a
// 65,000-byte body and trickle it, for attack; a refused one retries a
// second later, as Retry-After says. ticketd's RSS stays under 200 MB, the
// refusals are counted, and every hold is given back once the connections
// close.
func slowBodies(t *testing.T, p *limitedTicketd, attack time.Duration) {
	const (
		conns    = 5000
		bodySize = 65000
	)
	before := p.rssMB(t)
	ctx, stop := context.WithTimeout(context.Background(), attack)
	defer stop()
	head := fmt.Sprintf("POST /v1/channel/orders/confirm HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", bodySize)
	part := make([]byte, bodySize-100)
	var wg sync.WaitGroup
	var refused, sentOn atomic.Int64
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := fmt.Sprintf("127.0.0.%d", 10+i%4)
			for ctx.Err() == nil {
				if slowBody(ctx, from, p.addr, head, part, &refused, &sentOn) {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
			}
		}()
	}
	peak := before
	for ctx.Err() == nil {
		peak = max(peak, p.rssMB(t))
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("RSS %.0f MB before, %.0f MB at most under %d slow-body connections; %d bodies sent on (no answer within 100 ms), %d answers of 503 read",
		before, peak, conns, sentOn.Load(), refused.Load())
	if p.exited() {
		t.Fatalf("ticketd exited:\n%s", p.tail(20))
	}
	if peak >= 200 {
		t.Errorf("RSS reached %.0f MB under the slow bodies, want under 200 MB", peak)
	}
	if v := p.metric(t, "ticketd_request_bodies_refused_total"); v < 1 {
		t.Errorf("ticketd_request_bodies_refused_total = %v, want refusals", v)
	}
	p.waitLog(t, "request body refused unread")
	// Every connection is closed: every hold comes back.
	deadline := time.Now().Add(30 * time.Second)
	for v := p.metric(t, "ticketd_request_body_bytes_reserved"); v != 0; v = p.metric(t, "ticketd_request_body_bytes_reserved") {
		if time.Now().After(deadline) {
			t.Fatalf("ticketd_request_body_bytes_reserved = %v after every connection closed, want 0", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slowBody is one attacker connection: the headers, then, unless ticketd
// answers at once, most of the body and a byte a second. It reports
// whether ticketd refused the body (a 503 read, or the connection cut).
func slowBody(ctx context.Context, from, addr, head string, part []byte, refused, sentOn *atomic.Int64) bool {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return true
	}
	defer c.Close()
	defer context.AfterFunc(ctx, func() { c.Close() })()
	if _, err := io.WriteString(c, head); err != nil {
		return true
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if resp, err := http.ReadResponse(r, nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "" {
			refused.Add(1)
		}
		return true
	}
	sentOn.Add(1)
	if _, err := c.Write(part); err != nil {
		return true
	}
	for ctx.Err() == nil {
		time.Sleep(time.Second)
		if _, err := c.Write([]byte{' '}); err != nil {
			return true
		}
	}
	return false
}

// limitedTicketd is a ticketd process (-mode api) started under a file
// descriptor limit, with its own key prefix and database.
type limitedTicketd struct {
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

func startLimited(t *testing.T, bin string, nofile int, env ...string) *limitedTicketd {
	t.Helper()
	_, space := redistest.New(t)
	addr := freeLowAddr(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cmd := exec.Command("bash", "-c", `ulimit -n "$1" && exec "$2" -mode api`, "bash", strconv.Itoa(nofile), bin)
	cmd.Env = append(os.Environ(), "TICKETD_ENV=development", "TICKETD_SECRETS_KEY="+hex.EncodeToString(key),
		"TICKETD_KEY_PREFIX="+space.Prefix, "REDIS_URL="+redistest.URL(), "DATABASE_URL="+pgtest.NewURL(t),
		"TICKETD_ADDR="+addr, "TICKETD_MAIL=off", "TICKETD_LOG_FORMAT=text")
	cmd.Env = append(cmd.Env, env...)
	p := &limitedTicketd{addr: addr, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Killed with the test binary, should it die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("ticketd log:\n%s", p.tail(40))
		}
	})
	p.waitLog(t, "ticketd listening")
	return p
}

// freeLowAddr is a loopback address with a port below the ephemeral range
// that is free now, so that no outgoing connection takes it first.
func freeLowAddr(t *testing.T) string {
	t.Helper()
	for range 1000 {
		addr := "127.0.0.1:" + strconv.Itoa(20000+mrand.IntN(12000))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below 32000")
	return ""
}

func (p *limitedTicketd) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *limitedTicketd) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.log.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitLog waits until the log holds s (a guard of 30 s against a hang).
func (p *limitedTicketd) waitLog(t *testing.T, s string) {
	t.Helper()
	p.waitLogCount(t, s, 1)
}

// waitLogCount waits until the log holds s n times.
func (p *limitedTicketd) waitLogCount(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.log.String(), s) < n {
		if p.exited() {
			t.Fatalf("ticketd exited before logging %q:\n%s", s, p.tail(20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticketd did not log %q:\n%s", s, p.tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rssMB is the process's resident memory (VmRSS) in MB.
func (p *limitedTicketd) rssMB(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// get sends one request from the local address from on a connection of
// its own.
func (p *limitedTicketd) get(from, path string) (int, string, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := client.Get("http://" + p.addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (p *limitedTicketd) health(t *testing.T, from string) int {
	t.Helper()
	st, _, err := p.get(from, "/healthz")
	if err != nil {
		t.Fatalf("/healthz from %s: %v", from, err)
	}
	return st
}

// waitHealthy waits until /healthz from the address from answers 200.
func (p *limitedTicketd) waitHealthy(t *testing.T, from string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _, err := p.get(from, "/healthz")
		if err == nil && st == 200 {
			return
		}
		if p.exited() {
			t.Fatalf("ticketd exited:\n%s", p.tail(20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz from %s: %d %v, want 200", from, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric reads one sample of /metrics by its name and labels as written.
func (p *limitedTicketd) metric(t *testing.T, series string) float64 {
	t.Helper()
	st, body, err := p.get("127.0.0.2", "/metrics")
	if err != nil || st != 200 {
		t.Fatalf("/metrics: %d %v", st, err)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics %s: %q", series, v)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return 0
}

func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	return c
}

// healthOn sends GET /healthz on a kept-alive connection and returns the
// status.
func healthOn(t *testing.T, rw *bufio.ReadWriter) int {
	t.Helper()
	if _, err := rw.WriteString("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := rw.Flush(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(rw.Reader, nil)
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// readRefusal reads what ticketd wrote to a connection it refused at
// accept, before any request, and checks it closed the connection.
func readRefusal(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("the refused connection stayed open (%v)", err)
	}
	return resp.StatusCode, string(b)
}
