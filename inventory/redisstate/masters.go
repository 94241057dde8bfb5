package redisstate

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/rueidis"
)

// Masters returns a client of each Redis master rc writes to: rc itself for
// a single Redis, every master of a Redis Cluster (rueidis finds them from
// one address). What holds for one node's keys or settings (SCAN, INFO,
// CONFIG) must be asked of each of them: a cluster spreads ticketd's keys
// over all its masters. Replicas are left out (ROLE says which): they
// serve no writes. A node whose role cannot be read is kept, so a caller
// judging settings errs on the side of the weaker node.
func Masters(ctx context.Context, rc rueidis.Client) (map[string]rueidis.Client, error) {
	if rc.Mode() != rueidis.ClientModeCluster {
		return map[string]rueidis.Client{"": rc}, nil
	}
	nodes := rc.Nodes()
	out := make(map[string]rueidis.Client, len(nodes))
	for addr, n := range nodes {
		role, err := n.Do(ctx, n.B().Role().Build()).ToArray()
		if err == nil && len(role) > 0 {
			if r, _ := role[0].ToString(); r != "master" {
				continue
			}
		}
		out[addr] = n
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("redisstate: the Redis Cluster client knows no master")
	}
	return out, nil
}

// sortedAddrs returns the addresses of m in order, for stable reports.
func sortedAddrs(m map[string]rueidis.Client) []string {
	out := make([]string, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
