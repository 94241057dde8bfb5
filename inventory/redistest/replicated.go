package redistest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// Replicated is a Redis primary with replicas (REPLICAOF) of one test's
// own, each node a Server the test can Kill, Start, Pause or Wipe. Roles
// change at a failover (Sentinels promote a replica): Primary stays the
// node started as primary, and Sentinels.Master names the current one.
type Replicated struct {
	Primary  *Server
	Replicas []*Server
}

// StartReplicated starts a primary and replicas replicas of it
// (--replicaof), each on a free loopback port with args (they apply to
// every node: "--appendonly", "yes", "--appendfsync", "always"), and waits
// until every replica's link is up and the primary lists them all. A
// replica started again after Kill replicates the first primary again,
// whatever the roles are by then (Sentinel corrects it). The processes are
// killed when t ends.
func StartReplicated(t testing.TB, replicas int, args ...string) *Replicated {
	t.Helper()
	// A full sync starts at once: by default the primary waits 5 s for
	// more replicas to share it.
	args = append([]string{"--repl-diskless-sync-delay", "0"}, args...)
	r := &Replicated{Primary: StartServer(t, args...)}
	host, port, _ := net.SplitHostPort(r.Primary.Addr)
	for range replicas {
		r.Replicas = append(r.Replicas, StartServer(t, append([]string{"--replicaof", host, port}, args...)...))
	}
	r.WaitLinked(t, r.Primary)
	return r
}

// Nodes are the primary and the replicas, in that order.
func (r *Replicated) Nodes() []*Server { return append([]*Server{r.Primary}, r.Replicas...) }

// Node is the node listening on addr, or nil.
func (r *Replicated) Node(addr string) *Server { return nodeAt(r.Nodes(), addr) }

// WaitLinked waits (up to 30 s) until master says role:master and every
// other running node of r replicates it with its link up, listed by master
// as online. After a failover, the new master and the nodes Sentinel
// re-pointed at it.
func (r *Replicated) WaitLinked(t testing.TB, master *Server) {
	t.Helper()
	waitUntil(t, 30*time.Second, "replicas of "+master.Addr+" linked", func() string {
		m, err := info(master.Addr, "INFO", "replication")
		if err != nil || m["role"] != "master" {
			return fmt.Sprintf("%s: role %q (%v)", master.Addr, m["role"], err)
		}
		online := 0
		for k, v := range m {
			if strings.HasPrefix(k, "slave") && strings.Contains(v, "state=online") {
				online++
			}
		}
		want := 0
		for _, s := range r.Nodes() {
			if s == master || !s.running() {
				continue
			}
			want++
			host, port, _ := net.SplitHostPort(master.Addr)
			ri, err := info(s.Addr, "INFO", "replication")
			if err != nil || ri["master_host"] != host || ri["master_port"] != port || ri["master_link_status"] != "up" {
				return fmt.Sprintf("%s: replica of %s:%s, link %q (%v)", s.Addr, ri["master_host"], ri["master_port"], ri["master_link_status"], err)
			}
		}
		if online != want {
			return fmt.Sprintf("%s lists %d replicas online, want %d", master.Addr, online, want)
		}
		return ""
	})
}

// running says whether the process was started and not killed since.
func (s *Server) running() bool { return s.cmd != nil }

// nodeAt is the server of nodes listening on addr, or nil.
func nodeAt(nodes []*Server, addr string) *Server {
	for _, s := range nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}
