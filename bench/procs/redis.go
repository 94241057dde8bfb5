package procs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ErrNoRedisServer means redis-server is not installed.
var ErrNoRedisServer = errors.New("redis-server is not installed (apt-get install redis-server)")

// Redis is a redis-server the bench started: its own port and data
// directory, removed when it stops.
type Redis struct {
	*Proc
	Addr string // host:port on loopback
	Dir  string // its dir: the append-only files
}

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return "redis://" + r.Addr }

// StartRedis starts redis-server with the config file conf (none when
// conf is empty: Redis's defaults) on a free loopback port and a fresh
// temporary directory (command-line arguments override the file: port,
// bind, dir, then extra), its log at logPath, and waits until it answers
// PING.
func StartRedis(ctx context.Context, conf, logPath string, extra ...string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedisServer
	}
	var args []string
	if conf != "" {
		if _, err := os.Stat(conf); err != nil {
			return nil, fmt.Errorf("procs: redis config: %w", err)
		}
		args = append(args, conf)
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "ticketd-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("procs: redis dir: %w", err)
	}
	args = append(append(args, "--port", port, "--bind", "127.0.0.1", "--dir", dir), extra...)
	p, err := Start("redis-server", bin, args, nil, logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Redis{Proc: p, Addr: addr, Dir: dir}
	if err := r.waitPong(ctx, 30*time.Second); err != nil {
		_ = r.Stop(5 * time.Second)
		return nil, err
	}
	return r, nil
}

// waitPong waits until the server answers PING, failing fast with the
// log's tail if it exits (a bad directive in the config file).
func (r *Redis) waitPong(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if ping(r.Addr) == nil {
			return nil
		}
		select {
		case <-r.Exited():
			return fmt.Errorf("procs: redis-server exited while starting:\n%s", r.Tail(20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("procs: redis-server on %s did not answer PING within %s:\n%s", r.Addr, timeout, r.Tail(20))
		}
	}
}

// ping sends an inline PING and wants +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Stop stops the server (SIGTERM: Redis flushes its AOF and exits) and
// removes its directory.
func (r *Redis) Stop(timeout time.Duration) error {
	err := r.Proc.Stop(timeout)
	if rmErr := os.RemoveAll(r.Dir); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}
