package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/loopback"
)

// MasterName is the name the Sentinels monitor the Replicated set under
// (master_set in a rueidis URL).
const MasterName = "mymaster"

// Sentinels are Redis Sentinels of one test's own watching a Replicated
// set, each a Server (redis-server --sentinel) the test can Kill or Pause.
// They take a master as down after a second without an answer and fail
// over within a few seconds.
type Sentinels struct {
	Nodes []*Server
	// Quorum is how many must agree that the master is down.
	Quorum int

	r *Replicated
}

// StartSentinels starts n Sentinels (quorum a majority: 2 of 3) on free
// loopback ports monitoring r's primary as MasterName, and waits until
// each knows the master, its replicas and the other Sentinels. Each
// Sentinel's config file is in its Dir (Sentinel rewrites it). The
// processes are killed when t ends, before r's nodes.
func StartSentinels(t testing.TB, r *Replicated, n int) *Sentinels {
	t.Helper()
	bin := binary(t, "redis-server")
	host, port, _ := net.SplitHostPort(r.Primary.Addr)
	ss := &Sentinels{Quorum: n/2 + 1, r: r}
	for range n {
		p, dir := freePort(t), t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		// failover-timeout bounds each step of a failover and is twice
		// the pause before a Sentinel tries the same master again: small,
		// so a failover whose vote split is retried within seconds.
		text := fmt.Sprintf(`port %d
bind 127.0.0.1
daemonize no
dir %s
logfile %s
sentinel monitor %s %s %s %d
sentinel down-after-milliseconds %[4]s 1000
sentinel failover-timeout %[4]s 3000
sentinel parallel-syncs %[4]s 1
`, p, dir, filepath.Join(dir, "redis.log"), MasterName, host, port, ss.Quorum)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		ss.Nodes = append(ss.Nodes, runServer(t, p, dir, []string{bin, conf, "--sentinel"}))
	}
	ss.WaitKnown(t)
	return ss
}

// URL is the rueidis URL of the Sentinels: the client asks them for the
// master and follows it through a failover.
func (ss *Sentinels) URL() string {
	u := "redis://" + ss.Nodes[0].Addr + "?"
	for _, s := range ss.Nodes[1:] {
		u += "addr=" + s.Addr + "&"
	}
	return u + "master_set=" + MasterName
}

// Client is a client made from URL (no client-side cache), closed with t.
func (ss *Sentinels) Client(t testing.TB) rueidis.Client {
	t.Helper()
	return Client(t, ss.URL())
}

// Master asks the Sentinels, the first that answers, for the current
// master's address (SENTINEL GET-MASTER-ADDR-BY-NAME).
func (ss *Sentinels) Master(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range ss.Nodes {
		if !s.running() {
			continue
		}
		addr, err := masterAddr(ctx, s.Addr)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("redistest: no Sentinel names the master: %w", errors.Join(errs...))
}

// masterAddr asks the Sentinel at addr for the master's address.
func masterAddr(ctx context.Context, addr string) (string, error) {
	v, err := loopback.Do(ctx, addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
	if err != nil {
		return "", fmt.Errorf("%s: %w", addr, err)
	}
	a, _ := v.([]any)
	if len(a) != 2 {
		return "", fmt.Errorf("%s: master %v", addr, v)
	}
	host, _ := a[0].(string)
	port, _ := a[1].(string)
	return net.JoinHostPort(host, port), nil
}

// WaitKnown waits (up to 30 s) until every running Sentinel names the same
// master, knows the other Sentinels, and lists every other running node of
// the Replicated set as a replica that is not down.
func (ss *Sentinels) WaitKnown(t testing.TB) {
	t.Helper()
	waitUntil(t, 30*time.Second, "Sentinels know the master, its replicas and each other", func() string {
		master := ""
		for _, s := range ss.Nodes {
			if !s.running() {
				continue
			}
			v, err := loopback.Do(context.Background(), s.Addr, "SENTINEL", "MASTER", MasterName)
			m := pairs(v)
			if err != nil || m["flags"] != "master" {
				return fmt.Sprintf("Sentinel %s: master flags %q (%v)", s.Addr, m["flags"], err)
			}
			addr := net.JoinHostPort(m["ip"], m["port"])
			if master == "" {
				master = addr
			} else if addr != master {
				return fmt.Sprintf("Sentinel %s names %s, another %s", s.Addr, addr, master)
			}
			if got := m["num-other-sentinels"]; got != strconv.Itoa(len(ss.Nodes)-1) {
				return fmt.Sprintf("Sentinel %s knows %s other Sentinels", s.Addr, got)
			}
			v, err = loopback.Do(context.Background(), s.Addr, "SENTINEL", "REPLICAS", MasterName)
			if err != nil {
				return fmt.Sprintf("Sentinel %s: replicas: %v", s.Addr, err)
			}
			replicas := map[string]string{}
			list, _ := v.([]any)
			for _, e := range list {
				rm := pairs(e)
				replicas[net.JoinHostPort(rm["ip"], rm["port"])] = rm["flags"]
			}
			for _, n := range ss.r.Nodes() {
				if n.running() && n.Addr != master && replicas[n.Addr] != "slave" {
					return fmt.Sprintf("Sentinel %s: replica %s flags %q", s.Addr, n.Addr, replicas[n.Addr])
				}
			}
		}
		return ""
	})
}

// WaitFailover waits up to timeout until every Sentinel that answers (a
// quorum at least) names a master other than oldAddr and that node says
// ROLE master, and returns it.
func (ss *Sentinels) WaitFailover(t testing.TB, oldAddr string, timeout time.Duration) *Server {
	t.Helper()
	var master string
	waitUntil(t, timeout, "Sentinels fail "+oldAddr+" over", func() string {
		master = ""
		answered := 0
		for _, s := range ss.Nodes {
			if !s.running() {
				continue
			}
			addr, err := masterAddr(context.Background(), s.Addr)
			if err != nil {
				continue
			}
			answered++
			switch {
			case addr == oldAddr:
				return "Sentinel " + s.Addr + " still names " + oldAddr
			case master == "":
				master = addr
			case addr != master:
				return "Sentinels name " + master + " and " + addr
			}
		}
		if answered < ss.Quorum {
			return fmt.Sprintf("%d Sentinels answer, fewer than the quorum %d", answered, ss.Quorum)
		}
		if r := role(master); r != "master" {
			return fmt.Sprintf("the Sentinels name %s, whose role is %q", master, r)
		}
		return ""
	})
	s := ss.r.Node(master)
	if s == nil {
		t.Fatalf("redistest: the Sentinels name %s, not a node of the set (%s)", master, strings.Join(addrs(ss.r.Nodes()), ", "))
	}
	return s
}

// addrs are the servers' addresses.
func addrs(nodes []*Server) []string {
	out := make([]string, len(nodes))
	for i, s := range nodes {
		out[i] = s.Addr
	}
	return out
}
