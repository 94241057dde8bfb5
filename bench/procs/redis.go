package procs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/loopback"
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
	for attempt := 1; ; attempt++ {
		r, err := startRedisOnce(ctx, bin, args, logPath, extra)
		if !PortTaken(err) || attempt == portAttempts {
			return r, err
		}
	}
}

// portAttempts is how many free ports a start tries: a port found free
// (loopback.FreeAddr) can be taken by another process before the server
// binds it, most often by a test of another package run beside.
const portAttempts = 3

// PortTaken reports whether err is a server's refusal to start because
// its port was taken meanwhile (its log says so).
func PortTaken(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Address already in use")
}

// startRedisOnce is one StartRedis on a port found free now.
func startRedisOnce(ctx context.Context, bin string, args []string, logPath string, extra []string) (*Redis, error) {
	addr, err := loopback.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "ticketd-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("procs: redis dir: %w", err)
	}
	args = append(append(slices.Clip(args), "--port", port, "--bind", "127.0.0.1", "--dir", dir), extra...)
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

// StartReplica starts redis-server as StartRedis does, a replica of
// primary (--replicaof after extra), and waits until its link to the
// primary is up: it has loaded the primary's data and follows its stream.
func StartReplica(ctx context.Context, primary *Redis, conf, logPath string, extra ...string) (*Redis, error) {
	host, port, _ := net.SplitHostPort(primary.Addr)
	r, err := StartRedis(ctx, conf, logPath, append(extra, "--replicaof", host, port)...)
	if err != nil {
		return nil, err
	}
	if err := r.waitFor(ctx, time.Minute, "have its link to "+primary.Addr+" up", r.linked); err != nil {
		_ = r.Stop(5 * time.Second)
		return nil, err
	}
	return r, nil
}

// waitPong waits until the server answers PING, failing fast with the
// log's tail if it exits (a bad directive in the config file).
func (r *Redis) waitPong(ctx context.Context, timeout time.Duration) error {
	return r.waitFor(ctx, timeout, "answer PING", func() error { return ping(r.Addr) })
}

// waitFor polls ok until it returns nil, failing fast with the log's tail
// if the server exits, or after timeout; what says what it waits for.
func (r *Redis) waitFor(ctx context.Context, timeout time.Duration, what string, ok func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ok()
		if err == nil {
			return nil
		}
		select {
		case <-r.Exited():
			return fmt.Errorf("procs: redis-server on %s exited before it would %s:\n%s", r.Addr, what, r.Tail(20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("procs: redis-server on %s did not %s within %s (%v):\n%s", r.Addr, what, timeout, err, r.Tail(20))
		}
	}
}

// linked is nil once a replica's INFO replication says master_link_status:up.
func (r *Redis) linked() error {
	info, err := inline(r.Addr, "INFO replication")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "master_link_status:"); ok {
			if v == "up" {
				return nil
			}
			return fmt.Errorf("master_link_status:%s", v)
		}
	}
	return errors.New("INFO replication has no master_link_status: not a replica")
}

// ping sends PING and wants PONG.
func ping(addr string) error {
	reply, err := inline(addr, "PING")
	if err == nil && reply != "PONG" {
		err = fmt.Errorf("PING answered %q", reply)
	}
	return err
}

// inline sends one command (its words space-separated) and returns its
// string reply.
func inline(addr, cmd string) (string, error) {
	v, err := loopback.Do(context.Background(), addr, strings.Fields(cmd)...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s answered %v", cmd, v)
	}
	return s, nil
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
