package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/loopback"
)

// Cluster is a Redis Cluster of three masters of one test's own: without
// replicas (StartCluster, the same as .ci/cluster.sh starts for whole
// suites) or with a replica each (StartClusterReplicas).
type Cluster struct {
	// Nodes are the servers in the order started: the first three are the
	// masters at the start (redis-cli --cluster create makes the first
	// nodes masters), then the replicas. Roles change at a failover: Shard
	// says which node serves a key now. URL names the first node, from
	// which rueidis finds the others.
	Nodes []*Server
	URL   string

	// slotMap is the slot map as last read (at the start, by Shard, by
	// WaitFailover): WaitFailover looks up the killed master's slots and
	// replicas in it, which the cluster no longer tells once failed over.
	slotMap []clusterNode
}

// StartCluster starts three cluster-enabled redis-servers on free loopback
// ports, nothing persisted, joins them with `redis-cli --cluster create`
// (slots split evenly) and waits until every node says cluster_state:ok.
// The processes are killed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 0, "5000")
}

// replicaNodeTimeout is the cluster-node-timeout (ms) of
// StartClusterReplicas: a master that answers no ping for this long is
// failing, and its replica takes over a second or two later. Short for a
// quick test, long enough that a busy 2-core machine does not fail a
// master over by itself.
const replicaNodeTimeout = "2000"

// StartClusterReplicas starts six cluster-enabled redis-servers, nothing
// persisted, joins them as three masters with a replica each
// (--cluster-replicas 1) and waits until every node knows all six, says
// cluster_state:ok and sees each master with its replica, and every
// replica's link to its master is up. A master that is killed (or paused)
// is failed over to its replica in a few seconds (cluster-node-timeout
// 2 s): WaitFailover waits for it. args apply to every node after the
// harness' own ("--appendonly", "yes", "--appendfsync", "always"). The
// processes are killed when t ends.
func StartClusterReplicas(t testing.TB, args ...string) *Cluster {
	t.Helper()
	return startCluster(t, 1, replicaNodeTimeout, args...)
}

// startCluster starts a cluster of three masters with replicas replicas
// each, nodeArgs on every node, and waits until it is ready (waitReady).
func startCluster(t testing.TB, replicas int, nodeTimeout string, nodeArgs ...string) *Cluster {
	t.Helper()
	bin, cli := binary(t, "redis-server"), binary(t, "redis-cli")
	c := &Cluster{}
	for _, port := range clusterPorts(t, 3*(1+replicas)) {
		c.Nodes = append(c.Nodes, startServer(t, bin, port, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", nodeTimeout, "--repl-diskless-sync-delay", "0"}, nodeArgs...)...)) // a replica's full sync at once, not after 5 s
	}
	c.URL = c.Nodes[0].URL
	args := append(append([]string{"--cluster", "create"}, addrs(c.Nodes)...),
		"--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	// Bounded: redis-cli waits for the join without a limit of its own.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitReady(t, replicas)
	return c
}

// waitReady waits (up to 30 s) until every node says cluster_state:ok
// with every node known and all slots served, sees three masters holding
// slots with replicas replicas each and no node failing, and every replica
// says its link to its master is up; then it records the slot map.
func (c *Cluster) waitReady(t testing.TB, replicas int) {
	t.Helper()
	waitUntil(t, 30*time.Second, "the cluster on "+strings.Join(addrs(c.Nodes), ", ")+" is ready", func() string {
		for _, s := range c.Nodes {
			ci, err := info(s.Addr, "CLUSTER", "INFO")
			if err != nil || ci["cluster_state"] != "ok" || ci["cluster_known_nodes"] != strconv.Itoa(len(c.Nodes)) ||
				ci["cluster_slots_ok"] != "16384" {
				return fmt.Sprintf("%s says state %q, %s nodes known, %s slots ok (%v)", s.Addr, ci["cluster_state"],
					ci["cluster_known_nodes"], ci["cluster_slots_ok"], err)
			}
			nodes, err := clusterNodes(s.Addr)
			if err != nil {
				return err.Error()
			}
			masters, linked := 0, 0
			for _, n := range nodes {
				switch {
				case n.failing():
					return fmt.Sprintf("%s sees %s as %s", s.Addr, n.addr, n.flags)
				case n.master() && len(n.slots) > 0:
					masters++
					linked += len(n.replicas(nodes))
				}
			}
			if masters != 3 || linked != 3*replicas {
				return fmt.Sprintf("%s sees %d masters with %d replicas", s.Addr, masters, linked)
			}
			if role(s.Addr) == "slave" {
				ri, err := info(s.Addr, "INFO", "replication")
				if err != nil || ri["master_link_status"] != "up" {
					return fmt.Sprintf("replica %s: link %q (%v)", s.Addr, ri["master_link_status"], err)
				}
			}
		}
		return ""
	})
	c.readSlotMap(t)
}

// clusterPorts picks n free loopback ports whose cluster bus ports
// (port+10000) are free too, all below the kernel's ephemeral range so no
// outgoing connection takes one before the server binds it.
func clusterPorts(t testing.TB, n int) []int {
	t.Helper()
	free := func(p int) bool {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatal("redistest: no free ports for a cluster")
		}
		p := 10000 + rand.IntN(12000)
		dup := false // one of ours, its bus port, or with its bus on one of ours
		for _, q := range out {
			dup = dup || q == p || q == p+10000 || q == p-10000
		}
		if !dup && free(p) && free(p+10000) {
			out = append(out, p)
		}
	}
	return out
}

// Client returns a cluster client (found from the first node), closed with
// the test.
func (c *Cluster) Client(t testing.TB) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.Nodes[0].Addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("redistest: connect to the cluster at %s: %v", c.Nodes[0].Addr, err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// Node is the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Server { return nodeAt(c.Nodes, addr) }

// Shard returns the master serving key's slot now and a replica of it (nil
// when it has none), as a running node sees the cluster, and records that
// slot map for WaitFailover.
func (c *Cluster) Shard(t testing.TB, key string) (master, replica *Server) {
	t.Helper()
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		v, err := loopback.Do(context.Background(), s.Addr, "CLUSTER", "KEYSLOT", key)
		slot, ok := v.(int64)
		if err != nil || !ok {
			continue
		}
		nodes, err := clusterNodes(s.Addr)
		if err != nil {
			continue
		}
		c.slotMap = nodes
		for _, n := range nodes {
			if !n.master() || n.failing() || !n.serves(int(slot)) {
				continue
			}
			for _, r := range n.replicas(nodes) {
				if !r.failing() {
					return c.Node(n.addr), c.Node(r.addr)
				}
			}
			return c.Node(n.addr), nil
		}
		t.Fatalf("redistest: %s sees no master serving slot %d of %q", s.Addr, slot, key)
	}
	t.Fatal("redistest: no node of the cluster answers")
	return nil, nil
}

// WaitFailover waits up to timeout until the slots of killedAddr, a master
// when the slot map was last read (at the start, by Shard or by an earlier
// WaitFailover), are served by one of its replicas of then, as every
// surviving node that answers sees it, each saying cluster_state:ok. It
// returns the promoted replica and records the new slot map.
func (c *Cluster) WaitFailover(t testing.TB, killedAddr string, timeout time.Duration) *Server {
	t.Helper()
	var old clusterNode
	for _, n := range c.slotMap {
		if n.addr == killedAddr && n.master() && len(n.slots) > 0 {
			old = n
		}
	}
	former := map[string]bool{}
	for _, r := range old.replicas(c.slotMap) {
		former[r.id] = true
	}
	if len(former) == 0 {
		t.Fatalf("redistest: %s was no master with a replica when the slot map was last read", killedAddr)
	}
	var promoted string
	waitUntil(t, timeout, "the slots of "+killedAddr+" served by its replica", func() string {
		promoted = ""
		for _, s := range c.Nodes {
			if !s.running() || s.Addr == killedAddr {
				continue
			}
			ci, err := info(s.Addr, "CLUSTER", "INFO")
			if err != nil {
				continue // paused, or still starting
			}
			if ci["cluster_state"] != "ok" {
				return s.Addr + " says cluster_state:" + ci["cluster_state"]
			}
			nodes, err := clusterNodes(s.Addr)
			if err != nil {
				return err.Error()
			}
			owner := ""
			for _, n := range nodes {
				if former[n.id] && n.master() && !n.failing() && strings.Join(n.slots, " ") == strings.Join(old.slots, " ") {
					owner = n.addr
				}
			}
			switch {
			case owner == "":
				return fmt.Sprintf("%s sees no former replica of %s serving its slots %v", s.Addr, killedAddr, old.slots)
			case promoted != "" && owner != promoted:
				return "the nodes disagree: " + promoted + " or " + owner
			}
			promoted = owner
		}
		if promoted == "" {
			return "no surviving node answers"
		}
		return ""
	})
	c.readSlotMap(t)
	return c.Node(promoted)
}

// readSlotMap records the slot map as the first running node that answers
// sees it.
func (c *Cluster) readSlotMap(t testing.TB) {
	t.Helper()
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		if nodes, err := clusterNodes(s.Addr); err == nil {
			c.slotMap = nodes
			return
		}
	}
	t.Fatal("redistest: no node of the cluster answers CLUSTER NODES")
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, flags, masterID string
	slots                     []string // "0-5460", "10923": the ranges it serves
}

// clusterNodes reads CLUSTER NODES of the node at addr.
func clusterNodes(addr string) ([]clusterNode, error) {
	s, err := doString(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("redistest: CLUSTER NODES of %s: %w", addr, err)
	}
	var out []clusterNode
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES of %s: line %q", addr, line)
		}
		n := clusterNode{id: f[0], flags: f[2], masterID: f[3]}
		n.addr, _, _ = strings.Cut(f[1], "@") // ip:port@busport[,hostname]
		for _, r := range f[8:] {
			if !strings.HasPrefix(r, "[") { // a slot migrating: not served yet
				n.slots = append(n.slots, r)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

func (n clusterNode) hasFlag(flag string) bool {
	return slices.Contains(strings.Split(n.flags, ","), flag)
}

func (n clusterNode) master() bool { return n.hasFlag("master") }

// failing: failed, suspected (fail?), or not yet part of the cluster.
func (n clusterNode) failing() bool {
	return n.hasFlag("fail") || n.hasFlag("fail?") || n.hasFlag("handshake") || n.hasFlag("noaddr")
}

// serves says whether slot is in one of n's ranges.
func (n clusterNode) serves(slot int) bool {
	for _, r := range n.slots {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, _ := strconv.Atoi(lo)
		b, _ := strconv.Atoi(hi)
		if a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// replicas are the nodes of nodes replicating n.
func (n clusterNode) replicas(nodes []clusterNode) []clusterNode {
	var out []clusterNode
	for _, r := range nodes {
		if r.masterID == n.id && r.id != n.id {
			out = append(out, r)
		}
	}
	return out
}
