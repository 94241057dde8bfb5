//go:build reliability

package main

// The long versions of faults_test.go's network faults (make reliability):
// more buyers, and every kind of fault in turn on one running ticketd.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/bench/faultreport"
)

// skipUnderLongFaults skips a short fault test of faults_test.go: its
// long version here covers it, within make reliability's time budget.
func skipUnderLongFaults(t *testing.T) {
	t.Helper()
	t.Skip("make reliability runs the long version (TestFault...LinkFaultsInTurn)")
}

// linkFault is one fault a test injects on a store's link.
type linkFault struct {
	name   string
	inject func()
}

// linkFaults are the faults both stores' links go through in turn, each
// healed with x.Restore: 2 s late, hung (requests reach the store, no
// reply) and down (connections closed and refused).
func linkFaults(t *testing.T, x *toxicProxy) []linkFault {
	return []linkFault{
		{"+2s", func() { x.Toxic(t, "latency", "downstream", `{"latency": 2000}`) }},
		{"hung", func() { x.Toxic(t, "timeout", "downstream", `{"timeout": 0}`) }},
		{"down", x.Refuse},
	}
}

// TestFaultRedisLinkFaultsInTurn: under 12 partner and 6 storefront
// buyers, the Redis link is 200 ms late, 2 s late, hung (requests reach
// Redis, no reply), down (connections closed and refused) and reset
// (every connection reset as data flows), healed between each. Each fault
// is checked as in faults_test.go (only sales and 503 envelopes, fast
// once sales stopped, goroutines bounded); at the end every acknowledged
// purchase is paid and in Postgres once, and the remaining counts are the
// capacities less the paid orders: nothing sold twice across the retries.
func TestFaultRedisLinkFaultsInTurn(t *testing.T) {
	st, l, base := startFaultLoad(t, 3*time.Second, 12, 6, 2*time.Second)
	st.redisProxy.Toxic(t, "latency", "downstream", `{"latency": 200, "jitter": 50}`)
	l.hold("+200ms", 4*time.Second)
	l.Phase("between")
	st.redisProxy.Restore(t)
	time.Sleep(time.Second)

	faults := append(linkFaults(t, st.redisProxy),
		linkFault{"reset", func() { st.redisProxy.Toxic(t, "reset_peer", "upstream", `{"timeout": 0}`) }})
	var names []string
	for _, f := range faults {
		// The 5 s request timeout of the requests caught by the fault
		// passes within the phase.
		redisFault(t, st, l, f.name, 6*time.Second, f.inject)
		l.hold("healed after "+f.name, 2*time.Second)
		names = append(names, f.name)
	}
	l.Stop(30 * time.Second)
	after := goroutinesSettle(t, base, 40, 15*time.Second)

	l.Violations()
	checkSlowRedis(t, l, "+200ms")
	var load []string
	for _, n := range names {
		checkRedisFault(t, l, n)
		if l.total("healed after "+n, "confirm 200") == 0 {
			t.Errorf("no confirm after the %s fault healed", n)
		}
		load = append(load, fmt.Sprintf("%s, sales stopped (slowest %s, goroutines %d): %s", n,
			l.slowest[n].Round(time.Millisecond), l.goroutines[n], l.Answers(n)))
	}
	counts := l.CheckRecord(60 * time.Second)
	faultreport.Print(t, faultreport.Report{
		Injected: "Redis link (toxiproxy) +200 ms for 4 s; then, 6 s each after sales stopped and healed 2 s between: " +
			"+2 s latency, hung (timeout downstream), down (proxy disabled), reset (reset_peer)",
		Load: fmt.Sprintf("12 partner + 6 storefront buyers; +200ms: %s | %s; goroutines %d before, at most %d under load, %d after",
			l.Answers("+200ms"), strings.Join(load, " | "), base, l.goroutines["warm-up"], after),
		Counts: counts,
	})
}

// TestFaultPostgresLinkFaultsInTurn: under 12 partner and 6 storefront
// buyers, the Postgres link is 200 ms late (nothing degraded), then 2 s
// late, hung (queries reach Postgres, no reply: the worker's commits may
// have happened unseen) and down, healed between each. Sales go on
// throughout (only sale answers); /readyz says degraded with the sync
// backlog growing during each of the three, and the worker catches up
// after each; at the end the backlog drains to 0 and Postgres holds
// exactly one order per paid order, one ticket each: a batch written
// again after an unseen commit is not doubled.
func TestFaultPostgresLinkFaultsInTurn(t *testing.T) {
	st, l, base := startFaultLoad(t, 0, 12, 6, 2*time.Second)
	st.pgProxy.Toxic(t, "latency", "downstream", `{"latency": 200, "jitter": 50}`)
	l.Phase("+200ms")
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if s := st.ready(t); s.HTTP != 200 || s.Status != "ok" {
			t.Errorf("readyz with Postgres 200 ms late: %+v, want ok", s)
		}
	}
	l.Phase("between")
	st.pgProxy.Restore(t)
	l.OnlyAnswers("+200ms", saleAnswers...)

	var load []string
	for _, f := range linkFaults(t, st.pgProxy) {
		first, last := postgresFault(t, st, l, f.name, 5*time.Second, f.inject)
		l.hold("healed after "+f.name, time.Second)
		load = append(load, fmt.Sprintf("%s: %s; backlog %d -> %d, caught up after", f.name, l.Answers(f.name), first, last))
	}
	after, counts := endPostgresFault(t, st, l, base, 30*time.Second, 60*time.Second)
	faultreport.Print(t, faultreport.Report{
		Injected: "Postgres link (toxiproxy) +200 ms for 4 s; then, 5 s each after /readyz said degraded and healed between: " +
			"+2 s latency, hung (timeout downstream), down (proxy disabled)",
		Load: fmt.Sprintf("12 partner + 6 storefront buyers; +200ms (readyz ok): %s | %s; backlog drained to 0 at the end; goroutines %d before, %d after",
			l.Answers("+200ms"), strings.Join(load, " | "), base, after),
		Counts: counts,
	})
}
