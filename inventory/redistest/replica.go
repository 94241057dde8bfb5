package redistest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// StartReplica starts a redis-server replicating s (args as StartServer's)
// and waits until s counts it online.
func (s *Server) StartReplica(t testing.TB, args ...string) *Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	before := onlineReplicas(s.Client(t))
	r := StartServer(t, append([]string{"--replicaof", host, port}, args...)...)
	s.WaitReplicas(t, before+1)
	return r
}

// WaitReplicas waits (30s at most) until s reports n replicas online.
func (s *Server) WaitReplicas(t testing.TB, n int) {
	t.Helper()
	rc := s.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for onlineReplicas(rc) != n {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: %s has not %d replicas online after 30s", s.Addr, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func onlineReplicas(rc rueidis.Client) int {
	info, _ := rc.Do(context.Background(), rc.B().Info().Section("replication").Build()).ToString()
	return strings.Count(info, "state=online")
}
