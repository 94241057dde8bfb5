package redistest

import (
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Cluster is a Redis Cluster of three masters, no replicas, of one test's
// own (the same as .ci/cluster.sh starts for whole suites).
type Cluster struct {
	// Nodes are the masters' servers; URL names the first, from which
	// rueidis finds the others.
	Nodes []*Server
	URL   string
}

// StartCluster starts three cluster-enabled redis-servers on free loopback
// ports, nothing persisted, joins them with `redis-cli --cluster create`
// (slots split evenly) and waits until every node says cluster_state:ok.
// The processes are killed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server is not installed (make services installs it): %v", err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redistest: redis-cli is not installed (make services installs it): %v", err)
	}
	c := &Cluster{}
	addrs := []string{}
	for _, port := range clusterPorts(t, 3) {
		s := startServer(t, bin, port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr)
	}
	c.URL = "redis://" + addrs[0]
	args := append([]string{"--cluster", "create"}, addrs...)
	out, err := exec.Command(cli, append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Nodes {
		for {
			out, _ := exec.Command(cli, "-h", "127.0.0.1", "-p", s.Addr[strings.LastIndexByte(s.Addr, ':')+1:], "cluster", "info").Output()
			info := strings.ReplaceAll(string(out), "\r", "")
			if strings.Contains(info, "cluster_state:ok\n") && strings.Contains(info, "cluster_known_nodes:3\n") &&
				strings.Contains(info, "cluster_slots_ok:16384\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: the cluster on %v is not ok after 30s; %s says:\n%s", addrs, s.Addr, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
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
