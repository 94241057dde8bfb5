package main

// Network faults between ticketd and its stores (issue 11, items 4 and 5):
// a whole ticketd (API and sync worker, as `ticketd` runs) reaches its own
// redis-server and its own Postgres database through toxiproxy proxies run
// in this process, and the tests make those links slow, hung, refused or
// reset while partner buyers and storefront buyers keep buying. The short
// versions here run in `make test`; faults_reliability_test.go holds the
// long ones (`make reliability`).

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// toxicProxy is one toxiproxy proxy, run in this process, between ticketd
// and a store.
type toxicProxy struct {
	p *toxiproxy.Proxy
}

var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// startProxy listens on a free loopback port and forwards to upstream
// (host:port) until t ends.
func startProxy(t *testing.T, name, upstream string) *toxicProxy {
	t.Helper()
	p := toxiproxy.NewProxy(toxiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("toxiproxy %s: %v", name, err)
	}
	t.Cleanup(p.Stop)
	return &toxicProxy{p: p}
}

// Addr is where ticketd connects instead of the store.
func (x *toxicProxy) Addr() string { return x.p.Listen }

// Toxic adds a toxic, e.g. Toxic(t, "latency", "downstream", `{"latency": 200}`).
// Its name is its type.
func (x *toxicProxy) Toxic(t *testing.T, kind, stream, attrs string) {
	t.Helper()
	doc := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "attributes": %s}`, kind, kind, stream, attrs)
	if _, err := x.p.Toxics.AddToxicJson(strings.NewReader(doc)); err != nil {
		t.Fatalf("toxic %s: %v", doc, err)
	}
}

// Refuse closes every connection through the proxy and refuses new ones
// (the store is down, or the link to it).
func (x *toxicProxy) Refuse() { x.p.Stop() }

// Restore removes every toxic (a hung link's connections are closed, as
// TCP gives up on them) and accepts connections again.
func (x *toxicProxy) Restore(t *testing.T) {
	t.Helper()
	x.p.Toxics.ResetToxics(context.Background())
	if !x.p.Enabled {
		if err := x.p.Start(); err != nil {
			t.Fatalf("toxiproxy: start again: %v", err)
		}
	}
}

// faultEvents: ev_p sells to partners (far more than a test buys),
// ev_small to partners too and sells out under the load, ev_s on the
// storefront (channel a may read it, for its remaining count).
const (
	capP, capSmall, capS = 100000, 40, 100000
	faultShopKey         = "pk_fault"
	faultShopOrigin      = "https://shop.example.com"
	faultCardSecret      = "fault-card-webhook-secret"
)

var proxiedCatalog = fmt.Sprintf(`{
 "tenants": [{"id": "t1", "name": "Faults",
  "publishableKeys": [{"key": %q, "domains": ["shop.example.com"], "enabled": true}],
  "events": [
  {"id": "ev_p", "shortId": "evp", "slug": "p", "name": "Partner", "startsAt": "2027-07-01T18:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_a"], "capacity": %d,
   "tickets": [{"id": "tk", "name": "GA", "price": 20, "capacity": %d}]},
  {"id": "ev_small", "shortId": "evsm", "slug": "small", "name": "Small", "startsAt": "2027-07-01T18:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_a"], "capacity": %d,
   "tickets": [{"id": "tk", "name": "GA", "price": 20, "capacity": %d}]},
  {"id": "ev_s", "shortId": "evs", "slug": "s", "name": "Shop", "startsAt": "2027-07-01T18:00:00Z",
   "status": "on_sale", "storefront": true, "channels": ["ch_a"], "capacity": %d,
   "tickets": [{"id": "tk", "name": "GA", "price": 20, "capacity": %d}]}]}],
 "channels": [{"id": "ch_a", "name": "A", "key": "ck_a", "secret": "cs_a_secret", "signingKey": "sk_a",
  "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
  "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit",
  "rateLimits": {"catalog": 1000000, "status": 1000000, "checkout": 1000000, "confirm": 1000000, "session": 1000000}}]}`,
	faultShopKey, capP, capP, capSmall, capSmall, capS, capS)

var faultCaps = map[string]int{"ev_p": capP, "ev_small": capSmall, "ev_s": capS}

// proxiedStack is a whole ticketd whose Redis (a redis-server of the
// test's own) and Postgres (a database of its own) it reaches only through
// the proxies.
type proxiedStack struct {
	redis      *redistest.Server
	redisProxy *toxicProxy
	pgProxy    *toxicProxy
	api        *servertest.Server
	db         *pgxpool.Pool // direct, not through the proxy: the test's view of the record
}

func startProxiedStack(t *testing.T, checkoutTTL time.Duration) *proxiedStack {
	t.Helper()
	srv := redistest.StartServer(t)
	dbURL := pgtest.NewURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	st := &proxiedStack{redis: srv, redisProxy: startProxy(t, "redis", srv.Addr), pgProxy: startProxy(t, "postgres", u.Host)}
	u.Host = st.pgProxy.Addr()
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.RedisURL, cfg.RedisURLSet, cfg.DatabaseURL, cfg.DatabaseURLSet = "127.0.0.1:0", "redis://"+st.redisProxy.Addr(), true, u.String(), true
	cfg.KeyPrefix, cfg.AdminToken, cfg.Recovery = "", "fault-admin", recoveryAuto
	// Every storefront buyer comes from an address of its own, as in a
	// sale (the per-address limits would otherwise stop the load).
	cfg.TrustedProxies, cfg.CardWebhookSecret = "127.0.0.1/32,::1/128", faultCardSecret
	if checkoutTTL > 0 {
		cfg.CheckoutTTL = checkoutTTL
	}
	base := runTicketd(t, cfg, options{API: true, Worker: true})
	// Cleanups run last-in first-out: the links are healed before ticketd
	// shuts down, so its last sync batch is not left hanging on them.
	t.Cleanup(func() { st.redisProxy.Restore(t); st.pgProxy.Restore(t) })
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	st.db = db
	st.api = servertest.Remote(base)
	if r := st.api.Do(t, "PUT", "/v1/admin/catalog", map[string]string{"Authorization": "Bearer fault-admin"}, []byte(proxiedCatalog)); r.Status != 200 {
		t.Fatalf("apply: %s", r)
	}
	return st
}

func (st *proxiedStack) count(t *testing.T, sql string, args ...any) int {
	return pgtest.Count(t, st.db, sql, args...)
}

// remaining is the event's remaining count as a partner reads it.
func (st *proxiedStack) remaining(t *testing.T, event string) int {
	t.Helper()
	r := st.api.Do(t, "GET", "/v1/channel/events/"+event, servertest.Keyed("a"), nil)
	if r.Status != 200 {
		t.Fatalf("event %s: %s", event, r)
	}
	var ev struct {
		Remaining *int `json:"remaining"`
	}
	r.Decode(t, &ev)
	if ev.Remaining == nil {
		t.Fatalf("event %s: no remaining in %s", event, r)
	}
	return *ev.Remaining
}

// ready reads /readyz: its status code and data.
type readyState struct {
	HTTP     int
	Status   string
	Redis    string
	Postgres string
	Backlog  int64
	Oldest   float64 // seconds the oldest backlog entry waited
	Known    bool    // syncBacklog present
}

func (st *proxiedStack) ready(t *testing.T) readyState {
	t.Helper()
	r := st.api.Do(t, "GET", "/readyz", nil, nil)
	var d struct {
		Status      string `json:"status"`
		Redis       string `json:"redis"`
		Postgres    string `json:"postgres"`
		SyncBacklog *struct {
			Entries       int64   `json:"entries"`
			OldestSeconds float64 `json:"oldestSeconds"`
		} `json:"syncBacklog"`
	}
	r.Decode(t, &d)
	s := readyState{HTTP: r.Status, Status: d.Status, Redis: d.Redis, Postgres: d.Postgres}
	if d.SyncBacklog != nil {
		s.Backlog, s.Oldest, s.Known = d.SyncBacklog.Entries, d.SyncBacklog.OldestSeconds, true
	}
	return s
}

// faultLoad is partner and storefront buyers buying one ticket at a time
// until stopped. A partner buyer retries a reserve answered 503 with the
// same Idempotency-Key and a confirm answered 503 as it was, until it gets
// an answer; a storefront buyer retries register-guest (a new
// registration) and the checkout session, and its processor redelivers
// the webhook (same event) until answered 200. Every answer is tallied by
// phase, operation, status and code; the slowest answer of each phase is
// kept.
type faultLoad struct {
	t  *testing.T
	st *proxiedStack

	phase    atomic.Pointer[string]
	stopping atomic.Bool   // no new purchases
	giveUp   atomic.Int64  // unix ns after which a purchase in progress is abandoned
	ipSeq    atomic.Uint32 // storefront buyers' addresses
	hookSeq  atomic.Uint64
	wg       sync.WaitGroup

	mu      sync.Mutex
	answers map[string]map[string]int // phase -> "op status code" -> n
	slowest map[string]time.Duration  // phase -> slowest answer
	paid    map[string]map[string]bool
	refused map[string]int // final refusals, "event code"
	keyed   map[string]string
	regs    map[string]bool // storefront registrations read confirmed
	regEnd  map[string]int  // how the other paid-for registrations ended
	bad     []string        // violations seen by the buyers
	gaveUp  int
	// replays: reserves retried after a 503 whose first attempt had made
	// the order (answered duplicate); lateConfirms: confirms answered 200
	// after a 503 for the same order.
	replays, lateConfirms int

	goroutines map[string]int // phase -> most goroutines sampled
}

func newFaultLoad(t *testing.T, st *proxiedStack) *faultLoad {
	l := &faultLoad{t: t, st: st, answers: map[string]map[string]int{}, slowest: map[string]time.Duration{},
		paid: map[string]map[string]bool{"ev_p": {}, "ev_small": {}}, refused: map[string]int{}, keyed: map[string]string{},
		regs: map[string]bool{}, regEnd: map[string]int{}, goroutines: map[string]int{}}
	l.Phase("warm-up")
	l.giveUp.Store(time.Now().Add(time.Hour).UnixNano())
	// A test that stops early stops its buyers before ticketd stops.
	t.Cleanup(func() { l.giveUp.Store(0); l.stopping.Store(true); l.wg.Wait() })
	return l
}

// startFaultLoad starts a proxied stack (checkoutTTL as startProxiedStack
// takes it) and on it partners partner and shoppers storefront buyers,
// run for warm under the phase "warm-up". base is the goroutines counted
// before the load, for goroutinesSettle.
func startFaultLoad(t *testing.T, checkoutTTL time.Duration, partners, shoppers int, warm time.Duration) (st *proxiedStack, l *faultLoad, base int) {
	t.Helper()
	st = startProxiedStack(t, checkoutTTL)
	base = runtime.NumGoroutine()
	l = newFaultLoad(t, st)
	l.Start(partners, shoppers)
	l.hold("warm-up", warm)
	return st, l, base
}

// Phase names what the answers from now on are tallied under.
func (l *faultLoad) Phase(name string) { l.phase.Store(&name) }

// Start runs partners partner buyers (half on ev_small, which sells out)
// and shoppers storefront buyers, and a goroutine sampler.
func (l *faultLoad) Start(partners, shoppers int) {
	for i := range partners {
		event := "ev_p"
		if i%2 == 1 {
			event = "ev_small"
		}
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.partner(event) }()
	}
	for range shoppers {
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.shopper() }()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for !l.stopping.Load() {
			n := runtime.NumGoroutine()
			l.mu.Lock()
			p := *l.phase.Load()
			l.goroutines[p] = max(l.goroutines[p], n)
			l.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

// Stop lets every buyer finish the purchase in progress (for at most
// within) and waits for them.
func (l *faultLoad) Stop(within time.Duration) {
	l.giveUp.Store(time.Now().Add(within).UnixNano())
	l.stopping.Store(true)
	l.wg.Wait()
}

func (l *faultLoad) abandoned() bool { return time.Now().UnixNano() > l.giveUp.Load() }

// call sends one request and tallies its answer under the phase it was
// sent in.
func (l *faultLoad) call(op string, send func() *servertest.Response) *servertest.Response {
	p := *l.phase.Load()
	start := time.Now()
	r := send()
	l.tally(op, p, time.Since(start), r)
	return r
}

// tally records one answer.
func (l *faultLoad) tally(op, p string, took time.Duration, r *servertest.Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.answers[p] == nil {
		l.answers[p] = map[string]int{}
	}
	key := strings.TrimSpace(fmt.Sprintf("%s %d %s", op, r.Status, r.Code))
	if r.Status == 503 {
		// Who said it: the gate, at once, or a request that waited for
		// Redis until its timeout.
		if strings.Contains(r.Message, "sales are stopped") {
			key += " (gate)"
		} else {
			key += " (waited)"
		}
	}
	l.answers[p][key]++
	l.slowest[p] = max(l.slowest[p], took)
	if r.Status >= 400 && (r.Success || r.Code == "" || r.Message == "") {
		l.bad = append(l.bad, fmt.Sprintf("%s answered without the error envelope: %s", op, r))
	}
}

func (l *faultLoad) pause() { time.Sleep(20 * time.Millisecond) }

// retry sends op (send, tallied by call) again, after a pause, until
// final says its answer is the last; then it returns that answer and
// whether it came on a retry. Once the purchase is abandoned it returns
// nil, counted given up.
func (l *faultLoad) retry(op string, final func(*servertest.Response) bool, send func() *servertest.Response) (r *servertest.Response, retried bool) {
	for ; ; retried = true {
		if r = l.call(op, send); final(r) {
			return r, retried
		}
		if l.abandoned() {
			l.abandon()
			return nil, retried
		}
		l.pause()
	}
}

// Which answers end a retry: a buyer sends again only what was answered
// 503 (reserve, confirm, register, checkout); a processor redelivers a
// webhook, and the success page reads again, until answered 200.
func not503(r *servertest.Response) bool { return r.Status != 503 }
func is200(r *servertest.Response) bool  { return r.Status == 200 }

// partner buys one ticket of event at a time as a partner's server does.
func (l *faultLoad) partner(event string) {
	t := l.t
	for !l.stopping.Load() {
		key := servertest.NewKey()
		r, _ := l.retry("reserve", not503, func() *servertest.Response {
			return l.st.api.ReserveWithKey(t, "a", event, key, map[string]any{"selectedTicketId": "tk", "quantity": 1})
		})
		if r == nil {
			return
		}
		var o servertest.Reserved
		if r.Status == 200 {
			r.Decode(t, &o)
			l.mu.Lock()
			if o.Duplicate {
				l.replays++
			}
			if prev, ok := l.keyed[key]; ok && prev != o.OrderID {
				l.bad = append(l.bad, fmt.Sprintf("Idempotency-Key %s reserved %s, then %s", key, prev, o.OrderID))
			}
			l.keyed[key] = o.OrderID
			l.mu.Unlock()
		} else {
			l.refuse(event, r.Code)
		}
		if o.OrderID == "" {
			l.pause()
			continue
		}
		c, retried := l.retry("confirm", not503, func() *servertest.Response {
			return l.st.api.Confirm(t, "a", o.OrderID, o.Amount, "psp-"+o.OrderID)
		})
		switch {
		case c == nil:
			return
		case c.Status == 200:
			l.mu.Lock()
			l.paid[event][o.OrderID] = true
			if retried {
				l.lateConfirms++
			}
			l.mu.Unlock()
		default:
			l.refuse(event, c.Code)
		}
	}
}

func (l *faultLoad) refuse(event, code string) {
	l.mu.Lock()
	l.refused[event+" "+code]++
	l.mu.Unlock()
}

func (l *faultLoad) abandon() {
	l.mu.Lock()
	l.gaveUp++
	l.mu.Unlock()
}

// front is a storefront call of the buyer at ip, for retry.
func (l *faultLoad) front(method, path, ip string, body any) func() *servertest.Response {
	h := map[string]string{"x-service-key": faultShopKey, "Origin": faultShopOrigin, "X-Forwarded-For": ip}
	return func() *servertest.Response { return l.st.api.Do(l.t, method, "/v1/storefront"+path, h, body) }
}

// shopper buys one storefront ticket at a time: register-guest, the card
// checkout session, the processor's webhook, the success page's read.
func (l *faultLoad) shopper() {
	t := l.t
	for !l.stopping.Load() {
		n := l.ipSeq.Add(1)
		ip := fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
		var reg servertest.Registered
		for reg.RegistrationID == "" {
			r, _ := l.retry("register", not503, l.front("POST", "/register-guest", ip, map[string]any{"eventId": "ev_s", "name": "Grace Hopper",
				"email": fmt.Sprintf("buyer-%d@example.com", n), "selectedTicketId": "tk", "quantity": 1}))
			if r == nil {
				return
			}
			if r.Status != 200 {
				l.refuse("ev_s", r.Code)
				return
			}
			r.Decode(t, &reg)
		}
		var session string
		for session == "" {
			r, _ := l.retry("checkout", not503, l.front("POST", "/card/create-checkout-session", ip, map[string]any{"eventId": "ev_s",
				"registrationId": reg.RegistrationID, "selectedTicketId": "tk", "quantity": 1, "selectedTicketAmount": reg.Total,
				"successUrl": faultShopOrigin + "/thanks", "cancelUrl": faultShopOrigin + "/cancelled"}))
			if r == nil {
				return
			}
			if r.Status != 200 {
				// The hold expired while Redis was away: the buyer starts over.
				l.endReg("checkout " + r.Code)
				session = "-"
				break
			}
			var d struct {
				URL string `json:"url"`
			}
			r.Decode(t, &d)
			session = d.URL[strings.LastIndexByte(d.URL, '/')+1:]
		}
		if session == "-" {
			continue
		}
		hook := fmt.Sprintf(`{"id":"evt_fault_%d","type":%q,"data":{"object":{"id":%q,"payment_status":"paid","amount_total":%d,"currency":"usd","client_reference_id":%q}}}`,
			l.hookSeq.Add(1), payments.EventCheckoutCompleted, session, int64(reg.Total), reg.RegistrationID)
		if r, _ := l.retry("webhook", is200, func() *servertest.Response {
			return l.st.api.Do(t, "POST", "/v1/webhooks/card", map[string]string{payments.SignatureHeader: payments.Sign(faultCardSecret, time.Now(), []byte(hook))}, []byte(hook))
		}); r == nil {
			return
		}
		r, _ := l.retry("read", is200, l.front("GET", "/registration/"+reg.RegistrationID, ip, nil))
		if r == nil {
			return
		}
		var got servertest.Registered
		r.Decode(t, &got)
		if got.Status == "confirmed" && got.Payment.PaymentStatus == "paid" {
			l.mu.Lock()
			l.regs[reg.RegistrationID] = true
			l.mu.Unlock()
		} else {
			l.endReg(got.Status + "/" + got.Payment.PaymentStatus)
		}
	}
}

func (l *faultLoad) endReg(how string) {
	l.mu.Lock()
	l.regEnd[how]++
	l.mu.Unlock()
}

// Answers is phase's tally, sorted, for messages and the report.
func (l *faultLoad) Answers(phase string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for k, n := range l.answers[phase] {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Phases are the phases that have answers.
func (l *faultLoad) Phases() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for p := range l.answers {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// OnlyAnswers fails t unless every answer of phase is one of allowed
// ("op status code" prefixes: "reserve 200", "confirm 503").
func (l *faultLoad) OnlyAnswers(phase string, allowed ...string) {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for k, n := range l.answers[phase] {
		for _, a := range allowed {
			if strings.HasPrefix(k, a) {
				continue next
			}
		}
		l.t.Errorf("phase %s: %d answers %q; only %v are expected", phase, n, k, allowed)
	}
}

// total is how many answers of phase began with prefix.
func (l *faultLoad) total(phase, prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, c := range l.answers[phase] {
		if strings.HasPrefix(k, prefix) {
			n += c
		}
	}
	return n
}

// Violations fails t with what the buyers saw that must never be.
func (l *faultLoad) Violations() {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, b := range l.bad {
		if i == 10 {
			l.t.Errorf("... and %d more", len(l.bad)-10)
			break
		}
		l.t.Error(b)
	}
	if l.gaveUp > 0 {
		l.t.Errorf("%d purchases still had no answer other than 503 after the faults were healed", l.gaveUp)
	}
}

// CheckRecord waits for the sync worker to write every paid order, then
// checks the counts that prove nothing lost or doubled: Postgres holds
// exactly the orders acknowledged paid (partner confirms answered 200,
// storefront registrations read confirmed), one ticket each; each event's
// remaining count is its capacity less those; ev_small is not oversold.
// It returns the counts in words for the report.
func (l *faultLoad) CheckRecord(within time.Duration) string {
	t, st := l.t, l.st
	t.Helper()
	var words []string
	for _, event := range []string{"ev_p", "ev_small", "ev_s"} {
		l.mu.Lock()
		var acked []string
		if event == "ev_s" {
			acked = keysOf(l.regs)
		} else {
			acked = keysOf(l.paid[event])
		}
		l.mu.Unlock()
		deadline := time.Now().Add(within)
		for st.count(t, `SELECT count(*) FROM orders WHERE event_id = $1`, event) < len(acked) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		rows := st.count(t, `SELECT count(*) FROM orders WHERE event_id = $1`, event)
		mine := st.count(t, `SELECT count(*) FROM orders WHERE event_id = $1 AND id = ANY($2)`, event, acked)
		tickets := st.count(t, `SELECT count(*) FROM tickets WHERE event_id = $1`, event)
		if rows != len(acked) || mine != len(acked) || tickets != len(acked) {
			t.Errorf("%s: Postgres holds %d orders (%d of the %d acknowledged paid) and %d tickets; want exactly the %d acknowledged, one ticket each",
				event, rows, mine, len(acked), tickets, len(acked))
		}
		// Storefront holds the fault left unpaid give their tickets back
		// when the checkout window ends: wait for that, then the count
		// must be exact.
		want := faultCaps[event] - len(acked)
		rem := st.remaining(t, event)
		for rem != want && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			rem = st.remaining(t, event)
		}
		if rem != want {
			t.Errorf("%s: remaining %d, want capacity %d less the %d paid = %d", event, rem, faultCaps[event], len(acked), want)
		}
		if event == "ev_small" && len(acked) > capSmall {
			t.Errorf("ev_small: %d confirmed for a capacity of %d: oversold", len(acked), capSmall)
		}
		words = append(words, fmt.Sprintf("%s paid %d = Postgres rows %d = tickets %d, remaining %d = capacity %d - paid", event, len(acked), rows, tickets, rem, faultCaps[event]))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	words = append(words, fmt.Sprintf("Idempotency-Keys %d, every retry answered its one order (%d replays of an order made by an attempt answered 503); "+
		"confirms paid on a retry after a 503 %d; refusals %v; unpaid storefront ends %v; violations %d",
		len(l.keyed), l.replays, l.lateConfirms, l.refused, l.regEnd, len(l.bad)))
	return strings.Join(words, "; ")
}

// goroutinesSettle waits for the process' goroutines to come back within
// slack of base, and fails t if they do not: requests and Redis calls
// abandoned during a fault must not leave goroutines behind.
func goroutinesSettle(t *testing.T, base, slack int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	n := runtime.NumGoroutine()
	for n > base+slack && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > base+slack {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines %s after the load, %d before it: a pile-up\n%s", n, within, base, buf[:runtime.Stack(buf, true)])
	}
	return n
}

// hold runs the load for d under the phase name.
func (l *faultLoad) hold(phase string, d time.Duration) {
	l.Phase(phase)
	time.Sleep(d)
}

// waitReady polls /readyz until cond holds, for at most d.
func (st *proxiedStack) waitReady(t *testing.T, d time.Duration, what string, cond func(readyState) bool) readyState {
	t.Helper()
	var s readyState
	deadline := time.Now().Add(d)
	for s = st.ready(t); !cond(s); s = st.ready(t) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; readyz says %+v", what, d, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
	return s
}

// Answers a buyer may get while Redis is slow or cut: a sale, a refusal
// that is the buyer's (sold out, or a hold that ran out meanwhile), the
// 503 envelope that says retry. Never a 500, a 502 or a bare error.
var (
	saleAnswers = []string{"reserve 200", "confirm 200", "register 200", "checkout 200", "webhook 200", "read 200",
		"reserve 409 EVENT_SOLD_OUT", "reserve 409 TICKET_SOLD_OUT", "reserve 409 DUPLICATE_IN_PROGRESS", "confirm 409 CONFIRM_FAILED",
		"checkout 409 REGISTRATION_NOT_PAYABLE"}
	retryAnswers = []string{"reserve 503 SERVICE_UNAVAILABLE", "confirm 503 ACCRUAL_FAILED_RETRY", "register 503 SERVICE_UNAVAILABLE",
		"checkout 503 SERVICE_UNAVAILABLE", "webhook 503 SERVICE_UNAVAILABLE", "read 503 SERVICE_UNAVAILABLE",
		// A delivery whose booking is still running, or whose mark a
		// call that timed out left: the processor retries it.
		"webhook 409 WEBHOOK_IN_PROGRESS"}
	anyAnswer = append(append([]string{}, saleAnswers...), retryAnswers...)
)

// redisFault is one fault on the Redis link, injected into a running
// load: inject, wait for the health check to stop sales, hold it, heal it,
// wait for sales to resume.
func redisFault(t *testing.T, st *proxiedStack, l *faultLoad, name string, hold time.Duration, inject func()) {
	t.Helper()
	inject()
	// Requests that passed the gate before it closed wait for Redis up to
	// the request timeout: they are tallied apart.
	l.Phase(name + " starting")
	st.waitReady(t, 10*time.Second, name+": readyz to say Redis is unreachable", func(s readyState) bool { return s.HTTP == 503 })
	l.hold(name, hold)
	// Requests sent under the fault reach the gate before it heals (the
	// machine may be slow to schedule them), so the phase's answers are
	// the fault's.
	l.Phase(name + " healing")
	time.Sleep(500 * time.Millisecond)
	st.redisProxy.Restore(t)
	st.waitReady(t, 10*time.Second, name+": readyz ok again", func(s readyState) bool { return s.HTTP == 200 })
	l.Phase("healed")
}

// checkRedisFault fails t unless, during the fault called name, every
// answer was a sale or the 503 envelope, those sent once sales had
// stopped came back at once (they did not wait for Redis), and goroutines
// stayed bounded (at most 100 above the most seen under the same load
// before).
//
// The slowest answer of each phase is checked for the request timeouts:
// those that passed the gate just before it closed wait for them.
func checkRedisFault(t *testing.T, l *faultLoad, name string) {
	t.Helper()
	for _, p := range l.Phases() {
		l.OnlyAnswers(p, anyAnswer...)
		// A request that got past the gate before it closed waits for
		// Redis until its timeout (5 s; a webhook 10 s), plus a cleanup
		// on a short context of its own: bounded, where the hung link
		// itself would hold it for ever.
		if s := l.slowest[p]; s > 12*time.Second {
			t.Errorf("%s: an answer took %s: past the request timeouts", p, s)
		}
	}
	if s := l.slowest[name]; s > 2*time.Second {
		t.Errorf("%s: an answer took %s while the health check knew Redis was away: it waited for Redis", name, s)
	}
	if l.total(name, "") == 0 {
		t.Errorf("%s: no answers: the load did not run", name)
	}
	if l.total(name, "") == l.total(name, "read 200")+l.total(name, "reserve 200")+l.total(name, "confirm 200") {
		t.Errorf("%s: nothing was refused while sales were stopped: the fault did not bite (%s)", name, l.Answers(name))
	}
	if g := l.goroutines[name]; g > l.goroutines["warm-up"]+100 {
		t.Errorf("%s: %d goroutines, %d under the same load before: a pile-up", name, g, l.goroutines["warm-up"])
	}
}

// checkSlowRedis fails t unless, while Redis answered 200 ms late, sales
// went on (confirms paid) and every answer was a sale or the 503 envelope.
// 200 ms is within the health check's 1 s, so sales are not meant to
// stop; but 503s were seen once in this phase on the shared 2-core
// machine under -race (not pinned down; most likely a check overrunning
// its 1 s while starved of CPU), and a 503 is what the contract allows.
func checkSlowRedis(t *testing.T, l *faultLoad, phase string) {
	t.Helper()
	l.OnlyAnswers(phase, anyAnswer...)
	if l.total(phase, "confirm 200") == 0 {
		t.Errorf("%s: no confirm went through while Redis was only slow: %s", phase, l.Answers(phase))
	}
}

// TestFaultRedisSlow: Redis answers 200 ms late, then 2 s late (beyond
// the health check's 1 s, near the 5 s request timeout), under partner and
// storefront load. With 200 ms sales go on; with 2 s every answer is a sale or the 503 envelope, none waits past the
// request timeout, those sent once sales stopped come back at once, and
// goroutines do not pile up; once Redis is fast again the retried
// purchases complete: nothing sold twice or lost.
func TestFaultRedisSlow(t *testing.T) {
	skipUnderLongFaults(t)
	st, l, base := startFaultLoad(t, 3*time.Second, 6, 4, time.Second)
	st.redisProxy.Toxic(t, "latency", "downstream", `{"latency": 200}`)
	l.hold("+200ms", 2*time.Second)
	// The requests sent under +200 ms finish before the next toxic.
	l.Phase("between")
	st.redisProxy.Restore(t)
	time.Sleep(time.Second)
	// Those that passed the gate before it closed take up to the 5 s
	// request timeout: the phase outlasts them.
	redisFault(t, st, l, "+2s", 5*time.Second, func() { st.redisProxy.Toxic(t, "latency", "downstream", `{"latency": 2000}`) })
	l.hold("healed", time.Second)
	l.Stop(20 * time.Second)
	after := goroutinesSettle(t, base, 40, 15*time.Second)

	l.Violations()
	checkSlowRedis(t, l, "+200ms")
	checkRedisFault(t, l, "+2s")
	counts := l.CheckRecord(30 * time.Second)
	faultreport.Print(t, faultreport.Report{
		Injected: "Redis link +200 ms (toxiproxy latency) for 2 s, then +2 s for 5 s after sales stopped",
		Load: fmt.Sprintf("6 partner + 4 storefront buyers; +200ms: %s | +2s, sales stopped (slowest %s): %s | +2s, sent before: %s; goroutines %d before, at most %d under load, %d during +2s, %d after",
			l.Answers("+200ms"), l.slowest["+2s"].Round(time.Millisecond), l.Answers("+2s"), l.Answers("+2s starting"),
			base, l.goroutines["warm-up"], l.goroutines["+2s"], after),
		Counts: counts,
	})
}

// TestFaultRedisCut: the link to Redis hangs (requests reach Redis, no
// reply comes back: the calls in flight have an unknown outcome) under
// load, then its connections drop and it heals. Meanwhile purchases fail
// fast with the 503 envelope; the buyers' retries with the same
// Idempotency-Key (a partner) and the same webhook (the processor) then
// complete them: nothing sold twice, every acknowledged confirm paid and
// in Postgres once, sold counts equal to the confirmed orders.
func TestFaultRedisCut(t *testing.T) {
	skipUnderLongFaults(t)
	st, l, base := startFaultLoad(t, 3*time.Second, 6, 4, time.Second)
	redisFault(t, st, l, "hung", 5*time.Second, func() { st.redisProxy.Toxic(t, "timeout", "downstream", `{"timeout": 0}`) })
	l.hold("healed", 2*time.Second)
	l.Stop(20 * time.Second)
	after := goroutinesSettle(t, base, 40, 15*time.Second)

	l.Violations()
	checkRedisFault(t, l, "hung")
	if n := l.total("healed", "confirm 200") + l.total("healed", "webhook 200"); n == 0 {
		t.Errorf("no sale after the link healed: %s", l.Answers("healed"))
	}
	counts := l.CheckRecord(30 * time.Second)
	faultreport.Print(t, faultreport.Report{
		Injected: "Redis link hung (toxiproxy timeout downstream: requests reach Redis, no reply) 5 s after sales stopped, then its connections dropped",
		Load: fmt.Sprintf("6 partner + 4 storefront buyers; hung, sales stopped (slowest %s): %s | hung, sent before: %s | healing: %s | healed: %s; goroutines %d before, %d after",
			l.slowest["hung"].Round(time.Millisecond), l.Answers("hung"), l.Answers("hung starting"), l.Answers("hung healing"), l.Answers("healed"), base, after),
		Counts: counts,
	})
}

// postgresFault is one fault on the Postgres link under a running load:
// sales must go on (only sale answers, no 503), /readyz must say degraded
// with Postgres unreachable, and the sync backlog it reports must grow
// while the fault lasts. It returns the backlog first and last seen.
func postgresFault(t *testing.T, st *proxiedStack, l *faultLoad, name string, hold time.Duration, inject func()) (first, last int64) {
	t.Helper()
	inject()
	l.Phase(name)
	s := st.waitReady(t, 10*time.Second, name+": readyz to say degraded", func(s readyState) bool {
		return s.HTTP == 200 && s.Status == "degraded" && s.Postgres == "unreachable" && s.Known
	})
	first = s.Backlog
	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		s = st.ready(t)
		if s.HTTP != 200 || s.Status != "degraded" {
			t.Errorf("%s: readyz %d %s while Postgres is away, want 200 degraded (sales go on)", name, s.HTTP, s.Status)
		}
	}
	last = s.Backlog
	if last <= first {
		t.Errorf("%s: the sync backlog went from %d to %d while Postgres was away and sales went on: it must grow", name, first, last)
	}
	l.Phase(name + " healing")
	st.pgProxy.Restore(t)
	// The load goes on, so the backlog is seldom empty: the worker has
	// caught up once the oldest entry waiting is younger than the fault
	// (the backlog is read every 500 ms). The drain to 0 is checked once the
	// load stops (drained).
	st.waitReady(t, 60*time.Second, name+": the worker caught up", func(s readyState) bool {
		return s.HTTP == 200 && s.Status == "ok" && s.Known && s.Oldest < 2
	})
	l.Phase("healed")
	l.OnlyAnswers(name, saleAnswers...)
	if l.total(name, "confirm 200") == 0 || l.total(name, "webhook 200") == 0 {
		t.Errorf("%s: no sale while Postgres was away: %s", name, l.Answers(name))
	}
	return first, last
}

// salesOnly fails l's test unless every answer of every phase was a sale
// (or the buyer's own refusal): with Redis well, nothing Postgres does
// may turn into a 503.
func salesOnly(l *faultLoad) {
	l.t.Helper()
	for _, p := range l.Phases() {
		l.OnlyAnswers(p, saleAnswers...)
	}
}

// endPostgresFault ends a Postgres fault test: it stops the load (for at
// most within), waits for the sync backlog to drain to 0 and for the
// goroutines to settle, and checks what each of those tests asserts at
// the end: no violation, only sale answers, and the record exact (waiting
// up to record for the worker). It returns the goroutines after and the
// counts for the report.
func endPostgresFault(t *testing.T, st *proxiedStack, l *faultLoad, base int, within, record time.Duration) (after int, counts string) {
	t.Helper()
	l.Stop(within)
	st.drained(t)
	after = goroutinesSettle(t, base, 40, 15*time.Second)

	l.Violations()
	salesOnly(l)
	return after, l.CheckRecord(record)
}

// drained waits, with the load stopped, for /readyz to report an empty
// sync backlog.
func (st *proxiedStack) drained(t *testing.T) {
	t.Helper()
	st.waitReady(t, 30*time.Second, "the sync backlog drained to 0", func(s readyState) bool {
		return s.HTTP == 200 && s.Status == "ok" && s.Known && s.Backlog == 0
	})
}

// TestFaultPostgresCut: Postgres refuses connections (the server or the
// link down) for 5 s under partner and storefront load. Sales go on,
// every answer a sale; /readyz says degraded with the sync backlog
// growing; once Postgres is back the backlog drains to 0 and Postgres
// holds exactly one order per paid order, nothing lost or doubled.
func TestFaultPostgresCut(t *testing.T) {
	skipUnderLongFaults(t)
	st, l, base := startFaultLoad(t, 0, 6, 4, time.Second)
	first, last := postgresFault(t, st, l, "postgres down", 5*time.Second, st.pgProxy.Refuse)
	l.hold("healed", time.Second)
	after, counts := endPostgresFault(t, st, l, base, 20*time.Second, 30*time.Second)
	faultreport.Print(t, faultreport.Report{
		Injected: "Postgres link down 5 s after /readyz said degraded (toxiproxy disabled: connections closed and refused)",
		Load: fmt.Sprintf("6 partner + 4 storefront buyers; postgres down: %s; readyz degraded, sync backlog %d -> %d, drained to 0 after; goroutines %d before, %d after",
			l.Answers("postgres down"), first, last, base, after),
		Counts: counts,
	})
}
