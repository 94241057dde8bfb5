package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// The production settings of these tests: a secrets key of 32 bytes and an
// admin token to apply the catalog with (-demo is refused in production).
const (
	prodSecretsKey = "prod-secrets-key-for-tests-0123456789"
	prodAdmin      = "prod-admin-token"
)

// freeAppURL is an address ticketd may listen on and its URL: the hosted
// pages and the test processors' webhooks go to TICKETD_APP_URL, so it
// must be ticketd's own.
func freeAppURL(t *testing.T) (addr, url string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	return addr, "http://" + addr
}

// startProduction runs ticketd in production mode (TICKETD_ENV=production,
// the default), configured through the environment as an operator does
// (extra: more variables), with the demo catalog applied through the
// admin surface. It returns the config, the base URL and the log.
func startProduction(t *testing.T, extra map[string]string) (config, string, *syncBuffer) {
	t.Helper()
	t.Setenv("TICKETD_ENV", "production")
	t.Setenv("TICKETD_SECRETS_KEY", prodSecretsKey)
	t.Setenv("TICKETD_ADMIN_TOKEN", prodAdmin)
	for k, v := range extra {
		t.Setenv(k, v)
	}
	cfg := localConfig(t)
	cfg.Addr, cfg.AppURL = freeAppURL(t)
	if cfg.Development || cfg.SecretsKey != prodSecretsKey {
		t.Fatalf("not a production config: %+v", cfg)
	}
	logs := &syncBuffer{}
	base := runTicketdLog(t, cfg, options{API: true, Worker: true}, slog.New(slog.NewTextHandler(logs, nil)))
	if st, body := call(t, "PUT", base+"/v1/admin/catalog", map[string]string{"Authorization": "Bearer " + prodAdmin}, string(demoCatalog)); st != 200 {
		t.Fatalf("apply the catalog: %d %s", st, body)
	}
	return cfg, base, logs
}

// registerGA registers a guest for n general tickets of ev_demo_ga on the
// storefront: the registration's id and total.
func registerGA(t *testing.T, base string, n int) (id string, total money.Cents, body string) {
	t.Helper()
	// A buyer of its own each time: a buyer's newer registration releases
	// the older one awaiting payment.
	return registerGAAs(t, base, n, fmt.Sprintf("ada%d@example.com", buyerSeq.Add(1)))
}

// registerGAAs is registerGA for the buyer with the e-mail address email.
func registerGAAs(t *testing.T, base string, n int, email string) (id string, total money.Cents, body string) {
	t.Helper()
	st, body := call(t, "POST", base+"/v1/storefront/register-guest", shopHeaders, fmt.Sprintf(
		`{"eventId":"ev_demo_ga","name":"Ada Lovelace","email":%q,"selectedTicketId":"tk_general","quantity":%d}`, email, n))
	var reg struct {
		Data struct {
			RegistrationID string      `json:"registrationId"`
			Status         string      `json:"status"`
			Total          money.Cents `json:"total"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &reg); st != 200 || err != nil || reg.Data.Status != "awaiting_payment" {
		t.Fatalf("register-guest: %d %s (%v)", st, body, err)
	}
	return reg.Data.RegistrationID, reg.Data.Total, body
}

// buyerSeq numbers registerGA's buyers.
var buyerSeq atomic.Int64

// payCalls are the storefront's two payment calls for a registration of n
// general tickets: path and body.
func payCalls(id string, n int, total money.Cents) [][2]string {
	urls := `"successUrl":"http://localhost:3000/ok","cancelUrl":"http://localhost:3000/cart"`
	return [][2]string{
		{"/v1/storefront/card/create-checkout-session", fmt.Sprintf(
			`{"eventId":"ev_demo_ga","registrationId":%q,"selectedTicketId":"tk_general","quantity":%d,"selectedTicketAmount":%d,%s}`,
			id, n, 25*n, urls)},
		{"/v1/storefront/wallet/create-payment", fmt.Sprintf(
			`{"eventId":"ev_demo_ga","registrationId":%q,"selectedTicketId":"tk_general","quantity":%d,"amount":%s,%s}`,
			id, n, total, urls)},
	}
}

// eventPayments is what the storefront event detail says of payments.
func eventPayments(t *testing.T, base, event string) (methods []string, testMode bool) {
	t.Helper()
	st, body := call(t, "GET", base+"/v1/storefront/events/"+event, shopHeaders, "")
	var ev struct {
		Data struct {
			ID             string    `json:"id"`
			PaymentMethods *[]string `json:"paymentMethods"`
			TestMode       bool      `json:"testMode"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &ev); st != 200 || err != nil || ev.Data.ID != event || ev.Data.PaymentMethods == nil {
		t.Fatalf("event %s: %d %s (%v): want paymentMethods", event, st, body, err)
	}
	return *ev.Data.PaymentMethods, ev.Data.TestMode
}

// The probe of issue 17, in production (the default): ticketd runs no test
// processor, so the test wallet that confirmed ten tickets without payment
// and the test card page that took any Luhn-valid number do not exist:
// their pages and webhooks are 404, and a payment call answers 409
// PAYMENT_METHOD_UNAVAILABLE. The event detail says no method is
// available, free registrations and the partner surface work, and nothing
// says test mode.
func TestProductionServesNoTestPayments(t *testing.T) {
	_, base, logs := startProduction(t, nil)
	if st, body := call(t, "GET", base+"/readyz", nil, ""); st != 200 || !strings.Contains(body, `"payments":"live"`) {
		t.Fatalf("readyz: %d %s, want payments live", st, body)
	}
	if methods, testMode := eventPayments(t, base, "ev_demo_ga"); len(methods) != 0 || testMode {
		t.Fatalf("event detail: paymentMethods %v, testMode %v; want [] and no test mode", methods, testMode)
	}
	id, total, body := registerGA(t, base, 10)
	if strings.Contains(body, "testMode") {
		t.Fatalf("a production registration says test mode: %s", body)
	}
	for _, c := range payCalls(id, 10, total) {
		st, body := call(t, "POST", base+c[0], shopHeaders, c[1])
		if st != 409 || !strings.Contains(body, `"code":"PAYMENT_METHOD_UNAVAILABLE"`) {
			t.Fatalf("%s without a processor: %d %s, want 409 PAYMENT_METHOD_UNAVAILABLE", c[0], st, body)
		}
	}
	// The test processors' pages and webhooks are not there, whatever the
	// session id; a webhook signed with the key ticketd would derive is
	// not read either.
	derived := func(purpose string) string { return fmt.Sprintf("%x", derive(prodSecretsKey, purpose)) }
	hook := fmt.Sprintf(`{"id":"wp_x_%s","status":"COMPLETED","amount":%s,"currency":"USD","reference":%q}`, id, total, id)
	for _, r := range []struct{ method, path, secret string }{
		{"GET", "/pay/wallet/wp_0123456789abcdef01234567_" + id, ""},
		{"POST", "/pay/wallet/wp_0123456789abcdef01234567_" + id + "/pay", ""},
		{"GET", "/pay/card/cs_0123456789abcdef01234567_" + id, ""},
		{"POST", "/pay/card/cs_0123456789abcdef01234567_" + id + "/pay", ""},
		{"GET", "/assets/pages/pay.css", ""},
		{"POST", "/v1/webhooks/wallet", derived(purposeWalletWebhooks)},
		{"POST", "/v1/webhooks/card", derived(purposeCardWebhooks)},
	} {
		h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
		if r.secret != "" {
			h = map[string]string{"Content-Type": "application/json", payments.SignatureHeader: payments.Sign(r.secret, time.Now(), []byte(hook))}
		}
		if st, body := call(t, r.method, base+r.path, h, hook); st != 404 {
			t.Fatalf("%s %s in production: %d %s, want 404", r.method, r.path, st, body)
		}
	}
	if s, ps, _ := registrationState(t, base, id); s != "awaiting_payment" || ps != "unpaid" {
		t.Fatalf("after the probe the registration is %s, payment %s", s, ps)
	}
	// Free tickets need no processor; nor does a partner.
	st, body := call(t, "POST", base+"/v1/storefront/register-guest", shopHeaders,
		`{"eventId":"ev_demo_free","name":"Ada Lovelace","email":"ada@example.com","selectedTicketId":"tk_free","quantity":2}`)
	if st != 200 || !strings.Contains(body, `"status":"confirmed"`) {
		t.Fatalf("free registration in production: %d %s", st, body)
	}
	demoFlow(t, base)
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "production mode") && (!strings.Contains(l, "card=none") || !strings.Contains(l, "wallet=none")) {
			t.Fatalf("the start line does not say no processor runs: %s", l)
		}
	}
	if l := logs.String(); !strings.Contains(l, "production mode") || strings.Contains(strings.ToLower(l), "simulated") {
		t.Fatalf("production's start log:\n%s", l)
	}
}

// Production never falls back to an embedded Redis, nor runs without
// Postgres (write-through off), where development does (make run on a
// laptop): it refuses to start and says why.
func TestProductionRefusesEmbeddedRedisAndNoPostgres(t *testing.T) {
	_, space := redistest.New(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	base := config{Addr: "127.0.0.1:0", AppURL: "http://localhost", SecretsKey: prodSecretsKey, KeyPrefix: space.Prefix,
		OrderTTL: time.Minute, SeatHoldTTL: time.Minute, CheckoutTTL: time.Minute, RedisFlushDelay: 20 * time.Microsecond}
	noRedis := base
	noRedis.RedisURL, noRedis.DatabaseURL = "redis://127.0.0.1:1", pgtest.NewURL(t)
	err := run(context.Background(), noRedis, options{API: true, Worker: true}, quiet, nil)
	if err == nil || !strings.Contains(err.Error(), "never falls back to an embedded Redis") || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("production with Redis unreachable: %v, want a refusal naming REDIS_URL", err)
	}
	noPostgres := base
	noPostgres.RedisURL, noPostgres.DatabaseURL = redistest.URL(), "postgres://postgres@127.0.0.1:1/ticketd?sslmode=disable"
	err = run(context.Background(), noPostgres, options{API: true, Worker: true}, quiet, nil)
	if err == nil || !strings.Contains(err.Error(), "never runs without write-through") || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("production with Postgres unreachable: %v, want a refusal naming DATABASE_URL", err)
	}
	// A config built in code is held to the same rules as the environment.
	for name, c := range map[string]config{
		"no secrets key":   func() config { c := noPostgres; c.SecretsKey = ""; return c }(),
		"the demo catalog": noPostgres,
	} {
		err := run(context.Background(), c, options{API: true, Demo: name == "the demo catalog"}, quiet, nil)
		if err == nil || (!strings.Contains(err.Error(), "TICKETD_SECRETS_KEY") && !strings.Contains(err.Error(), "-demo")) {
			t.Fatalf("run in production with %s: %v", name, err)
		}
	}
}

// ticketd refuses to start, with one log line naming the variable and exit
// status 2, when production's settings are missing or unsafe: the secrets
// key missing, short or the public development key (from which anyone
// derives the webhook secrets, QR keys and page keys), a test processor
// without TICKETD_TEST_PAYMENTS, an unknown mode, -demo in production, a
// Stripe key of the other mode (a test key takes no money in production; a
// live one charges cards while pages say TEST MODE), and any other setting
// it cannot read, also one only the mailer reads on an API-only node. The
// built binary, so the line is what an operator sees.
func TestProductionRefusesToStartNamingTheVariable(t *testing.T) {
	bin := buildTicketd(t)
	with := func(kv ...string) map[string]string {
		m := map[string]string{"TICKETD_SECRETS_KEY": prodSecretsKey}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		env   map[string]string
		args  []string
		names string // the variable the line must name
		also  string
	}{
		{"no secrets key", nil, nil, "TICKETD_SECRETS_KEY", "not set"},
		{"short secrets key", with("TICKETD_SECRETS_KEY", "0123456789abcdef0123456789abcde"), nil, "TICKETD_SECRETS_KEY", "31 bytes"},
		{"the development key", with("TICKETD_SECRETS_KEY", tickets.DevelopmentSecretsKey), nil, "TICKETD_SECRETS_KEY", "development key"},
		{"explicit production, no key", map[string]string{"TICKETD_ENV": "production"}, nil, "TICKETD_SECRETS_KEY", "not set"},
		{"unknown mode", with("TICKETD_ENV", "staging"), nil, "TICKETD_ENV", "production or development"},
		{"-demo in production", with("TICKETD_ENV", "production"), []string{"-demo"}, "TICKETD_ENV", "demo"},
		{"test card", with("TICKETD_CARD_PROCESSOR", "card"), nil, "TICKETD_CARD_PROCESSOR", "TICKETD_TEST_PAYMENTS=on"},
		{"test wallet", with("TICKETD_WALLET_PROCESSOR", "wallet"), nil, "TICKETD_WALLET_PROCESSOR", "TICKETD_TEST_PAYMENTS=on"},
		{"stripe wallet without keys", with("TICKETD_WALLET_PROCESSOR", "stripe"), nil, "TICKETD_WALLET_PROCESSOR", "STRIPE_SECRET_KEY"},
		{"bad test payments", with("TICKETD_TEST_PAYMENTS", "yes"), nil, "TICKETD_TEST_PAYMENTS", "on or off"},
		{"json log", map[string]string{"TICKETD_LOG_FORMAT": "json"}, nil, "TICKETD_SECRETS_KEY", `"level":"ERROR"`},
		{"a Stripe test key in production", with("TICKETD_CARD_PROCESSOR", "stripe", "STRIPE_SECRET_KEY", "sk_test_x",
			"STRIPE_WEBHOOK_SECRET", "whsec_x"), nil, "STRIPE_SECRET_KEY", "not a live key"},
		{"a Stripe live key in staging", with("TICKETD_TEST_PAYMENTS", "on", "TICKETD_CARD_PROCESSOR", "stripe",
			"STRIPE_SECRET_KEY", "sk_live_x", "STRIPE_WEBHOOK_SECRET", "whsec_x"), nil, "STRIPE_SECRET_KEY", "live key while payments are simulated"},
		{"bad trusted proxies", with("TICKETD_TRUSTED_PROXIES", "bogus"), nil, "TICKETD_TRUSTED_PROXIES", "bogus"},
		{"bad mail rate", with("TICKETD_MAIL_PER_HOUR", "0"), []string{"-mode", "api"}, "TICKETD_MAIL_PER_HOUR", "1 to 10000"},
		{"bad unsynced limit", with("TICKETD_MAX_UNSYNCED", "1m,2m"), nil, "TICKETD_MAX_UNSYNCED", "two durations"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, lines := runBinary(t, bin, c.env, c.args...)
			if code != 2 || len(lines) != 1 {
				t.Fatalf("exit %d with %d lines %q; want exit 2 and one line", code, len(lines), lines)
			}
			if !strings.Contains(lines[0], c.names) || !strings.Contains(lines[0], c.also) || !strings.Contains(lines[0], "ERROR") {
				t.Fatalf("line %q does not name %s (%s)", lines[0], c.names, c.also)
			}
		})
	}
	// The same settings with a good key pass the configuration: the
	// binary goes on to connect (here to a Redis that is not there).
	code, lines := runBinary(t, bin, with("REDIS_URL", "redis://127.0.0.1:1"))
	if code != 1 || len(lines) != 1 || strings.Contains(lines[0], "TICKETD_SECRETS_KEY") || !strings.Contains(lines[0], "redis") {
		t.Fatalf("a good key: exit %d, lines %q; want exit 1 on the unreachable Redis", code, lines)
	}
	// A typo beside a password: the line says what is wrong, never the
	// password (url.Parse's error repeats the URL; pgx hides a password
	// only up to its first '@').
	for name, env := range map[string]map[string]string{
		"REDIS_URL":    with("REDIS_URL", "redis://:s3cretpw@127.0.0.1:16x10"),
		"DATABASE_URL": with("REDIS_URL", redistest.URL(), "DATABASE_URL", "postgres://postgres:pg@s3cretpw@127.0.0.1:54x2/ticketd"),
	} {
		code, lines := runBinary(t, bin, env)
		if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "invalid port") || strings.Contains(lines[0], "s3cretpw") {
			t.Fatalf("%s with a bad port: exit %d, lines %q; want exit 1 naming the port, not the password", name, code, lines)
		}
	}
}

// runBinary runs bin with env added to a clean environment (no TICKETD_
// variable of the test's) and returns its exit code and non-empty output
// lines.
func runBinary(t *testing.T, bin string, env map[string]string, args ...string) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") && !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Never the shared services: a start that got that far fails at once.
	cmd.Env = append(cmd.Env, "REDIS_URL=redis://127.0.0.1:1", "DATABASE_URL=postgres://postgres@127.0.0.1:1/ticketd?sslmode=disable",
		"TICKETD_ADDR=127.0.0.1:0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run ticketd: %v", err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return code, lines
}

// buildTicketd builds this command into a temporary directory, without
// the race detector (it would multiply the memory the connection tests
// measure).
func buildTicketd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("cannot build ticketd: no go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "ticketd")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// A staging deployment (production with TICKETD_TEST_PAYMENTS=on) runs
// the test processors, and says TEST MODE everywhere a buyer or host
// looks: /readyz, the event detail, the registration, the hosted payment
// page, the seat picker, the e-mail (subject and body) and the ticket page.
func TestStagingSaysTestModeEverywhere(t *testing.T) {
	mailDir := t.TempDir()
	_, base, logs := startProduction(t, map[string]string{"TICKETD_TEST_PAYMENTS": "on", "TICKETD_MAIL_DIR": mailDir})
	if st, body := call(t, "GET", base+"/readyz", nil, ""); st != 200 || !strings.Contains(body, `"payments":"simulated"`) {
		t.Fatalf("readyz: %d %s, want payments simulated", st, body)
	}
	if !strings.Contains(logs.String(), "TEST MODE (TICKETD_TEST_PAYMENTS=on): payments are SIMULATED") {
		t.Fatalf("no start line says payments are simulated:\n%s", logs)
	}
	if methods, testMode := eventPayments(t, base, "ev_demo_ga"); strings.Join(methods, ",") != "card,wallet" || !testMode {
		t.Fatalf("event detail: paymentMethods %v, testMode %v", methods, testMode)
	}
	id, total, body := registerGAAs(t, base, 2, "ada@example.com")
	if !strings.Contains(body, `"testMode":true`) {
		t.Fatalf("registration does not say test mode: %s", body)
	}
	st, body := call(t, "POST", base+payCalls(id, 2, total)[1][0], shopHeaders, payCalls(id, 2, total)[1][1])
	var pay struct{ Data struct{ URL string } }
	if err := json.Unmarshal([]byte(body), &pay); st != 200 || err != nil || !strings.HasPrefix(pay.Data.URL, base+"/pay/wallet/") {
		t.Fatalf("wallet/create-payment: %d %s (%v)", st, body, err)
	}
	if st, page := call(t, "GET", pay.Data.URL, nil, ""); st != 200 || !strings.Contains(page, "Test mode · payments are simulated") {
		t.Fatalf("wallet page: %d, does not say test mode:\n%s", st, page)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Post(pay.Data.URL+"/pay", "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 303 {
		t.Fatalf("pay on the wallet page: %d", resp.StatusCode)
	}
	waitFor(t, 20*time.Second, "the registration confirmed", func() bool { s, _, _ := registrationState(t, base, id); return s == "confirmed" })
	st, body = call(t, "GET", base+"/v1/storefront/registration/"+id, shopHeaders, "")
	if st != 200 || !strings.Contains(body, `"testMode":true`) {
		t.Fatalf("confirmed registration: %d %s", st, body)
	}

	var subject, text string
	waitFor(t, 30*time.Second, "the buyer's e-mail", func() bool {
		subject, text = mailTo(t, mailDir, "ada@example.com", id)
		return subject != ""
	})
	if !strings.HasPrefix(subject, "[TEST MODE] ") || !strings.HasPrefix(text, "TEST MODE: payments are simulated") {
		t.Fatalf("e-mail subject %q, text begins %q", subject, text[:min(len(text), 80)])
	}
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/tickets/\S+`).FindString(text)
	if st, page := call(t, "GET", link, nil, ""); st != 200 || !strings.Contains(page, "TEST MODE") {
		t.Fatalf("ticket page %s: %d, does not say TEST MODE", link, st)
	}
	if st, page := call(t, "GET", base+"/events/demo-concert-hall/dEmO2/seatmap", nil, ""); st != 200 || !strings.Contains(page, "TEST MODE") {
		t.Fatalf("seat picker: %d, does not say TEST MODE", st)
	}
}

// mailTo finds the message to addr naming id in the mail folder: its
// subject and text part ("" when there is none yet).
func mailTo(t *testing.T, dir, addr, id string) (subject, text string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, []byte(id)) {
			continue
		}
		m, err := mail.ReadMessage(bytes.NewReader(b))
		if err != nil || !strings.Contains(m.Header.Get("To"), addr) {
			continue
		}
		dec := new(mime.WordDecoder)
		subject, _ = dec.DecodeHeader(m.Header.Get("Subject"))
		return subject, textPart(t, m.Header.Get("Content-Type"), m.Body)
	}
	return "", ""
}

// textPart is the decoded text/plain part of a MIME body.
func textPart(t *testing.T, ctype string, body io.Reader) string {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatalf("content type %q: %v", ctype, err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		return ""
	}
	r := multipart.NewReader(body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err != nil {
			return ""
		}
		ct := p.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "multipart/") {
			if s := textPart(t, ct, p); s != "" {
				return s
			}
			continue
		}
		if strings.HasPrefix(ct, "text/plain") {
			b, err := io.ReadAll(quotedprintable.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// The probe of issue 17: a signed card webhook naming a session id ticketd
// never opened confirmed the registration it referenced. A payment now
// confirms a registration only for a session ticketd opened for it, of its
// amount and currency; anything else is 409 PAYMENT_MISMATCH, logged, and
// changes nothing (still awaiting payment, its tickets still held), and the
// payment of the session ticketd opened then books it.
func TestWebhookOfASessionTicketdNeverOpenedIsRefused(t *testing.T) {
	cfg := localConfig(t)
	cfg.Addr, cfg.AppURL = freeAppURL(t)
	cfg.CardWebhookSecret, cfg.WalletWebhookSecret = "test-card-webhook-secret", "test-wallet-webhook-secret"
	logs := &syncBuffer{}
	base := runTicketdLog(t, cfg, options{API: true, Worker: true, Demo: true}, slog.New(slog.NewTextHandler(logs, nil)))
	remaining := func() int64 {
		t.Helper()
		st, body := call(t, "GET", base+"/v1/storefront/events/ev_demo_ga", shopHeaders, "")
		var ev struct {
			Data struct{ Remaining *int64 } `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &ev); st != 200 || err != nil || ev.Data.Remaining == nil {
			t.Fatalf("event: %d %s", st, body)
		}
		return *ev.Data.Remaining
	}
	card := func(evt, sess, reg string, amount money.Cents, currency string) (int, string) {
		hook := fmt.Sprintf(`{"id":%q,"type":%q,"data":{"object":{"id":%q,"payment_status":"paid","amount_total":%d,"currency":%q,"client_reference_id":%q}}}`,
			evt, payments.EventCheckoutCompleted, sess, int64(amount), currency, reg)
		return call(t, "POST", base+"/v1/webhooks/card", map[string]string{"Content-Type": "application/json",
			payments.SignatureHeader: payments.Sign(cfg.CardWebhookSecret, time.Now(), []byte(hook))}, hook)
	}
	sessionOf := func(id string, total money.Cents) string {
		t.Helper()
		c := payCalls(id, 2, total)[0]
		st, body := call(t, "POST", base+c[0], shopHeaders, c[1])
		var s struct{ Data stripeSession }
		if err := json.Unmarshal([]byte(body), &s); st != 200 || err != nil || s.Data.SessionID == "" {
			t.Fatalf("create-checkout-session: %d %s", st, body)
		}
		return s.Data.SessionID
	}

	// The probe as it was run: no checkout opened at all.
	id, total, _ := registerGA(t, base, 2)
	before := remaining()
	forged := "cs_" + strings.Repeat("0", 24) + "_" + id
	if st, body := card("evt_forged_1", forged, id, total, "usd"); st != 409 ||
		!strings.Contains(body, `"code":"PAYMENT_MISMATCH"`) || !strings.Contains(body, `"reason":"session"`) {
		t.Fatalf("webhook of a session ticketd never opened: %d %s, want 409 PAYMENT_MISMATCH (session)", st, body)
	}
	mine := sessionOf(id, total)
	otherID, otherTotal, _ := registerGA(t, base, 2)
	theirs := sessionOf(otherID, otherTotal)
	for i, c := range []struct {
		sess     string
		amount   money.Cents
		currency string
		reason   string
	}{
		{forged, total, "usd", "session"}, // still never opened, with one open now
		{theirs, total, "usd", "session"}, // another registration's session
		{mine, total + 100, "usd", "amount"},
		{mine, total, "eur", "currency"},
	} {
		st, body := card(fmt.Sprintf("evt_refused_%d", i), c.sess, id, c.amount, c.currency)
		if st != 409 || !strings.Contains(body, `"code":"PAYMENT_MISMATCH"`) || !strings.Contains(body, `"reason":"`+c.reason+`"`) {
			t.Fatalf("case %d: %d %s, want 409 PAYMENT_MISMATCH (%s)", i, st, body, c.reason)
		}
		if s, ps, paid := registrationState(t, base, id); s != "awaiting_payment" || ps != "unpaid" || paid != 0 {
			t.Fatalf("case %d: the registration is %s, payment %s of %s", i, s, ps, paid)
		}
	}
	if n := remaining(); n != before-2 {
		t.Fatalf("remaining %d after the refused payments, want %d: the hold was given back", n, before-2)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "reason=session") ||
		!strings.Contains(l, "reason=amount") || strings.Contains(l, forged) {
		t.Fatalf("the refusals are not logged (or the log names the session):\n%s", l)
	}
	// The session ticketd opened, of the right amount, books it.
	if st, body := card("evt_good", mine, id, total, "usd"); st != 200 || !strings.Contains(body, `"status":"confirmed"`) {
		t.Fatalf("the opened session's webhook: %d %s", st, body)
	}
	if s, ps, paid := registrationState(t, base, id); s != "confirmed" || ps != "paid" || paid != total {
		t.Fatalf("after its own session's payment: %s, %s, %s", s, ps, paid)
	}
	if s, _, _ := registrationState(t, base, otherID); s != "awaiting_payment" {
		t.Fatalf("the other registration became %s", s)
	}
}

// Development (make run, -demo, the tests) says payments are simulated: in
// one line at start, in /readyz, on the demo shop, the hosted payment page
// and the seat picker, and in every registration.
func TestDevelopmentSaysPaymentsAreSimulated(t *testing.T) {
	cfg := localConfig(t)
	cfg.Addr, cfg.AppURL = freeAppURL(t)
	cfg.DemoAddr = "127.0.0.1:0"
	logs := &syncBuffer{}
	shop := make(chan string, 1)
	base := runTicketdLog(t, cfg, options{API: true, Worker: true, Demo: true, DemoSite: true, DemoReady: shop},
		slog.New(slog.NewTextHandler(logs, nil)))
	if n := strings.Count(logs.String(), "payments are SIMULATED"); n != 1 ||
		!strings.Contains(logs.String(), "development mode (TICKETD_ENV=development)") {
		t.Fatalf("%d start lines say payments are simulated:\n%s", n, logs)
	}
	if st, body := call(t, "GET", base+"/readyz", nil, ""); st != 200 || !strings.Contains(body, `"payments":"simulated"`) {
		t.Fatalf("readyz: %d %s", st, body)
	}
	if st, page := call(t, "GET", "http://"+<-shop+"/", nil, ""); st != 200 || !strings.Contains(page, "TEST MODE") {
		t.Fatalf("demo shop: %d, does not say TEST MODE", st)
	}
	if st, page := call(t, "GET", base+"/events/demo-concert-hall/dEmO2/seatmap", nil, ""); st != 200 || !strings.Contains(page, "TEST MODE") {
		t.Fatalf("seat picker: %d, does not say TEST MODE", st)
	}
	id, total, body := registerGA(t, base, 1)
	if !strings.Contains(body, `"testMode":true`) {
		t.Fatalf("registration: %s", body)
	}
	c := payCalls(id, 1, total)[0]
	st, body := call(t, "POST", base+c[0], shopHeaders, c[1])
	var s struct{ Data stripeSession }
	if err := json.Unmarshal([]byte(body), &s); st != 200 || err != nil {
		t.Fatalf("create-checkout-session: %d %s", st, body)
	}
	if st, page := call(t, "GET", s.Data.URL, nil, ""); st != 200 || !strings.Contains(page, "Test mode · payments are simulated") {
		t.Fatalf("card page: %d, does not say payments are simulated", st)
	}
}

// What each mode runs when nothing else is said: development (and -demo,
// which implies it) and a staging deployment the test processors; production
// no processor at all; none can be asked for explicitly.
func TestModeDefaults(t *testing.T) {
	for _, c := range []struct {
		name                 string
		env                  map[string]string
		demo                 bool
		dev, test            bool
		card, wallet         string
		simulated, stripeWal bool
	}{
		{"development", map[string]string{"TICKETD_ENV": "development"}, false, true, true, "card", "wallet", true, false},
		{"-demo without TICKETD_ENV", nil, true, true, true, "card", "wallet", true, false},
		{"production", nil, false, false, false, "", "", false, false},
		{"staging", map[string]string{"TICKETD_TEST_PAYMENTS": "on"}, false, false, true, "card", "wallet", true, false},
		{"development without test payments", map[string]string{"TICKETD_ENV": "development", "TICKETD_TEST_PAYMENTS": "off"},
			false, true, false, "", "", true, false},
		{"staging, no wallet", map[string]string{"TICKETD_TEST_PAYMENTS": "on", "TICKETD_WALLET_PROCESSOR": "none"},
			false, false, true, "card", "", true, false},
		{"production with Stripe", map[string]string{"TICKETD_CARD_PROCESSOR": "stripe", "TICKETD_WALLET_PROCESSOR": "stripe",
			"STRIPE_SECRET_KEY": "sk_live_x", "STRIPE_WEBHOOK_SECRET": "whsec_x", "TICKETD_STRIPE_WALLET_METHODS": "link,cashapp"},
			false, false, false, "stripe", "stripe", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []string{"TICKETD_ENV", "TICKETD_TEST_PAYMENTS", "TICKETD_CARD_PROCESSOR", "TICKETD_WALLET_PROCESSOR",
				"STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "TICKETD_STRIPE_WALLET_METHODS"} {
				t.Setenv(v, "")
			}
			t.Setenv("TICKETD_SECRETS_KEY", prodSecretsKey)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := loadConfigFor(c.demo)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Development != c.dev || cfg.TestPayments != c.test || cfg.CardProcessor != c.card || cfg.WalletProcessor != c.wallet ||
				cfg.testMode() != c.simulated {
				t.Fatalf("development %v, test payments %v, card %q, wallet %q, test mode %v", cfg.Development, cfg.TestPayments,
					cfg.CardProcessor, cfg.WalletProcessor, cfg.testMode())
			}
			want := "link" // the default
			if c.stripeWal {
				want = "link,cashapp"
			}
			if got := strings.Join(cfg.StripeWalletMethods, ","); got != want {
				t.Fatalf("stripe wallet methods %s, want %s", got, want)
			}
		})
	}
}
