//go:build reliability

package main

// The Redis Cluster failovers of failover_test.go (make reliability): six
// redis-servers each, about twice the Sentinel scenarios' time.

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// TestFaultClusterFailoverWaitOn: a Redis Cluster master holding the event
// is SIGKILLed under load with WAIT 1; its replica takes over, and the
// killed node, started again, rejoins as the new master's replica (until
// then no sale can be acknowledged). No acknowledged confirm is lost,
// nothing oversold or sold twice.
func TestFaultClusterFailoverWaitOn(t *testing.T) {
	failoverUnderLoad(t, clusterRedis(t, aofAlways...), true)
}

// TestFaultClusterFailoverWaitOff: the same without WAIT, the replica cut
// off from its master 300 ms before the kill. Nothing may be oversold;
// what is lost is reported. The state key ({catalog}:state, whose
// sequence number tells a rollback) is on another master, so the state
// checks see nothing; the first sale on the promoted replica is handed
// paid units the node saw sold (soldmarks.Book.Saw), is answered 503, and
// stops sales for the rebuild, which holds the event until the operator
// reconciles it.
func TestFaultClusterFailoverWaitOff(t *testing.T) {
	failoverUnderLoad(t, clusterRedis(t, append([]string{"--enable-debug-command", "local"}, aofAlways...)...), false)
}

// clusterRedis is a Redis Cluster of 3 masters with a replica each;
// ticketd is given the URL of the master holding foEvent, the node it
// loses.
func clusterRedis(t *testing.T, args ...string) *failoverRedis {
	t.Helper()
	cl := redistest.StartClusterReplicas(t, args...)
	master, replica := cl.Shard(t, keys.Space{}.Sold(foEvent))
	if replica == nil {
		t.Fatalf("the master %s of %s has no replica", master.Addr, foEvent)
	}
	state, _ := cl.Shard(t, keys.Space{}.State())
	where := "another master"
	if state == master {
		where = "the same master"
	}
	return &failoverRedis{
		desc: "Redis Cluster, 3 masters with a replica each (node timeout 2 s); the state key on " + where,
		url:  master.URL, master: master, replicas: []*redistest.Server{replica}, rejoin: true,
		failover: func(t *testing.T) *redistest.Server { return cl.WaitFailover(t, master.Addr, time.Minute) },
	}
}
