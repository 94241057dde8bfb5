package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// faultCatalog has a large event for load and a small one to sell out,
// and channel a (ck_a, cs_a_secret, signing key sk_a: servertest's
// helpers) with limits far above what the tests send.
const faultCatalog = `{
 "tenants": [{"id": "t1", "name": "Faults", "events": [
  {"id": "ev_big", "shortId": "big", "slug": "big", "name": "Big", "startsAt": "2027-07-01T18:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_a"], "capacity": 100000,
   "tickets": [{"id": "tk", "name": "GA", "price": 20, "capacity": 100000}]},
  {"id": "ev_small", "shortId": "small", "slug": "small", "name": "Small", "startsAt": "2027-07-01T18:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_a"], "capacity": 10,
   "tickets": [{"id": "tk", "name": "GA", "price": 20, "capacity": 10}]}]}],
 "channels": [{"id": "ch_a", "name": "A", "key": "ck_a", "secret": "cs_a_secret", "signingKey": "sk_a",
  "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
  "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit",
  "rateLimits": {"catalog": 1000000, "status": 1000000, "checkout": 1000000, "confirm": 1000000, "session": 1000000}}]}`

// faultStack is a whole ticketd (API and sync worker, as `ticketd` runs)
// on a Redis server of the test's own, which the test kills, pauses and
// wipes.
type faultStack struct {
	redis *redistest.Server
	api   *servertest.Server // a client with the partner helpers
	db    *pgxpool.Pool
	// answered, when set before the load starts, sees every answer buy
	// gets: the reserve's and each confirm try's (op "reserve", "confirm").
	answered func(op string, r *servertest.Response)
}

func startFaultStack(t *testing.T, recovery string, redisArgs ...string) *faultStack {
	t.Helper()
	return startFaultStackVia(t, recovery, nil, redisArgs...)
}

// startFaultStackVia is startFaultStack with ticketd reaching Postgres at
// via(the test database's URL) when via is set (through a proxy); the
// test's own view of the record stays direct.
func startFaultStackVia(t *testing.T, recovery string, via func(dbURL string) string, redisArgs ...string) *faultStack {
	t.Helper()
	srv := redistest.StartServer(t, redisArgs...)
	st := startStackOn(t, srv.URL, func(cfg *config) {
		cfg.Recovery = recovery
		if via != nil {
			cfg.DatabaseURL = via(cfg.DatabaseURL)
		}
	})
	st.redis = srv
	return st
}

// startStackOn starts the fault stack's ticketd on the Redis at redisURL
// (tune adjusts its configuration) with the fault catalog applied. The
// test's own pool reaches the database directly, whatever tune makes of
// ticketd's DATABASE_URL.
func startStackOn(t *testing.T, redisURL string, tune func(*config)) *faultStack {
	t.Helper()
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	dbURL := pgtest.NewURL(t)
	cfg.Addr, cfg.RedisURL, cfg.RedisURLSet, cfg.DatabaseURL, cfg.DatabaseURLSet = "127.0.0.1:0", redisURL, true, dbURL, true
	cfg.KeyPrefix, cfg.AdminToken = "", "fault-admin"
	tune(&cfg)
	base := runTicketd(t, cfg, options{API: true, Worker: true})
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	st := &faultStack{api: servertest.Remote(base), db: db}
	if r := st.api.Do(t, "PUT", "/v1/admin/catalog", map[string]string{"Authorization": "Bearer fault-admin"}, []byte(faultCatalog)); r.Status != 200 {
		t.Fatalf("apply: %s", r)
	}
	return st
}

// buy reserves one ticket and confirms it as a partner does: a confirm
// answered 503 is retried (it is idempotent) until it gets an answer.
// paid says the confirm answered paid; code is the refusal otherwise.
func (st *faultStack) buy(t *testing.T, ctx context.Context, event string) (order string, paid bool, code string) {
	r := st.api.Reserve(t, "a", event, map[string]any{"selectedTicketId": "tk", "quantity": 1})
	st.saw("reserve", r)
	if r.Status != 200 {
		return "", false, r.Code
	}
	var o servertest.Reserved
	r.Decode(t, &o)
	for {
		c := st.api.Confirm(t, "a", o.OrderID, o.Amount, "psp-"+o.OrderID)
		st.saw("confirm", c)
		switch {
		case c.Status == 200:
			return o.OrderID, true, ""
		case c.Status != 503:
			return o.OrderID, false, c.Code
		case ctx.Err() != nil:
			return o.OrderID, false, "gave up"
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// saw hands an answer of buy to st.answered, when set.
func (st *faultStack) saw(op string, r *servertest.Response) {
	if st.answered != nil {
		st.answered(op, r)
	}
}

// waitFor polls cond until it holds, for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (st *faultStack) count(t *testing.T, sql string, args ...any) int {
	return pgtest.Count(t, st.db, sql, args...)
}

// Redis on the shipped settings (AOF, appendfsync always) is killed with
// SIGKILL in the middle of a reserve+confirm load and restarted from its
// AOF: every confirm ticketd acknowledged is paid, reaches Postgres, and
// is counted once; ticketd recovers without a restart, and what it
// answered meanwhile was 503, nothing else.
func TestRedisKilledMidLoadLosesNoAcknowledgedConfirm(t *testing.T) {
	st := startFaultStack(t, recoveryAuto, "--appendonly", "yes", "--appendfsync", "always")
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	acked := map[string]bool{}
	refused := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				order, paid, code := st.buy(t, ctx, "ev_big")
				mu.Lock()
				if paid {
					acked[order] = true
				} else {
					refused[code]++
				}
				mu.Unlock()
				if code != "" {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	ackedNow := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, 30*time.Second, "100 confirms before the kill", func() bool { return ackedNow() >= 100 })
	st.redis.Kill()
	time.Sleep(500 * time.Millisecond)
	st.redis.Start()
	before := ackedNow()
	waitFor(t, 30*time.Second, "100 more confirms after the restart", func() bool { return ackedNow() >= before+100 })
	stop()
	wg.Wait()

	for code, n := range refused {
		if code != "SERVICE_UNAVAILABLE" && code != "gave up" {
			t.Errorf("%d answers %s during the outage; only 503s are expected", n, code)
		}
	}
	// The sync worker writes them all, each once.
	waitFor(t, 60*time.Second, "every acknowledged order in Postgres", func() bool {
		return st.count(t, `SELECT count(*) FROM orders WHERE id = ANY($1)`, keysOf(acked)) == len(acked)
	})
	if n := st.count(t, `SELECT count(*) FROM tickets WHERE order_id = ANY($1)`, keysOf(acked)); n != len(acked) {
		t.Fatalf("%d tickets for %d acknowledged orders", n, len(acked))
	}
	// Redis counts what Postgres holds: nothing lost, nothing counted twice.
	paid := st.count(t, `SELECT count(*) FROM orders WHERE event_id = 'ev_big'`)
	r := st.api.Do(t, "GET", "/v1/channel/events/ev_big", servertest.Keyed("a"), nil)
	if r.Status != 200 || !strings.Contains(string(r.Data), fmt.Sprintf(`"remaining":%d`, 100000-paid)) {
		t.Fatalf("event after the restart: %s, want remaining %d (Postgres holds %d paid)", r, 100000-paid, paid)
	}
	t.Logf("%d confirms acknowledged, all in Postgres; %d paid in all; refused meanwhile: %v", len(acked), paid, refused)
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Redis restarted empty under a running ticketd (recovery left to the
// operator): every call answers 503, never 401 for valid credentials, and
// /readyz says why; after the rebuild the pending order made before the
// loss is failed (refund), the paid ones replay, and the partly sold event
// sells exactly its capacity, nothing lost.
func TestRedisRestartedEmptyStopsSalesUntilRebuilt(t *testing.T) {
	st := startFaultStack(t, recoveryManual)
	ctx := context.Background()
	var paid []string
	for range 6 {
		o, ok, code := st.buy(t, ctx, "ev_small")
		if !ok {
			t.Fatalf("buy: %s", code)
		}
		paid = append(paid, o)
	}
	pending := st.api.MustReserve(t, "a", "ev_small", map[string]any{"selectedTicketId": "tk", "quantity": 1})
	waitFor(t, 30*time.Second, "the paid orders in Postgres", func() bool {
		return st.count(t, `SELECT count(*) FROM orders WHERE event_id = 'ev_small'`) == 6
	})

	st.redis.Kill()
	st.redis.Wipe()
	st.redis.Start()
	waitFor(t, 10*time.Second, "sales stopped", func() bool {
		return st.api.Do(t, "GET", "/v1/channel/events", servertest.Keyed("a"), nil).Status == 503
	})
	for _, r := range []*servertest.Response{
		st.api.Do(t, "GET", "/v1/channel/events/ev_small", servertest.Keyed("a"), nil),
		st.api.Reserve(t, "a", "ev_small", map[string]any{"selectedTicketId": "tk", "quantity": 1}),
	} {
		if r.Status != 503 || r.Code != "SERVICE_UNAVAILABLE" {
			t.Fatalf("while Redis' state is lost: %s, want 503 SERVICE_UNAVAILABLE", r)
		}
	}
	if r := st.api.Confirm(t, "a", pending.OrderID, pending.Amount, "psp-pending"); r.Status != 503 || r.Code != "ACCRUAL_FAILED_RETRY" {
		t.Fatalf("confirm while Redis' state is lost: %s", r)
	}
	// A check that timed out on a loaded machine says "unreachable" for a
	// moment: wait for the state the monitor settles on.
	var ready *servertest.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ready = st.api.Do(t, "GET", "/readyz", nil, nil)
		if ready.Status == 503 && strings.Contains(string(ready.Body), `"redis":"lost"`) {
			break
		}
		if ready.Status != 503 || time.Now().After(deadline) {
			t.Fatalf("readyz while Redis' state is lost: %s", ready)
		}
	}

	// The operator rebuilds (as ticketctl rebuild does).
	rb := testRebuilder(t, st.redis.URL, st.db)
	if _, err := rb.Run(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "sales resumed", func() bool {
		return st.api.Do(t, "GET", "/v1/channel/events/ev_small", servertest.Keyed("a"), nil).Status == 200
	})
	c := st.api.Confirm(t, "a", pending.OrderID, pending.Amount, "psp-pending")
	if c.Status != 409 || c.Code != "CONFIRM_FAILED" || c.Raw["refundRequired"] != true {
		t.Fatalf("confirm of the pending order lost with Redis: %s, want CONFIRM_FAILED refundRequired", c)
	}
	if r := st.api.Confirm(t, "a", paid[0], 2000, "psp-"+paid[0]); r.Status != 200 {
		t.Fatalf("confirm replay of a paid order: %s", r)
	}
	sellOut(t, st, 4)
}

// sellOut buys until ev_small is sold out, expecting exactly left more
// sales, then checks Postgres holds exactly its capacity.
func sellOut(t *testing.T, st *faultStack, left int) {
	t.Helper()
	ctx := context.Background()
	sold := 0
	for {
		_, ok, code := st.buy(t, ctx, "ev_small")
		if !ok {
			if code != "EVENT_SOLD_OUT" && code != "TICKET_SOLD_OUT" {
				t.Fatalf("buy: %s", code)
			}
			break
		}
		sold++
	}
	if sold != left {
		t.Fatalf("sold %d after the loss, want exactly the %d left", sold, left)
	}
	waitFor(t, 30*time.Second, "exactly the capacity in Postgres", func() bool {
		return st.count(t, `SELECT count(*) FROM tickets WHERE event_id = 'ev_small'`) == 10
	})
}

// Redis restarted empty with automatic recovery: ticketd notices, rebuilds
// from Postgres by itself, and every answer meanwhile was a 503; the event
// then sells exactly what is left of its capacity.
func TestRedisRestartedEmptyRecoversByItself(t *testing.T) {
	st := startFaultStack(t, recoveryAuto)
	ctx := context.Background()
	for range 6 {
		if _, ok, code := st.buy(t, ctx, "ev_small"); !ok {
			t.Fatalf("buy: %s", code)
		}
	}
	waitFor(t, 30*time.Second, "the paid orders in Postgres", func() bool {
		return st.count(t, `SELECT count(*) FROM orders WHERE event_id = 'ev_small'`) == 6
	})
	st.redis.Kill()
	st.redis.Wipe()
	st.redis.Start()
	answers := map[int]int{}
	waitFor(t, 30*time.Second, "the rebuilt catalog", func() bool {
		r := st.api.Do(t, "GET", "/v1/channel/events/ev_small", servertest.Keyed("a"), nil)
		answers[r.Status]++
		return r.Status == 200 && strings.Contains(string(r.Data), `"remaining":4`)
	})
	for status, n := range answers {
		if status != 200 && status != 503 {
			t.Fatalf("%d answers %d while Redis was restored; only 503 or the rebuilt catalog are expected", n, status)
		}
	}
	sellOut(t, st, 4)
}

// While Redis hangs (SIGSTOP: connections open, no answer), reserve and
// confirm answer 503 at once instead of piling up, and sales resume by
// themselves when Redis answers again.
func TestHungRedisAnswersQuicklyAndRecovers(t *testing.T) {
	st := startFaultStack(t, recoveryAuto, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	o := st.api.MustReserve(t, "a", "ev_big", map[string]any{"selectedTicketId": "tk", "quantity": 1})
	st.redis.Pause()
	defer st.redis.Resume()
	waitFor(t, 10*time.Second, "readyz to say Redis is unreachable", func() bool {
		r := st.api.Do(t, "GET", "/readyz", nil, nil)
		return r.Status == 503 && strings.Contains(string(r.Body), `"redis":"unreachable"`)
	})
	var slow atomic.Int64
	var wg sync.WaitGroup
	var bad atomic.Value
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			var r *servertest.Response
			if i%2 == 0 {
				r = st.api.Reserve(t, "a", "ev_big", map[string]any{"selectedTicketId": "tk", "quantity": 1})
			} else {
				r = st.api.Confirm(t, "a", o.OrderID, o.Amount, "psp-hung")
			}
			// The gate's answer, not a request that waited for Redis and
			// timed out (5 s) with a generic 503.
			if r.Status != 503 || (i%2 == 0 && !strings.Contains(r.Message, "Redis is unreachable")) {
				bad.Store(r.String())
			}
			if time.Since(start) >= 5*time.Second {
				slow.Add(1)
			}
		}()
	}
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatalf("an answer other than 503 while Redis hangs: %v", v)
	}
	if n := slow.Load(); n > 0 {
		t.Fatalf("%d of 200 requests took the whole request timeout while Redis hangs: they waited for Redis", n)
	}

	st.redis.Resume()
	waitFor(t, 10*time.Second, "sales resumed", func() bool {
		return st.api.Do(t, "GET", "/readyz", nil, nil).Status == 200
	})
	if c := st.api.Confirm(t, "a", o.OrderID, o.Amount, "psp-hung"); c.Status != 200 {
		t.Fatalf("confirm after Redis came back: %s", c)
	}
	if _, ok, code := st.buy(t, ctx, "ev_big"); !ok {
		t.Fatalf("buy after Redis came back: %s", code)
	}
}

// testRebuilder is what `ticketctl rebuild` runs, on the test's Redis.
func testRebuilder(t *testing.T, redisURL string, db *pgxpool.Pool) *rebuild.Rebuilder {
	t.Helper()
	rc := redistest.Client(t, redisURL)
	return &rebuild.Rebuilder{Redis: rc, Pool: db, Catalog: &catalogstore.Store{Redis: rc},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// While Redis loads its data set after a restart (it answers LOADING),
// sales stop with a 503 saying so, and resume by themselves once it has
// loaded, the state intact.
func TestLoadingRedisStopsSalesUntilLoaded(t *testing.T) {
	st := startFaultStack(t, recoveryAuto, "--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes")
	ctx := context.Background()
	if _, ok, code := st.buy(t, ctx, "ev_small"); !ok {
		t.Fatalf("buy: %s", code)
	}
	// A data set that takes a few seconds to load: two million small keys
	// beside ticketd's, in a rewritten AOF.
	rc := st.redis.Client(t)
	for _, cmd := range [][]string{{"DEBUG", "POPULATE", "2000000", "filler"}, {"BGREWRITEAOF"}} {
		if err := rc.Do(ctx, rc.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "the AOF rewrite", func() bool {
		info, _ := rc.Do(ctx, rc.B().Info().Section("persistence").Build()).ToString()
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0")
	})
	st.redis.Kill()
	st.redis.Launch()
	sawLoading := false
	waitFor(t, 60*time.Second, "sales resumed after loading", func() bool {
		r := st.api.Reserve(t, "a", "ev_small", map[string]any{"selectedTicketId": "tk", "quantity": 1})
		switch {
		case r.Status == 503 && strings.Contains(r.Message, "loading"):
			sawLoading = true
		case r.Status == 200:
			return true
		case r.Status != 503:
			t.Fatalf("while Redis loads: %s, want 503", r)
		}
		return false
	})
	if !sawLoading {
		t.Fatal("no answer said Redis is loading; the data set loaded too fast to see it")
	}
	r := st.api.Do(t, "GET", "/v1/channel/events/ev_small", servertest.Keyed("a"), nil)
	if r.Status != 200 || !strings.Contains(string(r.Data), `"remaining":9`) {
		t.Fatalf("event after loading: %s, want 9 left (the sale before the restart kept)", r)
	}
}
