package durable

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/redistest"
)

// TestReplicationReadsHowFarTheReplicasWereBehind: each sample counts the
// online replicas and how far each is behind the primary's offset; the
// worst of every sample is kept.
func TestReplicationReadsHowFarTheReplicasWereBehind(t *testing.T) {
	var r Replication
	r.add(map[string]string{"role": "master", "connected_slaves": "2", "master_repl_offset": "1000",
		"slave0": "ip=127.0.0.1,port=6380,state=online,offset=900,lag=0",
		"slave1": "ip=127.0.0.1,port=6381,state=wait_bgsave,offset=0,lag=0"})
	r.add(map[string]string{"master_repl_offset": "5000",
		"slave0":          "ip=127.0.0.1,port=6380,state=online,offset=4990,lag=2",
		"slave1":          "ip=127.0.0.1,port=6381,state=online,offset=4800,lag=1",
		"slave_read_only": "1", "slaveX": "state=online,offset=0,lag=9"})
	if r.Samples != 2 || r.FewestOnline != 1 || r.MaxLag != 2*time.Second || r.MaxBehind != 200 {
		t.Fatalf("got %+v, want 2 samples, fewest online 1, lag 2s, 200 B behind (a replica not online counts neither)", r)
	}
	var none Replication
	none.add(map[string]string{"master_repl_offset": "10"})
	if none.FewestOnline != 0 || none.Samples != 1 {
		t.Fatalf("no replica: %+v", none)
	}
}

// TestWatchReplicationSamplesWhileItRuns reads a live primary and its
// replica until stopped.
func TestWatchReplicationSamplesWhileItRuns(t *testing.T) {
	r := redistest.StartReplicated(t, 1)
	stop := WatchReplication(context.Background(), r.Primary.Client(t), 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	got := stop()
	if got.Err != nil || got.Samples < 2 || got.FewestOnline != 1 {
		t.Fatalf("got %+v, want samples with the one replica online", got)
	}
}
