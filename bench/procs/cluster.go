package procs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/loopback"
)

// ErrNoRedisCLI means redis-cli, which creates a cluster, is not installed.
var ErrNoRedisCLI = errors.New("redis-cli is not installed (apt-get install redis-tools)")

// Cluster is a Redis Cluster the bench started: masters redis-server
// processes on free loopback ports, no replicas, nothing persisted (a
// bench run's state is thrown away with it).
type Cluster struct {
	Nodes []*Redis
}

// URL is a redis:// URL of one node: a cluster client (rueidis) finds the
// others from it.
func (c *Cluster) URL() string { return c.Nodes[0].URL() }

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// StartCluster starts masters cluster-enabled redis-server processes
// (logs logPrefix-<i>.log), joins them with redis-cli --cluster create
// (the 16,384 slots split evenly, no replicas) and waits until every node
// reports cluster_state:ok, so that the first client sees the final slot
// map. On error it stops what it started.
func StartCluster(ctx context.Context, masters int, logPrefix string) (c *Cluster, err error) {
	if masters < 3 {
		return nil, fmt.Errorf("procs: a Redis Cluster needs at least 3 masters, not %d", masters)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, ErrNoRedisCLI
	}
	c = &Cluster{}
	defer func() {
		if err != nil {
			_ = c.Stop(5 * time.Second)
		}
	}()
	for i := range masters {
		n, err := startClusterNode(ctx, fmt.Sprintf("%s-%d.log", logPrefix, i+1))
		if err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	args := append(append([]string{"--cluster", "create"}, c.Addrs()...), "--cluster-replicas", "0", "--cluster-yes")
	// Bounded: redis-cli waits for the join without a limit of its own.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, cli, args...).CombinedOutput()
	if err != nil {
		return c, fmt.Errorf("procs: redis-cli --cluster create: %w:\n%s", err, out)
	}
	return c, c.waitOK(ctx, cli, 30*time.Second)
}

// startClusterNode starts one cluster-enabled redis-server, on other free
// ports when its bus port was taken before it bound it (PortTaken).
func startClusterNode(ctx context.Context, logPath string) (*Redis, error) {
	for attempt := 1; ; attempt++ {
		// The cluster bus gets a free port of its own: by default it is
		// the node's port + 10000, which need not be free, and Redis
		// refuses a node port above 55535 then (FreeAddr may give one).
		bus, err := loopback.FreeAddr()
		if err != nil {
			return nil, err
		}
		_, busPort, _ := strings.Cut(bus, ":")
		// No RDB snapshots or AOF: a snapshot's fork would take the
		// machine's CPU in the middle of a measured run.
		n, err := StartRedis(ctx, "", logPath,
			"--cluster-enabled", "yes", "--cluster-port", busPort, "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no")
		if !PortTaken(err) || attempt == portAttempts {
			return n, err
		}
	}
}

// waitOK waits until every node says cluster_state:ok: the nodes learn of
// each other by gossip, so right after create some still see failing slots.
func (c *Cluster) waitOK(ctx context.Context, cli string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, n := range c.Nodes {
		_, port, _ := strings.Cut(n.Addr, ":")
		for {
			out, err := exec.CommandContext(ctx, cli, "-h", "127.0.0.1", "-p", port, "cluster", "info").Output()
			if err == nil && strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("procs: cluster node %s not cluster_state:ok after %s: %s %v", n.Addr, timeout, out, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Stop stops every node and removes its directory.
func (c *Cluster) Stop(timeout time.Duration) error {
	var errs []error
	for _, n := range c.Nodes {
		errs = append(errs, n.Stop(timeout))
	}
	return errors.Join(errs...)
}

// Describe names the cluster for a report: its masters and their logs.
func (c *Cluster) Describe() string {
	parts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		parts[i] = n.Addr + " (log " + filepath.Base(n.Log) + ")"
	}
	return "Redis Cluster of " + strconv.Itoa(len(c.Nodes)) + " masters started by the bench: " + strings.Join(parts, ", ")
}
