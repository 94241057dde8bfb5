package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/loopback"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// startTicketd runs ticketd with the demo catalog and returns its base URL.
func startTicketd(t *testing.T, cfg config) string {
	t.Helper()
	return runTicketd(t, cfg, options{API: true, Worker: true, Demo: true})
}

// runTicketd runs ticketd as opts asks until the test ends and returns its
// base URL once it listens.
func runTicketd(t *testing.T, cfg config, opts options) string {
	t.Helper()
	return runTicketdLog(t, cfg, opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// runTicketdLog is runTicketd logging to log.
func runTicketdLog(t *testing.T, cfg config, opts options, log *slog.Logger) string {
	t.Helper()
	// Every answer the test gets, from a helper, curl or Chromium, is
	// checked against the OpenAPI document as a test server's are; the
	// check reports at the test's end, after ticketd stopped.
	opts.wrap = servertest.Validating(t)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, opts, log, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ticketd stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("ticketd did not shut down in 30s")
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("ticketd did not start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("ticketd did not start in 30s")
	}
	return ""
}

// call sends a request and returns the status and body (fetchHeaders
// without the headers).
func call(t *testing.T, method, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	st, _, b := fetchHeaders(t, method, url, headers, body)
	return st, b
}

// demoFlow does what the three printed curl lines do and returns the paid
// order's id.
func demoFlow(t *testing.T, base string) string {
	t.Helper()
	h := map[string]string{"x-service-key": "ck_demo", "x-service-secret": "cs_demo_secret", "content-type": "application/json"}
	if st, body := call(t, "GET", base+"/v1/channel/events", h, ""); st != 200 || !strings.Contains(body, "ev_demo_ga") {
		t.Fatalf("catalog: %d %s", st, body)
	}
	h["Idempotency-Key"] = fmt.Sprint(time.Now().UnixNano())
	st, body := call(t, "POST", base+"/v1/channel/events/ev_demo_ga/checkout", h,
		`{"buyerName":"Ada Lovelace","buyerEmail":"ada@example.com","selectedTicketId":"tk_general","quantity":1}`)
	m := regexp.MustCompile(`"orderId":"([^"]+)".*"amount":([0-9.]+)`).FindStringSubmatch(body)
	if st != 200 || m == nil {
		t.Fatalf("reserve: %d %s", st, body)
	}
	amount, _ := money.Parse(m[2])
	delete(h, "Idempotency-Key")
	h["x-service-signature"] = channel.Signature("sk_demo_signing", m[1], amount, "demo-ref-1")
	st, body = call(t, "POST", base+"/v1/channel/orders/confirm", h,
		fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":"demo-ref-1"}`, m[1], m[2]))
	if st != 200 || !strings.Contains(body, `"status":"paid"`) {
		t.Fatalf("confirm: %d %s", st, body)
	}
	return m[1]
}

// localConfig is the environment's config on the real Redis (a key space of
// the test's own), a fresh Postgres database and a free loopback port.
func localConfig(t *testing.T) config {
	t.Helper()
	_, space := redistest.New(t)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.KeyPrefix, cfg.RedisURL = "127.0.0.1:0", space.Prefix, redistest.URL()
	cfg.DatabaseURL = pgtest.NewURL(t)
	return cfg
}

// freeAddr is a loopback address for a ticketd the test starts and must
// know the address of first (its TICKETD_APP_URL): a port below the
// ephemeral range, which no outgoing connection takes meanwhile.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestRunWithLocalServices starts ticketd against the real Redis and
// Postgres, as `make run` does, and runs the demo flow.
func TestRunWithLocalServices(t *testing.T) {
	cfg := localConfig(t)
	base := startTicketd(t, cfg)
	if st, body := call(t, "GET", base+"/readyz", nil, ""); st != 200 || !strings.Contains(body, `"postgres":"ok"`) ||
		!strings.Contains(body, `"payments":"simulated"`) {
		t.Fatalf("readyz: %d %s", st, body)
	}
	order := demoFlow(t, base)

	// The in-process sync worker writes the paid order through.
	ctx := context.Background()
	db, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM tickets WHERE order_id = $1`, order).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("paid order %s has %d tickets in Postgres after 20s, want 1", order, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunFallsBackToEmbeddedRedis: with REDIS_URL unset and no Redis
// reachable, ticketd runs on an embedded Redis, same scripts, and without
// Postgres it still sells (nothing durable).
func TestRunFallsBackToEmbeddedRedis(t *testing.T) {
	cfg := config{Addr: "127.0.0.1:0", AppURL: "http://localhost", RedisURL: "redis://127.0.0.1:1",
		DatabaseURL: "postgres://postgres@127.0.0.1:1/postgres", OrderTTL: time.Minute, SeatHoldTTL: time.Minute, CheckoutTTL: time.Minute,
		Development: true, TestPayments: true, CardProcessor: "card", WalletProcessor: "wallet"}
	base := startTicketd(t, cfg)
	if st, body := call(t, "GET", base+"/healthz", nil, ""); st != 200 {
		t.Fatalf("healthz: %d %s", st, body)
	}
	demoFlow(t, base)
}

// An unset REDIS_URL that does not answer falls back to the embedded Redis
// in development, but not when sales must wait for replicas it never has.
func TestRunRefusesEmbeddedRedisWhenWaitingForReplicas(t *testing.T) {
	cfg := config{Addr: "127.0.0.1:0", RedisURL: "redis://127.0.0.1:1", Development: true, RedisWaitReplicas: 1}
	err := run(context.Background(), cfg, options{API: true}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err == nil || !strings.Contains(err.Error(), "TICKETD_REDIS_WAIT_REPLICAS=1") {
		t.Fatalf("want a refusal naming TICKETD_REDIS_WAIT_REPLICAS, got %v", err)
	}
}

// TestRunRefusesUnreachableExplicitRedis: a REDIS_URL that was set is never
// silently replaced by the embedded Redis.
func TestRunRefusesUnreachableExplicitRedis(t *testing.T) {
	cfg := config{Addr: "127.0.0.1:0", RedisURL: "redis://127.0.0.1:1", RedisURLSet: true, Development: true}
	err := run(context.Background(), cfg, options{API: true}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err == nil || !strings.Contains(err.Error(), "redis") {
		t.Fatalf("want a redis error, got %v", err)
	}
}

// TestDemoCurlLinesWork pastes the three printed lines into one bash, as a
// new user would, against a running ticketd.
func TestDemoCurlLinesWork(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	cfg := localConfig(t)
	base := startTicketd(t, cfg)
	cfg.AppURL = base
	var b bytes.Buffer
	printDemo(&b, cfg, true)
	var script []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "curl ") || strings.HasPrefix(line, "eval ") {
			script = append(script, line)
		}
	}
	if len(script) != 3 {
		t.Fatalf("want 3 command lines, got %d:\n%s", len(script), b.String())
	}
	out, err := exec.Command("bash", "-c", strings.Join(script, "\n")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"status":"paid"`) {
		t.Fatalf("demo lines: %v\n%s", err, out)
	}
}

// TestLoadConfigTTLBounds: TTLs below a second break the scripts (a seat
// hold of PX 0), and a seat hold may not outlive the 30m cap; each refusal
// names its variable.
func TestLoadConfigTTLBounds(t *testing.T) {
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"TICKETD_ORDER_TTL", "500us", false},
		{"TICKETD_ORDER_TTL", "999ms", false},
		{"TICKETD_ORDER_TTL", "1s", true},
		{"TICKETD_ORDER_TTL", "2h", true},
		{"TICKETD_CHECKOUT_TTL", "100ms", false},
		{"TICKETD_CHECKOUT_TTL", "1s", true},
		{"TICKETD_SEAT_HOLD_TTL", "500ms", false},
		{"TICKETD_SEAT_HOLD_TTL", "1s", true},
		{"TICKETD_SEAT_HOLD_TTL", "30m", true},
		{"TICKETD_SEAT_HOLD_TTL", "30m1s", false},
		{"TICKETD_SEAT_HOLD_TTL", "1h", false},
		{"TICKETD_SEAT_HOLD_TTL", "-5m", false},
		{"TICKETD_REDIS_FLUSH_DELAY", "1ns", true}, // "1ns to turn off" (README)
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			for _, v := range []string{"TICKETD_ORDER_TTL", "TICKETD_CHECKOUT_TTL", "TICKETD_SEAT_HOLD_TTL", "TICKETD_REDIS_FLUSH_DELAY"} {
				t.Setenv(v, "")
			}
			t.Setenv(tc.name, tc.value)
			c, err := loadConfig()
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.name) {
					t.Fatalf("want an error naming %s, got %v", tc.name, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := time.ParseDuration(tc.value)
			got := map[string]time.Duration{"TICKETD_ORDER_TTL": c.OrderTTL, "TICKETD_CHECKOUT_TTL": c.CheckoutTTL,
				"TICKETD_SEAT_HOLD_TTL": c.SeatHoldTTL, "TICKETD_REDIS_FLUSH_DELAY": c.RedisFlushDelay}[tc.name]
			if got != want {
				t.Fatalf("%s = %s, want %s", tc.name, got, want)
			}
		})
	}
}

// TestAppURLFollowsAddr: without TICKETD_APP_URL the public URL, and so the
// printed demo curl lines, use the port ticketd listens on.
func TestAppURLFollowsAddr(t *testing.T) {
	cases := []struct{ addr, appURL, want string }{
		{"127.0.0.1:18081", "", "http://localhost:18081"},
		{":9090", "", "http://localhost:9090"},
		{"[::1]:9443", "", "http://localhost:9443"},
		{"", "", "http://localhost:8080"},
		{"127.0.0.1:18081", "https://tickets.example.com", "https://tickets.example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.addr+" "+tc.appURL, func(t *testing.T) {
			t.Setenv("TICKETD_ADDR", tc.addr)
			t.Setenv("TICKETD_APP_URL", tc.appURL)
			cfg, err := loadConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.AppURL != tc.want {
				t.Fatalf("AppURL %q, want %q", cfg.AppURL, tc.want)
			}
			var b bytes.Buffer
			printDemo(&b, cfg, true)
			if n := strings.Count(b.String(), " "+tc.want+"/v1/channel/"); n != 3 {
				t.Fatalf("%d of the 3 curl lines use %s:\n%s", n, tc.want, b.String())
			}
		})
	}
}

// ticketd opens four connections to a Redis that fsyncs every write (each
// fsync then covers more commands), one to any other, and what
// TICKETD_REDIS_CONNECTIONS says when it is set.
func TestRedisConnectionsFollowDurability(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name  string
		args  []string
		conns int
		want  int64
	}{
		{"appendfsync always", []string{"--appendonly", "yes", "--appendfsync", "always"}, 0, durableConnections},
		{"no persistence", nil, 0, 1},
		{"set", nil, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t, tc.args...)
			opt, err := rueidis.ParseURL(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			opt.DisableCache = true
			c, err := newRedisClient(ctx, opt, tc.conns, log)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Commands with keys go down a connection at random: enough of
			// them open every one.
			for i := range 400 {
				if err := c.Do(ctx, c.B().Get().Key(fmt.Sprint("k", i)).Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
					t.Fatal(err)
				}
			}
			admin := srv.Client(t)
			list, err := admin.Do(ctx, admin.B().ClientList().Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			// Every line but the admin's own connection (its CLIENT LIST,
			// without a key, goes down its first connection only).
			n := int64(strings.Count(list, "\n")) - 1
			if n != tc.want {
				t.Fatalf("%d connections to Redis, want %d:\n%s", n, tc.want, list)
			}
		})
	}
}

// The Stripe settings go together: a secret key without the webhook
// secret would open (or close) Stripe sessions whose payments ticketd then
// refuses, with either card processor.
func TestLoadConfigStripeNeedsItsWebhookSecret(t *testing.T) {
	for _, proc := range []string{"stripe", "card"} {
		t.Setenv("TICKETD_CARD_PROCESSOR", proc)
		t.Setenv("STRIPE_SECRET_KEY", "sk_test_x")
		t.Setenv("STRIPE_WEBHOOK_SECRET", "")
		if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "STRIPE_WEBHOOK_SECRET") {
			t.Errorf("TICKETD_CARD_PROCESSOR=%s, STRIPE_SECRET_KEY without STRIPE_WEBHOOK_SECRET: %v", proc, err)
		}
		t.Setenv("STRIPE_WEBHOOK_SECRET", "whsec_x")
		if _, err := loadConfig(); err != nil {
			t.Errorf("TICKETD_CARD_PROCESSOR=%s with both Stripe secrets: %v", proc, err)
		}
	}
}

// A demo shop address already taken: ticketd does not start (nor say it
// is ready) and the error names the address and TICKETD_DEMO_ADDR.
func TestBusyDemoAddr(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := localConfig(t)
	cfg.Addr, cfg.AppURL, cfg.DemoAddr = "127.0.0.1:0", "http://127.0.0.1:1", busy.Addr().String()
	ready := make(chan string, 1)
	err = run(context.Background(), cfg, options{API: true, Demo: true, DemoSite: true},
		slog.New(slog.NewTextHandler(io.Discard, nil)), ready)
	if err == nil || !strings.Contains(err.Error(), "TICKETD_DEMO_ADDR") || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("ticketd with a busy demo address: %v", err)
	}
	select {
	case a := <-ready:
		t.Fatalf("ticketd said it was ready on %s without its demo shop", a)
	default:
	}
}

// The printed summary lists demo.json's events, and advertises the demo
// shop only on a node that serves it (not -mode worker -demo).
func TestPrintDemoShopLine(t *testing.T) {
	cfg := config{AppURL: "http://127.0.0.1:8080", DemoAddr: "localhost:8081"}
	var with, without bytes.Buffer
	printDemo(&with, cfg, true)
	printDemo(&without, cfg, false)
	if !strings.Contains(with.String(), "demo shop        http://localhost:8081") {
		t.Fatalf("the summary does not name the shop:\n%s", with.String())
	}
	if strings.Contains(without.String(), "demo shop") || strings.Contains(without.String(), "8081") {
		t.Fatalf("a node without the shop advertises it:\n%s", without.String())
	}
	if want := "events           ev_demo_ga (GA), ev_demo_seated (seat map), ev_demo_room (GA, waiting room, storefront only), ev_demo_room_seated (seat map, waiting room, storefront only), ev_demo_shows (GA, 3 showings, waiting room, storefront only), ev_demo_matinee (GA, 2 showings, storefront only), ev_demo_free (free, storefront only)"; !strings.Contains(with.String(), want) {
		t.Fatalf("the summary does not list %q:\n%s", want, with.String())
	}
}

// A key prefix with a brace would move the Redis Cluster hash tag off the
// event partition's: ticketd refuses to start with one.
func TestKeyPrefixWithABraceIsRefused(t *testing.T) {
	for _, p := range []string{"{}:", "shop{1}:", "a{"} {
		t.Setenv("TICKETD_KEY_PREFIX", p)
		if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "TICKETD_KEY_PREFIX") {
			t.Fatalf("prefix %q: %v, want an error naming TICKETD_KEY_PREFIX", p, err)
		}
	}
	t.Setenv("TICKETD_KEY_PREFIX", "shop1:")
	if c, err := loadConfig(); err != nil || c.KeyPrefix != "shop1:" {
		t.Fatalf("prefix shop1: %v, %q", err, c.KeyPrefix)
	}
}

// At start ticketd installs its scripts' libraries on its Redis
// (docs/decisions.md, Scripts as Redis functions): no sale waits for a
// load. Another build's library stays: a node of it may be running.
func TestRunInstallsTheScriptsLibraries(t *testing.T) {
	srv := redistest.StartServer(t)
	rc := srv.Client(t)
	ctx := context.Background()
	old := "#!lua name=order_reserve_0123456789ab\nredis.register_function('order_reserve_0123456789ab', function() return 1 end)\n"
	if err := rc.Do(ctx, rc.B().FunctionLoad().FunctionCode(old).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	cfg := localConfig(t)
	cfg.RedisURL = "redis://" + srv.Addr
	runTicketd(t, cfg, options{API: true})
	have, err := eval.Libraries(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	for fn, script := range eval.Names() {
		if !have[fn] {
			t.Errorf("%s's library %s is not installed", script, fn)
		}
	}
	if !have["order_reserve_0123456789ab"] {
		t.Error("another build's order_reserve library was deleted")
	}
}
