package redistest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/loopback"
)

// Server is a redis-server process of one test's own, for tests that kill,
// pause, restart or wipe Redis: the shared server is never touched.
type Server struct {
	// Addr is host:port; URL is redis://Addr.
	Addr string
	URL  string
	// Dir holds the server's data files (AOF, RDB) and its log.
	Dir string

	t    testing.TB
	args []string
	cmd  *exec.Cmd
}

// StartServer starts redis-server on a free loopback port with nothing
// persisted, then args (later arguments win: "--appendonly", "yes" turns
// AOF on). The process is killed when t ends, and on Linux also when the
// test binary dies without ending t (go test -timeout).
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	return startServer(t, binary(t, "redis-server"), freePort(t), args...)
}

// binary is the path of redis-server or redis-cli; t fails without it.
func binary(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("redistest: %s is not installed (make services installs it): %v", name, err)
	}
	return bin
}

// freePort is a loopback port free right now, below the ephemeral range:
// Kill and Start reuse the port, and a port the kernel hands out could
// meanwhile be taken by any connection (a reconnecting client's own).
func freePort(t testing.TB) int {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return port
}

func startServer(t testing.TB, bin string, port int, args ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	return runServer(t, port, dir, append([]string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log")}, args...))
}

// runServer runs argv (a redis-server listening on port with its files,
// its log redis.log among them, in dir), waits until it answers and has it
// killed when t ends.
func runServer(t testing.TB, port int, dir string, argv []string) *Server {
	t.Helper()
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, t: t, args: argv}
	s.URL = "redis://" + s.Addr
	t.Cleanup(func() { s.kill() })
	s.Start()
	return s
}

// Start starts the server again (after Kill) with the same port, data
// directory and arguments, and waits until it answers PING with PONG, i.e.
// has loaded its data.
func (s *Server) Start() {
	s.t.Helper()
	s.Launch()
	s.waitLoaded()
}

// Launch starts the server again without waiting: it may still be
// loading its data when Launch returns.
func (s *Server) Launch() {
	s.t.Helper()
	s.cmd = &exec.Cmd{Path: s.args[0], Args: s.args, SysProcAttr: sysProcAttr()}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
}

// waitLoaded waits until the server answers PING with PONG.
func (s *Server) waitLoaded() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if pong, _ := doString(s.Addr, "PING"); pong == "PONG" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	s.t.Fatalf("redistest: redis-server on %s did not answer in 30s; its log:\n%s", s.Addr, log)
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() {
	s.t.Helper()
	s.kill()
}

func (s *Server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// The whole group: a forked AOF rewrite or RDB save outlives its
	// parent and would go on writing in the data directory, under a
	// restarted server or a test's removal of the directory.
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGCONT) // a paused process must run to die
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
	for deadline := time.Now().Add(5 * time.Second); groupRunning(pid) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// Pause stops the process (SIGSTOP): it keeps its connections open and
// answers nothing, like a hung server. Resume continues it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatal("redistest: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Wipe deletes the server's data files, so the next Start comes up empty,
// as a Redis that lost its disk would. The server must be killed first.
func (s *Server) Wipe() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("redistest: Wipe needs a killed server")
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	for _, e := range entries {
		if e.Name() == "redis.log" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, e.Name())); err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
	}
}

// Client returns a client of the server, closed with the test. It talks
// to this server only, also when it is a node of a cluster.
func (s *Server) Client(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("redistest: connect to %s: %v", s.Addr, err)
	}
	t.Cleanup(c.Close)
	return c
}
