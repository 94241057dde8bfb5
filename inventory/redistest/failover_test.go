package redistest_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/redistest"
)

// writeReplicated writes n keys key:0..key:n-1 (value i) on one
// connection and then WAIT 1: the keys are on a replica when it returns.
func writeReplicated(t *testing.T, rc rueidis.Client, key string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := rc.Dedicated(func(d rueidis.DedicatedClient) error {
		cmds := make(rueidis.Commands, 0, n+1)
		for i := range n {
			cmds = append(cmds, d.B().Set().Key(key+":"+strconv.Itoa(i)).Value(strconv.Itoa(i)).Build())
		}
		cmds = append(cmds, d.B().Wait().Numreplicas(1).Timeout(5000).Build())
		res := d.DoMulti(ctx, cmds...)
		for _, r := range res[:n] {
			if err := r.Error(); err != nil {
				return err
			}
		}
		if acked, err := res[n].AsInt64(); err != nil || acked < 1 {
			t.Fatalf("WAIT 1 after the writes: %d replicas (%v), want 1", acked, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// resumeWriting writes key with the same client until a write succeeds
// (each try bounded to a second) and sends how long it took from start,
// or an error after limit.
func resumeWriting(rc rueidis.Client, key string, start time.Time, limit time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		var err error
		for time.Since(start) < limit {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = rc.Do(ctx, rc.B().Set().Key(key).Value("after").Build()).Error()
			cancel()
			if err == nil {
				done <- nil
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		done <- err
	}()
	return done
}

// readBack reads key:0..key:n-1 with rc and counts those holding their value.
func readBack(t *testing.T, rc rueidis.Client, key string, n int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A read that errs right after the failover (the client still
	// learning the new topology) is tried again, within the 10 s; a key
	// read with another value or missing counts as lost.
	found := 0
	for i := range n {
		for {
			v, err := rc.Do(ctx, rc.B().Get().Key(key+":"+strconv.Itoa(i)).Build()).ToString()
			if err == nil && v == strconv.Itoa(i) {
				found++
			}
			if err == nil || rueidis.IsRedisNil(err) || ctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return found
}

// A client made from the Sentinels' URL follows a failover by itself: the
// primary is SIGKILLed, the Sentinels promote the replica, and the same
// client, not restarted, reads what it wrote before (replicated: WAIT 1)
// and writes again.
func TestSentinelClientFollowsFailover(t *testing.T) {
	r := redistest.StartReplicated(t, 1, "--appendonly", "yes", "--appendfsync", "always")
	ss := redistest.StartSentinels(t, r, 3)
	ctx := context.Background()
	if m, err := ss.Master(ctx); err != nil || m != r.Primary.Addr {
		t.Fatalf("the Sentinels name %q (%v), want the primary %s", m, err, r.Primary.Addr)
	}
	rc := ss.Client(t)
	const n = 100
	writeReplicated(t, rc, "k", n)

	killed := time.Now()
	r.Primary.Kill()
	resumed := resumeWriting(rc, "after", killed, 30*time.Second)
	promoted := ss.WaitFailover(t, r.Primary.Addr, 30*time.Second)
	failedOver := time.Since(killed)
	if err := <-resumed; err != nil {
		t.Fatalf("the client wrote nothing within 30 s of the kill: %v", err)
	}
	wrote := time.Since(killed)
	if promoted != r.Replicas[0] {
		t.Fatalf("promoted %s, want the replica %s", promoted.Addr, r.Replicas[0].Addr)
	}
	if got := readBack(t, rc, "k", n); got != n {
		t.Fatalf("after the failover the client reads %d of the %d keys written before", got, n)
	}
	t.Logf("primary SIGKILLed: the Sentinels named %s master after %.1fs; the same client wrote again after %.1fs and read %d of %d keys written before",
		promoted.Addr, failedOver.Seconds(), wrote.Seconds(), n, n)
}

// A cluster client made from one node's address follows a master's
// SIGKILL to its promoted replica: the keys written before (WAIT 1) are
// read back and the slot takes writes again.
func TestClusterClientFollowsFailover(t *testing.T) {
	cl := redistest.StartClusterReplicas(t)
	const key, n = "{p0}:k", 100
	master, replica := cl.Shard(t, key)
	if replica == nil {
		t.Fatalf("the master %s of %s has no replica", master.Addr, key)
	}
	// The client knows the cluster from the node about to die.
	rc := redistest.Client(t, master.URL)
	writeReplicated(t, rc, key, n)

	killed := time.Now()
	master.Kill()
	resumed := resumeWriting(rc, "{p0}:after", killed, 30*time.Second)
	promoted := cl.WaitFailover(t, master.Addr, 30*time.Second)
	failedOver := time.Since(killed)
	if err := <-resumed; err != nil {
		t.Fatalf("the client wrote nothing to the slot within 30 s of the kill: %v", err)
	}
	wrote := time.Since(killed)
	if promoted != replica {
		t.Fatalf("promoted %s, want the replica %s", promoted.Addr, replica.Addr)
	}
	if now, _ := cl.Shard(t, key); now != replica {
		t.Fatalf("%s is served by %s, want the promoted replica %s", key, now.Addr, replica.Addr)
	}
	if got := readBack(t, rc, key, n); got != n {
		t.Fatalf("after the failover the client reads %d of the %d keys written before", got, n)
	}
	t.Logf("master %s SIGKILLed: its replica %s served its slots after %.1fs; the same client wrote again after %.1fs and read %d of %d keys written before",
		master.Addr, promoted.Addr, failedOver.Seconds(), wrote.Seconds(), n, n)
}
