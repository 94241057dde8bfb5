package redisstate_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// A failover to a replica that lagged behind the state checks is a
// rollback of the checks' sequence number. With WAIT on, the node takes as
// seen only a number the replica acknowledged, so promoting the replica
// keeps sales running (it holds every acknowledged sale); without WAIT the
// same failover is found stale and sales stop for a rebuild.
func TestFailoverToAReplicaIsARollbackOnlyWithoutWait(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run(map[bool]string{true: "wait", false: "no wait"}[wait], func(t *testing.T) {
			ctx := context.Background()
			rs := redistest.StartReplicated(t, 1)
			primary, replica := rs.Primary, rs.Replicas[0]
			rc := primary.Client(t)
			if err := redisstate.Publish(ctx, rc, keys.Space{}, "g1"); err != nil {
				t.Fatal(err)
			}
			m := monitor(rc, keys.Space{})
			if wait {
				m.Replication = &redisstate.Replication{Replicas: 1, Timeout: 100 * time.Millisecond}
			}
			for range 3 {
				expectStatus(t, m.Check(ctx), redisstate.Current)
			}
			if v := m.View(); v.Replicas == nil || v.Replicas.Online != 1 {
				t.Fatalf("replicas read: %+v, want 1 online", v.Replicas)
			}
			promoted := replica.Client(t)
			offset := func(s *redistest.Server, field string) string {
				m, _ := s.Info("replication")
				return m[field]
			}
			for deadline := time.Now().Add(10 * time.Second); offset(primary, "master_repl_offset") != offset(replica, "slave_repl_offset"); {
				if time.Now().After(deadline) {
					t.Fatal("the replica did not catch up with the checks so far in 10s")
				}
				time.Sleep(20 * time.Millisecond)
			}

			// The replica is cut off (as a partition would): these checks'
			// ticks never reach it. With WAIT the node may stop sales
			// meanwhile (no replica in sync): either way it sells nothing
			// the replica lacks.
			if err := promoted.Do(ctx, promoted.B().Replicaof().No().One().Build()).Error(); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if v := m.Check(ctx); v.Status != redisstate.Current && v.Status != redisstate.Unreplicated {
					t.Fatalf("status while the replica is cut off: %s (%s)", v.Status, v.Reason)
				}
			}
			primary.Kill()
			m.Redis = promoted  // what rueidis does when Sentinel names the new primary
			m.Replication = nil // the promoted one has no replica of its own here
			want := redisstate.Current
			if !wait {
				want = redisstate.Stale
			}
			expectStatus(t, m.Check(ctx), want)
		})
	}
}

// INFO replication's replica lines: only online replicas that acknowledged
// within InSyncLag count, and the lag is the longest among online ones.
func TestReplicasInSync(t *testing.T) {
	info := "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n" +
		"slave0:ip=10.0.0.1,port=6379,state=online,offset=100,lag=0\r\n" +
		"slave1:ip=10.0.0.2,port=6379,state=wait_bgsave,offset=0,lag=0\r\n" +
		"slave2:ip=10.0.0.3,port=6379,state=online,offset=90,lag=12\r\n" +
		"slave_read_repl_offset:5\r\nmaster_repl_offset:100\r\n"
	online, lag := redisstate.ReplicasOf(info)
	if online != 1 || lag != 12*time.Second {
		t.Fatalf("online %d lag %s, want 1 and 12s", online, lag)
	}
}

// With WAIT on, the sequence numbers the replicas acknowledged still guard
// against a rollback: a state whose number went back below one they held
// is stale.
func TestAcknowledgedSequenceStillFindsARollback(t *testing.T) {
	ctx := context.Background()
	rs := redistest.StartReplicated(t, 1)
	rc := rs.Primary.Client(t)
	if err := redisstate.Publish(ctx, rc, keys.Space{}, "g1"); err != nil {
		t.Fatal(err)
	}
	m := monitor(rc, keys.Space{})
	// Timeouts a loaded machine does not run out (a check's WAIT is the
	// shorter of the two): a node whose ticks were never acknowledged
	// holds no number for 1 to go back from.
	m.Timeout = 8 * time.Second
	m.Replication = &redisstate.Replication{Replicas: 1, Timeout: 2 * time.Second}
	for range 3 {
		expectStatus(t, m.Check(ctx), redisstate.Current)
	}
	if err := rc.Do(ctx, rc.B().Hset().Key(keys.Space{}.State()).FieldValue().FieldValue("seq", "1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, m.Check(ctx), redisstate.Stale)
}

// A sale that found Redis went back (orders.Service.ReportPaid) stops
// sales at once: the state is stale, with the sale's reason.
func TestARollbackASaleFoundStopsSales(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	m := monitor(rc, space)
	expectStatus(t, m.Check(ctx), redisstate.Current)
	m.RolledBack("event e's paid units went back")
	// RolledBack runs a check of its own at once: its view says why. (A
	// check after it finds the state marked stale in Redis, for every
	// node, and says so in general words.)
	v := m.View()
	for deadline := time.Now().Add(5 * time.Second); v.Status == redisstate.Current && time.Now().Before(deadline); v = m.View() {
		time.Sleep(5 * time.Millisecond)
	}
	expectStatus(t, v, redisstate.Stale)
	if !strings.Contains(v.Reason, "event e's paid units went back") {
		t.Fatalf("reason %q, want the sale's", v.Reason)
	}
	expectStatus(t, m.Check(ctx), redisstate.Stale)
	if e := m.Gate(); e == nil || e.Status != 503 {
		t.Fatalf("gate after the rollback: %v, want 503", e)
	}
}

// Payments that come together share one WAIT: each gets its own script's
// reply, acknowledged by the replica, and the primary sees fewer WAITs
// than payments. Cut off from its replica, every payment is refused
// ErrNotReplicated: the first batch's are written on the primary (a retry
// answers them), those that waited out the WAIT's timeout behind it are
// not sent.
func TestPaymentsThatComeTogetherShareAWait(t *testing.T) {
	ctx := context.Background()
	rs := redistest.StartReplicated(t, 1)
	rc := rs.Primary.Client(t)
	r := &redisstate.Replication{Replicas: 1, Timeout: 2 * time.Second}
	script := eval.Load("ratelimit") // a write: {OK, remaining, granted}
	always := func([]rueidis.RedisMessage) bool { return true }
	waits := func() int64 {
		t.Helper()
		m, err := rs.Primary.Info("commandstats")
		if err != nil {
			t.Fatal(err)
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(m["cmdstat_wait"], "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		return n
	}
	pay := func(r *redisstate.Replication, n int, prefix string) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// each its own reply: a fresh bucket of i+1 grants i+1
				key, want := fmt.Sprintf("{pay}:%s:%d", prefix, i), int64(i+1)
				arr, err := r.Array(ctx, rc, script, []string{key}, []string{"1000000", strconv.FormatInt(want, 10), strconv.FormatInt(want, 10)}, always)
				if err == nil {
					if granted, _ := eval.Int(arr, 2); granted != want {
						err = fmt.Errorf("%s: reply %v, want %d granted", key, arr, want)
					}
				}
				errs[i] = err
			}()
		}
		close(start)
		wg.Wait()
		return errs
	}
	if errs := pay(r, 1, "first"); errs[0] != nil { // loads the library
		t.Fatal(errs[0])
	}
	before := waits()
	const n = 200
	for i, err := range pay(r, n, "together") {
		if err != nil {
			t.Fatalf("payment %d: %v", i, err)
		}
	}
	got := waits() - before
	t.Logf("%d payments at once: %d WAITs", n, got)
	if got < 1 || got > n/2 {
		t.Fatalf("%d payments at once sent %d WAITs, want 1 to %d (shared)", n, got, n/2)
	}
	replica := rs.Replicas[0].Client(t)
	for i := range n {
		if v, err := replica.Do(ctx, replica.B().Exists().Key(fmt.Sprintf("{pay}:together:%d", i)).Build()).AsInt64(); err != nil || v != 1 {
			t.Fatalf("payment %d on the replica: %d, %v", i, v, err)
		}
	}

	// the replica cut off: nothing is acknowledged
	if err := replica.Do(ctx, replica.B().Replicaof().No().One().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	cut := &redisstate.Replication{Replicas: 1, Timeout: 50 * time.Millisecond}
	written := 0
	for i, err := range pay(cut, 20, "cut") {
		if !errors.Is(err, redisstate.ErrNotReplicated) {
			t.Fatalf("payment %d without the replica: %v, want ErrNotReplicated", i, err)
		}
		if v, _ := rc.Do(ctx, rc.B().Exists().Key(fmt.Sprintf("{pay}:cut:%d", i)).Build()).AsInt64(); v == 1 {
			written++
		}
	}
	if written == 0 || cut.Timeouts() != 20 {
		t.Fatalf("without the replica: %d of 20 payments written on the primary, %d counted refused; want some, and 20", written, cut.Timeouts())
	}
}
