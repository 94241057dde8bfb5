package main

// Issue 18: a replicated Redis (Sentinel, or a Redis Cluster with a replica
// per master) whose master holding the event on sale is SIGKILLed under a
// partner load. ticketd follows the promoted replica by itself; every
// acknowledged confirm is counted against what Postgres and ticketd hold
// once the event sold out.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// The failover scenarios' event and load: foBuyers partner buyers buy one
// ticket of foEvent at a time; its master is killed after foKillAfter
// acknowledged confirms, and the rest of foCapacity sells out within
// seconds after the failover.
const (
	foEvent     = "ev_fo"
	foCapacity  = 1500
	foBuyers    = 12
	foKillAfter = 200
	// foCutFor is how long, with WAIT off, the master keeps acknowledging
	// sales after its replicas were cut off and before it is killed.
	foCutFor = 300 * time.Millisecond
)

// failoverCatalog is faultCatalog with foEvent on sale too.
var failoverCatalog = strings.Replace(faultCatalog, `"events": [`, fmt.Sprintf(`"events": [
  {"id": %q, "shortId": "fo", "slug": "fo", "name": "Failover", "startsAt": "2027-07-01T18:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_a"], "capacity": %d,
   "tickets": [{"id": "tk", "name": "GA", "price": 20, "capacity": %[2]d}]},`, foEvent, foCapacity), 1)

// aofAlways are the shipped deploy/redis.conf persistence settings, on
// every node of the scenarios.
var aofAlways = []string{"--appendonly", "yes", "--appendfsync", "always"}

// failoverRedis is the replicated Redis of one scenario.
type failoverRedis struct {
	desc     string              // the topology, for the report
	url      string              // ticketd's REDIS_URL
	master   *redistest.Server   // the master holding foEvent, killed
	replicas []*redistest.Server // its replicas
	// failover waits for a replica's promotion once master is killed.
	failover func(t *testing.T) *redistest.Server
	// rejoin starts the killed master again after the failover: a
	// cluster master has one replica, so the promoted node has none until
	// the old master comes back as its replica.
	rejoin bool
}

// sentinelRedis is a primary with replicas replicas and 3 Sentinels;
// ticketd is given the Sentinels' URL.
func sentinelRedis(t *testing.T, replicas int, args ...string) *failoverRedis {
	t.Helper()
	rs := redistest.StartReplicated(t, replicas, args...)
	ss := redistest.StartSentinels(t, rs, 3)
	return &failoverRedis{
		desc: fmt.Sprintf("primary with %d replica(s), 3 Sentinels (down after 1 s)", replicas),
		url:  ss.URL(), master: rs.Primary, replicas: rs.Replicas,
		failover: func(t *testing.T) *redistest.Server { return ss.WaitFailover(t, rs.Primary.Addr, time.Minute) },
	}
}

// cutReplicas makes the master's replicas miss everything it writes from
// now until it is killed: each replica runs DEBUG SLEEP (it reads nothing
// from its link and cannot reconnect meanwhile), then the master drops its
// replica links (CLIENT KILL TYPE replica). Asynchronous replication's lag,
// made wide and certain: a replica only paused (SIGSTOP) still gets the
// stream, which the kernel buffers, and a dropped link alone is taken up
// again by the replica within a second. The replicas wake up after sleep.
func (rd *failoverRedis) cutReplicas(t *testing.T, sleep time.Duration) {
	t.Helper()
	ctx := context.Background()
	for _, r := range rd.replicas {
		c := r.Client(t)
		go func() {
			_ = c.Do(ctx, c.B().Arbitrary("DEBUG", "SLEEP").Args(fmt.Sprintf("%.1f", sleep.Seconds())).Build()).Error()
		}()
	}
	time.Sleep(100 * time.Millisecond) // the replicas are asleep
	m := rd.master.Client(t)
	if err := m.Do(ctx, m.B().Arbitrary("CLIENT", "KILL").Args("TYPE", "replica").Build()).Error(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica on %s: %v", rd.master.Addr, err)
	}
}

// connectedReplicas is the master's connected_slaves.
func (rd *failoverRedis) connectedReplicas(t *testing.T) string {
	t.Helper()
	m := rd.master.Client(t)
	info, err := m.Do(context.Background(), m.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO replication of %s: %v", rd.master.Addr, err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			return v
		}
	}
	return "?"
}

// failoverLoad is foBuyers partner buyers buying one ticket of foEvent at
// a time with faultStack.buy (a confirm answered 503 is retried) until it
// is sold out; every answer and every purchase is kept with its time.
type failoverLoad struct {
	st      *faultStack
	soldOut atomic.Bool

	mu      sync.Mutex
	answers []timedAnswer
	buys    []purchase
}

// timedAnswer is one answer to a reserve or a confirm try, e.g.
// "confirm 409 CONFIRM_FAILED sold_out".
type timedAnswer struct {
	at   time.Time
	what string
}

// purchase is one reserve+confirm, from the reserve sent to the last
// answer: paid (the confirm answered 200, acknowledged) or refused.
type purchase struct {
	start, end time.Time
	order      string
	paid       bool
	code       string
}

func startFailoverLoad(st *faultStack) *failoverLoad {
	l := &failoverLoad{st: st}
	st.answered = func(op string, r *servertest.Response) {
		what := fmt.Sprintf("%s %d", op, r.Status)
		if r.Code != "" {
			what += " " + r.Code
		}
		if r.Reason != "" {
			what += " " + r.Reason
		}
		l.mu.Lock()
		l.answers = append(l.answers, timedAnswer{time.Now(), what})
		l.mu.Unlock()
	}
	return l
}

// run starts buyers buyers, each buying until it or another saw foEvent
// sold out or ctx ends; the returned func waits for them.
func (l *failoverLoad) run(t *testing.T, ctx context.Context, buyers int) (wait func()) {
	var wg sync.WaitGroup
	for range buyers {
		wg.Go(func() {
			for ctx.Err() == nil && !l.soldOut.Load() {
				l.buyOne(t, ctx)
			}
		})
	}
	return wg.Wait
}

// buyOne makes one purchase and records it.
func (l *failoverLoad) buyOne(t *testing.T, ctx context.Context) purchase {
	start := time.Now()
	order, paid, code := l.st.buy(t, ctx, foEvent)
	p := purchase{start: start, end: time.Now(), order: order, paid: paid, code: code}
	l.mu.Lock()
	l.buys = append(l.buys, p)
	l.mu.Unlock()
	switch {
	case code == "EVENT_SOLD_OUT" || code == "TICKET_SOLD_OUT":
		l.soldOut.Store(true)
	case !paid:
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// acked is how many confirms answered 200 so far.
func (l *failoverLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.buys {
		if p.paid {
			n++
		}
	}
	return n
}

// ackedOrders are the orders whose confirm answered 200, and how many
// times an order was acknowledged again by another purchase (none: each
// reserves a new order).
func (l *failoverLoad) ackedOrders() (orders []string, again int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range l.buys {
		if !p.paid {
			continue
		}
		if seen[p.order] {
			again++
		}
		seen[p.order] = true
	}
	return slices.Sorted(maps.Keys(seen)), again
}

// resumed is how long after killed the first confirm answered 200 of a
// purchase begun after it (a confirm in flight at the kill may have been
// answered by the old master); -1 if none.
func (l *failoverLoad) resumed(killed time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := time.Duration(-1)
	for _, p := range l.buys {
		if p.paid && p.start.After(killed) && (first < 0 || p.end.Sub(killed) < first) {
			first = p.end.Sub(killed)
		}
	}
	return first
}

// tally counts the answers given in [from, to) by kind, and how many of
// them were 503s.
func (l *failoverLoad) tally(from, to time.Time) (counts map[string]int, unavailable int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts = map[string]int{}
	for _, a := range l.answers {
		if a.at.Before(from) || !a.at.Before(to) {
			continue
		}
		counts[a.what]++
		if strings.Contains(a.what, " 503") {
			unavailable++
		}
	}
	return counts, unavailable
}

// countWords lists counts in a stable order: "confirm 200: 180, reserve 200: 181".
func countWords(counts map[string]int) string {
	if len(counts) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("%s: %d", k, counts[k]))
	}
	return strings.Join(out, ", ")
}

// Answers a buyer may get at any time: a sale, the event sold out, the
// 503 that says retry (sales stopped while Redis fails over, or a confirm
// whose WAIT the replicas did not answer in time).
var failoverAnswers = []string{"reserve 200", "confirm 200", "reserve 409 EVENT_SOLD_OUT", "reserve 409 TICKET_SOLD_OUT",
	"confirm 409 CONFIRM_FAILED sold_out", "reserve 503 SERVICE_UNAVAILABLE", "confirm 503 ACCRUAL_FAILED_RETRY",
	// a rebuild held the event after a loss, until the operator reconciles
	"reserve 503 SALES_HELD"}

// lostOrderAnswer is the confirm of an order the promoted replica (or the
// rebuild from Postgres) does not know: reserved on the old master just
// before the kill, it never reached a replica (a reserve is not waited
// for, it sells nothing). Never acknowledged, it is refunded: a correct
// answer after the kill, never before.
const lostOrderAnswer = "confirm 409 CONFIRM_FAILED lost"

// TestFaultSentinelFailoverWaitOn: with TICKETD_REDIS_WAIT_REPLICAS=1 and
// two replicas, the Sentinels' master is SIGKILLed under load: ticketd
// follows the promoted replica without a restart, no acknowledged confirm
// is lost, nothing is oversold or sold twice.
func TestFaultSentinelFailoverWaitOn(t *testing.T) {
	failoverUnderLoad(t, sentinelRedis(t, 2, aofAlways...), true)
}

// TestFaultSentinelFailoverWaitOff: the same without WAIT, one replica,
// cut off from the master 300 ms before the kill: the sales the master
// acknowledged meanwhile are on no replica. Nothing may be oversold; what
// is lost is reported. The monitor takes the promoted replica for a
// rollback (its sequence number went back) and rebuilds from Postgres; the
// acknowledged sales the sync worker had not written yet are lost, and the
// node's sold mark makes the rebuild hold the event (SALES_HELD) with them
// counted, until the operator reconciles it.
func TestFaultSentinelFailoverWaitOff(t *testing.T) {
	failoverUnderLoad(t, sentinelRedis(t, 1, append([]string{"--enable-debug-command", "local"}, aofAlways...)...), false)
}

// failoverUnderLoad runs one scenario on rd: ticketd (API and worker) on
// it with WAIT 1 (500 ms) or off, foBuyers buyers, the master holding
// foEvent SIGKILLed after foKillAfter confirms (with WAIT off, its replicas
// cut off foCutFor before), the failover, the load on until foEvent is
// sold out; then the counts, checked and reported.
func failoverUnderLoad(t *testing.T, rd *failoverRedis, wait bool) {
	if failoverCatalog == faultCatalog {
		t.Fatal("failoverCatalog: foEvent was not added to faultCatalog")
	}
	waitDesc := "WAIT off"
	st := startStackOn(t, rd.url, func(c *config) {
		c.Recovery = recoveryAuto
		if wait {
			c.RedisWaitReplicas, c.RedisWaitTimeout = 1, 500*time.Millisecond
			waitDesc = "WAIT 1 replica (timeout 500 ms)"
		}
	})
	if r := st.api.Do(t, "PUT", "/v1/admin/catalog", map[string]string{"Authorization": "Bearer fault-admin"}, []byte(failoverCatalog)); r.Status != 200 {
		t.Fatalf("apply: %s", r)
	}
	waitFor(t, 30*time.Second, "readyz 200", func() bool {
		code, _, _ := readyReplicas(t, st)
		return code == 200
	})

	l := startFailoverLoad(st)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	started := time.Now()
	buyersDone := l.run(t, ctx, foBuyers)
	defer func() { cancel(); buyersDone() }()
	waitFor(t, time.Minute, fmt.Sprintf("%d confirms before the kill", foKillAfter), func() bool { return l.acked() >= foKillAfter })

	var cut time.Time
	cutNote := ""
	if !wait {
		rd.cutReplicas(t, time.Second)
		cut = time.Now()
		time.Sleep(foCutFor)
		if n := rd.connectedReplicas(t); n != "0" {
			t.Fatalf("%s replicas connected to the master %s after the cut: the replicas were not asleep", n, rd.master.Addr)
		}
	}
	atKill := l.acked()
	killed := time.Now()
	rd.master.Kill()
	t.Logf("%s: SIGKILLed the master %s after %d acknowledged confirms", time.Since(started).Round(time.Millisecond), rd.master.Addr, atKill)
	promoted := rd.failover(t)
	failedOver := time.Since(killed)
	t.Logf("promoted %s %.1fs after the kill", promoted.Addr, failedOver.Seconds())
	rejoinNote := ""
	if rd.rejoin {
		rd.master.Start()
		rejoinNote = fmt.Sprintf("; the killed node started again %.1f s after the kill, to rejoin as its replica", time.Since(killed).Seconds())
	}
	if !wait {
		cutNote = fmt.Sprintf("; %d confirms acknowledged in the %s between the cut and the kill",
			l.ackedBetween(cut, killed), foCutFor)
		cutNote += reconcileHeld(t, st, rd)
	}

	done := make(chan struct{})
	go func() { buyersDone(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		since, _ := l.tally(killed, time.Now())
		t.Fatalf("%s not sold out within 90 s of the failover (%d confirms acknowledged); answers since the kill: %s",
			foEvent, l.acked(), countWords(since))
	}
	// A buyer that saw the event sold out stopped the others; an order
	// refused afterwards gives its ticket back: buy what is left.
	extra := 0
	for ctx.Err() == nil {
		p := l.buyOne(t, ctx)
		if p.code == "EVENT_SOLD_OUT" || p.code == "TICKET_SOLD_OUT" {
			break
		}
		extra++
	}
	if ctx.Err() != nil {
		t.Fatalf("%s not sold out within the test's 3 minutes", foEvent)
	}
	ended := time.Now()

	resume := l.resumed(killed)
	if resume < 0 {
		t.Fatal("no confirm answered 200 after the kill")
	}
	before, _ := l.tally(started, killed)
	outage, unavailable := l.tally(killed, killed.Add(resume))
	after, _ := l.tally(killed.Add(resume), ended.Add(time.Second))
	for phase, counts := range map[string]map[string]int{"before the kill": before, "during the outage": outage, "after sales resumed": after} {
		for what, n := range counts {
			if !slices.Contains(failoverAnswers, what) && (what != lostOrderAnswer || phase == "before the kill") {
				t.Errorf("%d answers %q %s; expected only %v (and %q after the kill)", n, what, phase, failoverAnswers, lostOrderAnswer)
			}
		}
	}

	c := countFailover(t, st, l)
	if c.again > 0 || c.double > 0 {
		t.Errorf("sold twice: %d orders acknowledged by two purchases, %d tickets beyond one per order in Postgres", c.again, c.double)
	}
	if c.oversold > 0 {
		t.Errorf("oversold by %d: %d confirms acknowledged and %d tickets in Postgres for a capacity of %d",
			c.oversold, c.acked, c.tickets, foCapacity)
	}
	if wait && c.lost > 0 {
		t.Errorf("with WAIT on, %d acknowledged confirms lost (ticketd says of them: %s)", c.lost, countWords(c.lostStatus))
	}
	faultreport.Print(t, faultreport.Report{
		Injected: fmt.Sprintf("SIGKILL of the master holding %s (%s; %s; AOF always) after %d acknowledged confirms%s; "+
			"promoted %.1f s after the kill%s; ticketd not restarted", foEvent, rd.desc, waitDesc, atKill, cutNote,
			failedOver.Seconds(), rejoinNote),
		Load: fmt.Sprintf("%d partner buyers, reserve+confirm (503 retried) until %s (capacity %d) sold out (%d more bought alone after); "+
			"resume %.2f s (kill to the first confirm 200 of a purchase begun after it); 503s during the outage %d; "+
			"before the kill: %s | outage: %s | after: %s",
			foBuyers, foEvent, foCapacity, extra, resume.Seconds(), unavailable, countWords(before), countWords(outage), countWords(after)),
		Counts: fmt.Sprintf("acknowledged %d, lost %d (ticketd says of them: %s), oversold %d, double %d; "+
			"Postgres %d orders (%d not acknowledged), %d tickets; capacity %d",
			c.acked, c.lost, countWords(c.lostStatus), c.oversold, c.double+c.again, c.orders, c.unacked, c.tickets, foCapacity),
	})
}

// reconcileHeld waits (up to a minute) for the rebuild that follows a
// failover without WAIT to hold foEvent, whose acknowledged sales the
// promoted replica lacks (503 SALES_HELD, /readyz heldEvents), and then
// does what the operator does (ticketctl reconcile: the lost units stay
// sold); it says what happened, for the report. An event the failover lost
// nothing of is never held, and the wait ends when it sells out.
func reconcileHeld(t *testing.T, st *faultStack, rd *failoverRedis) string {
	t.Helper()
	var held struct {
		HeldEvents []struct {
			EventID string `json:"eventId"`
			Lost    int64  `json:"lost"`
		} `json:"heldEvents"`
	}
	deadline := time.Now().Add(time.Minute)
	for {
		r := st.api.Do(t, "GET", "/readyz", nil, nil)
		held.HeldEvents = nil
		_ = json.Unmarshal(r.Data, &held)
		if len(held.HeldEvents) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return "; " + foEvent + " not held"
		}
		time.Sleep(50 * time.Millisecond)
	}
	h := held.HeldEvents[0]
	if h.EventID != foEvent || len(held.HeldEvents) != 1 {
		t.Errorf("held events %+v, want %s alone", held.HeldEvents, foEvent)
	}
	if _, err := rebuild.Resolve(context.Background(), redistest.Client(t, rd.url), keys.Space{}, st.db, 0, h.EventID, rebuild.Reconcile); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("; the rebuild held %s with %d units lost (503 SALES_HELD), reconciled (ticketctl reconcile)", h.EventID, h.Lost)
}

// ackedBetween is how many confirms answered 200 in [from, to).
func (l *failoverLoad) ackedBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.buys {
		if p.paid && !p.end.Before(from) && p.end.Before(to) {
			n++
		}
	}
	return n
}

// failoverCounts are a scenario's counts once the event sold out.
type failoverCounts struct {
	acked, again int // confirms answered 200; orders acknowledged twice
	// lost: acknowledged, and neither in Postgres nor paid in ticketd;
	// lostStatus is what ticketd's order status says of them.
	lost       int
	lostStatus map[string]int
	orders     int // Postgres orders of the event
	unacked    int // of those, not acknowledged to the buyer
	tickets    int // Postgres tickets of the event
	double     int // tickets beyond one per order
	oversold   int // acknowledged or in Postgres beyond the capacity
}

// countFailover waits (up to a minute) for the sync worker to write every
// acknowledged order that ticketd still holds as paid, then counts.
func countFailover(t *testing.T, st *faultStack, l *failoverLoad) failoverCounts {
	t.Helper()
	acked, again := l.ackedOrders()
	c := failoverCounts{acked: len(acked), again: again, lostStatus: map[string]int{}}
	var missing []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		missing = notInPostgres(t, st, acked)
		syncing := 0
		clear(c.lostStatus)
		for _, id := range missing {
			status := orderStatus(t, st, id)
			if status == "paid" {
				syncing++
			}
			c.lostStatus[status]++
		}
		if syncing == 0 || time.Now().After(deadline) {
			break
		}
	}
	c.lost = len(missing)
	c.orders = st.count(t, `SELECT count(*) FROM orders WHERE event_id = $1`, foEvent)
	c.unacked = st.count(t, `SELECT count(*) FROM orders WHERE event_id = $1 AND NOT (id = ANY($2))`, foEvent, acked)
	c.tickets = st.count(t, `SELECT count(*) FROM tickets WHERE event_id = $1`, foEvent)
	c.double = c.tickets - st.count(t, `SELECT count(DISTINCT order_id) FROM tickets WHERE event_id = $1`, foEvent)
	c.oversold = max(0, c.acked-foCapacity, c.tickets-foCapacity)
	return c
}

// notInPostgres are the orders of ids Postgres does not hold.
func notInPostgres(t *testing.T, st *faultStack, ids []string) []string {
	t.Helper()
	rows, err := st.db.Query(context.Background(),
		`SELECT a.id FROM unnest($1::text[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = a.id)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// orderStatus is the order's status as POST /v1/channel/orders/status
// says it, or the refusal's status and code.
func orderStatus(t *testing.T, st *faultStack, order string) string {
	t.Helper()
	r := st.api.Status(t, "a", order)
	if r.Status != 200 {
		return fmt.Sprintf("%d %s", r.Status, r.Code)
	}
	var s struct {
		Status string `json:"status"`
	}
	r.Decode(t, &s)
	return s.Status
}
