package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments/stripemock"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/tickets"
)

// syncBuffer is a log sink the test reads while ticketd writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// randomSecret is prefix and 18 random bytes in hex: unique enough that
// finding it anywhere means it was written there.
func randomSecret(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// secretForms are the strings a secret would show as when stored or
// logged: itself, its hex (both cases), and its base64 in every alphabet
// at each of the three byte alignments it could have inside a longer
// encoded value (only the characters that depend on the secret's bytes
// alone). Forms shorter than 12 characters are left out: they would match
// by chance.
func secretForms(secret []byte) []string {
	forms := []string{string(secret), hex.EncodeToString(secret), strings.ToUpper(hex.EncodeToString(secret))}
	for k := 0; k < 3; k++ {
		enc := base64.RawStdEncoding.EncodeToString(append(make([]byte, k), secret...))
		// Character i covers bits [6i, 6i+6); the secret's bits are
		// [8k, 8(k+len)).
		from, to := (8*k+5)/6, (8*(k+len(secret)))/6
		if to-from < 12 {
			continue
		}
		mid := enc[from:to]
		forms = append(forms, mid, strings.NewReplacer("+", "-", "/", "_").Replace(mid))
	}
	var out []string
	for _, f := range forms {
		if len(f) >= 12 {
			out = append(out, f)
		}
	}
	return out
}

// leak says which secret, in which form, text contains ("" for none).
func leak(text string, secrets map[string][]byte) string {
	for name, s := range secrets {
		for _, f := range secretForms(s) {
			if strings.Contains(text, f) {
				return fmt.Sprintf("%s (as %q)", name, f)
			}
		}
	}
	return ""
}

// The scan finds a secret however it is written into a longer value.
func TestSecurityLeakScanFindsEncodedSecrets(t *testing.T) {
	t.Parallel()
	s := []byte(randomSecret("cs_"))
	secrets := map[string][]byte{"the secret": s}
	for _, k := range []int{0, 1, 2} {
		blob := append(append(bytes.Repeat([]byte{'x'}, k), s...), "tail"...)
		for name, text := range map[string]string{
			"clear":        "value=" + string(s) + ";",
			"hex":          "\\x" + hex.EncodeToString(blob),
			"HEX":          strings.ToUpper(hex.EncodeToString(blob)),
			"base64":       base64.StdEncoding.EncodeToString(blob),
			"base64url":    base64.RawURLEncoding.EncodeToString(blob),
			"json in text": `{"k":"` + base64.RawStdEncoding.EncodeToString(blob) + `"}`,
		} {
			if leak(text, secrets) == "" {
				t.Errorf("offset %d, %s: %q not found in %q", k, name, s, text)
			}
		}
	}
	if got := leak(hashText(s), secrets); got != "" {
		t.Errorf("a hash of the secret is no leak: %s", got)
	}
}

// securityCatalog is the catalog of TestSecuritySecretsNeverStoredOrLogged:
// a GA and a seated event of one tenant, sold on its storefront and by one
// channel whose secret and signing key are the test's.
func securityCatalogDoc(channelSecret, signingKey string) string {
	return fmt.Sprintf(`{
 "tenants": [{"id": "t_sec", "name": "Secure Host", "notifyEmail": "host@sec.example",
  "publishableKeys": [{"key": "pk_sec", "domains": ["localhost"], "enabled": true}],
  "events": [
   {"id": "ev_sec_ga", "shortId": "secga1", "slug": "sec-ga", "name": "Sec GA", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_sec"], "capacity": 100,
    "tickets": [{"id": "tk_sec", "name": "General", "price": 25, "capacity": 100, "maxPerOrder": 10}]},
   {"id": "ev_sec_hall", "shortId": "sechl1", "slug": "sec-hall", "name": "Sec Hall", "startsAt": "2027-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_sec"], "tickets": [],
    "seatMap": {"categories": [{"id": "std", "name": "Standard", "price": 30}], "rows": [{"label": "A", "seats": 20, "category": "std"}]}}
  ]}],
 "channels": [{"id": "ch_sec", "name": "Sec Partner", "key": "ck_sec", "secret": %q, "signingKey": %q,
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"}]}`, channelSecret, signingKey)
}

// TestSecuritySecretsNeverStoredOrLogged runs a whole ticketd (API, sync
// worker, mailer; Stripe as the card processor, on a stripe-mock) through
// every flow that handles a secret: the catalog applied with a channel
// secret and signing key, wrong credentials of every kind (the real
// secrets sent in the wrong places among them), a partner's GA and seated
// reserve and signed confirm, a buyer session, the seat picker, storefront
// registrations paid through Stripe's signed webhook and the test wallet's
// own, the sync to Postgres, a loss of Redis' state and the rebuild from
// Postgres, and a sale after it. Every log line (Debug level), every key and
// value of its Redis key space, every row of every table of its Postgres
// database, every e-mail and every answer ticketd gave are then searched
// for each secret, in clear, hex and base64: the channel secret, signing
// key, admin token, TICKETD_SECRETS_KEY and every key derived from it, the
// webhook secrets, the Stripe API key, and the buyer session and picker
// tokens ticketd issued. None may appear. (Publishable and channel keys
// are public identifiers, in every page and request; hold tokens are the
// names of their Redis holds.)
func TestSecuritySecretsNeverStoredOrLogged(t *testing.T) {
	secretsKey, adminToken := randomSecret("tsk-"), randomSecret("adm-")
	channelSecret, signingKey := randomSecret("cs_"), randomSecret("sig-")
	stripeKey, stripeWebhook := "sk_test_"+randomSecret(""), "whsec_"+randomSecret("")
	cardWebhook := randomSecret("cwh-")
	mailDir := t.TempDir()
	t.Setenv("TICKETD_MAIL_DIR", mailDir)
	t.Setenv("TICKETD_MAIL", "")
	t.Setenv("TICKETD_SMTP_URL", "")

	rc, space := redistest.New(t)
	cfg := localConfig(t)
	cfg.KeyPrefix, cfg.Recovery = space.Prefix, recoveryAuto
	cfg.SecretsKey, cfg.AdminToken = secretsKey, adminToken
	cfg.CardProcessor, cfg.StripeSecretKey, cfg.StripeWebhookSecret, cfg.StripeAPIBase = "stripe", stripeKey, stripeWebhook, stripemock.Start(t)
	cfg.CardWebhookSecret, cfg.WalletWebhookSecret = cardWebhook, "" // the wallet's is derived
	// The wallet's webhook goes to TICKETD_APP_URL: this ticketd's own
	// address (as in TestReadmeStorefrontFlow).
	cfg.Addr = freeAddr(t)
	cfg.AppURL = "http://" + cfg.Addr

	logs := &syncBuffer{}
	base := runTicketdLog(t, cfg, options{API: true, Worker: true},
		slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	// Every answer is kept, to be searched too.
	var answers []string
	do := func(method, path string, h map[string]string, body string) (int, string) {
		t.Helper()
		st, b := call(t, method, base+path, h, body)
		answers = append(answers, b)
		return st, b
	}
	// must(200, "what")(do(...)) fails the test unless do answered 200,
	// and returns the body.
	must := func(want int, what string) func(int, string) string {
		return func(st int, body string) string {
			t.Helper()
			if st != want {
				t.Fatalf("%s: %d %s, want %d", what, st, body, want)
			}
			return body
		}
	}
	field := func(body, name string) string {
		t.Helper()
		m := regexp.MustCompile(`"` + name + `":"?([^",}]*)`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s in %s", name, body)
		}
		return m[1]
	}
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	doc := securityCatalogDoc(channelSecret, signingKey)
	must(200, "apply")(do("PUT", "/v1/admin/catalog", admin, doc))
	must(200, "apply again")(do("PUT", "/v1/admin/catalog", admin, doc))

	partner := map[string]string{"x-service-key": "ck_sec", "x-service-secret": channelSecret, "Content-Type": "application/json"}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}

	// Credentials refused, the real secrets sent where they do not belong
	// among them: an unknown key with the real secret, the secret as the
	// key, the admin token as a buyer session and as a channel secret, the
	// signing key as a signature, a wrong admin token.
	must(401, "wrong admin token")(do("PUT", "/v1/admin/catalog", with(admin, "Authorization", "Bearer "+adminToken+"x"), doc))
	must(401, "unknown key, real secret")(do("GET", "/v1/channel/events", with(partner, "x-service-key", "ck_nope"), ""))
	must(401, "the secret as the key")(do("GET", "/v1/channel/events", with(partner, "x-service-key", channelSecret), ""))
	must(401, "wrong secret")(do("GET", "/v1/channel/events", with(partner, "x-service-secret", channelSecret+"x"), ""))
	must(401, "the admin token as the secret")(do("GET", "/v1/channel/events", with(partner, "x-service-secret", adminToken), ""))
	must(401, "the admin token as a session")(do("GET", "/v1/channel/session", map[string]string{"Authorization": "Bearer " + adminToken}, ""))
	must(401, "the secrets key as a session")(do("GET", "/v1/channel/session", map[string]string{"Authorization": "Bearer " + secretsKey}, ""))

	// The partner: GA reserve and confirm, signed; a bad signature first.
	reserve := func(event, body string) (order string, amount money.Cents) {
		t.Helper()
		b := must(200, "reserve")(do("POST", "/v1/channel/events/"+event+"/checkout", with(partner, "Idempotency-Key", randomSecret("idem-")), body))
		order = field(b, "orderId")
		amount, err := money.Parse(field(b, "amount"))
		if err != nil {
			t.Fatal(err)
		}
		return order, amount
	}
	confirm := func(order string, amount money.Cents, ref string) {
		t.Helper()
		body := fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":%q}`, order, amount, ref)
		must(401, "confirm with the signing key as the signature")(do("POST", "/v1/channel/orders/confirm", with(partner, "x-service-signature", signingKey), body))
		must(200, "confirm")(do("POST", "/v1/channel/orders/confirm",
			with(partner, "x-service-signature", channel.Signature(signingKey, order, amount, ref)), body))
		must(200, "status")(do("POST", "/v1/channel/orders/status", partner, fmt.Sprintf(`{"orderId":%q}`, order)))
	}
	must(200, "catalog")(do("GET", "/v1/channel/events", partner, ""))
	buyer := `"buyerName":"Ada Lovelace","buyerEmail":"ada@example.com"`
	gaOrder, gaAmount := reserve("ev_sec_ga", `{`+buyer+`,"selectedTicketId":"tk_sec","quantity":2}`)
	confirm(gaOrder, gaAmount, "psp-1")

	// Seated, keyed: a hold token, a hold, a reserve and a confirm.
	hold := field(must(200, "hold-token")(do("POST", "/v1/channel/seating/events/ev_sec_hall/hold-token", partner, `{}`)), "holdToken")
	must(200, "hold")(do("POST", "/v1/channel/seating/events/ev_sec_hall/hold", partner, fmt.Sprintf(`{"holdToken":%q,"seatLabels":["A-1"]}`, hold)))
	seatOrder, seatAmount := reserve("ev_sec_hall", fmt.Sprintf(`{%s,"seatLabels":["A-1"],"seatHoldToken":%q}`, buyer, hold))
	confirm(seatOrder, seatAmount, "psp-2")

	// A buyer session holds and reserves; its token must stay the buyer's.
	sessionToken := field(must(200, "session")(do("POST", "/v1/channel/session", partner, `{"buyerName":"Grace Hopper","buyerEmail":"grace@example.com"}`)), "sessionToken")
	sess := map[string]string{"Authorization": "Bearer " + sessionToken, "Content-Type": "application/json"}
	must(200, "session hold")(do("POST", "/v1/channel/seating/events/ev_sec_hall/hold", sess, `{"seatLabels":["A-5"]}`))
	sessOrder := field(must(200, "session reserve")(do("POST", "/v1/channel/events/ev_sec_hall/checkout", with(sess, "Idempotency-Key", "sess-1"), `{"seatLabels":["A-5"]}`)), "orderId")
	must(200, "session status")(do("POST", "/v1/channel/orders/status", sess, fmt.Sprintf(`{"orderId":%q}`, sessOrder)))

	// The seat picker: its page's token, used on its API.
	page := must(200, "picker page")(do("GET", "/events/sec-hall/sechl1/seatmap?app=storefront", nil, ""))
	m := regexp.MustCompile(`data-picker="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("picker page without its data: %.300s", page)
	}
	var pc struct{ Token string }
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &pc); err != nil || pc.Token == "" {
		t.Fatalf("picker data %q: %v", m[1], err)
	}
	pick := map[string]string{picker.TokenHeader: pc.Token, "Content-Type": "application/json"}
	ph := field(must(200, "picker hold-token")(do("POST", picker.Prefix+"/seating/events/ev_sec_hall/hold-token", pick, `{}`)), "holdToken")
	must(200, "picker hold")(do("POST", picker.Prefix+"/seating/events/ev_sec_hall/hold", pick, fmt.Sprintf(`{"holdToken":%q,"seatLabels":["A-9"]}`, ph)))

	// The storefront: a registration paid through Stripe (its webhook
	// signed with STRIPE_WEBHOOK_SECRET; one signed otherwise first), one
	// paid on the test wallet's page (its webhook signed by ticketd with
	// the derived wallet secret).
	shop := map[string]string{"x-service-key": "pk_sec", "Origin": "http://localhost:3000", "Content-Type": "application/json"}
	register := func() (id string, total money.Cents) {
		t.Helper()
		b := must(200, "register-guest")(do("POST", "/v1/storefront/register-guest", shop,
			`{"eventId":"ev_sec_ga","name":"Ada Lovelace","email":"ada@example.com","selectedTicketId":"tk_sec","quantity":1}`))
		total, err := money.Parse(field(b, "total"))
		if err != nil {
			t.Fatal(err)
		}
		return field(b, "registrationId"), total
	}
	cardReg, cardTotal := register()
	cs := must(200, "card checkout")(do("POST", "/v1/storefront/card/create-checkout-session", shop, fmt.Sprintf(
		`{"eventId":"ev_sec_ga","registrationId":%q,"selectedTicketId":"tk_sec","quantity":1,"selectedTicketAmount":25,`+
			`"successUrl":"http://localhost:3000/thanks","cancelUrl":"http://localhost:3000/cart"}`, cardReg)))
	stripeSession := field(cs, "sessionId")
	st, b := stripeCompleted(t, base, "whsec_"+randomSecret(""), "evt_sec_0", stripeSession, cardReg, cardTotal)
	answers = append(answers, b)
	if st != 401 {
		t.Fatalf("webhook signed with another secret: %d %s", st, b)
	}
	st, b = stripeCompleted(t, base, stripeWebhook, "evt_sec_1", stripeSession, cardReg, cardTotal)
	answers = append(answers, b)
	if st != 200 {
		t.Fatalf("stripe webhook: %d %s", st, b)
	}
	walletReg, walletTotal := register()
	wp := must(200, "wallet payment")(do("POST", "/v1/storefront/wallet/create-payment", shop, fmt.Sprintf(
		`{"registrationId":%q,"amount":%s,"selectedTicketId":"tk_sec","quantity":1}`, walletReg, walletTotal)))
	// The hosted wallet page and its pay answer are searched too (the
	// page is ticketd's HTML; the pay answer redirects, not followed).
	walletPage := strings.TrimPrefix(field(wp, "url"), cfg.AppURL)
	if !strings.HasPrefix(walletPage, "/") {
		t.Fatalf("the wallet page %q is not on this ticketd (%s)", field(wp, "url"), cfg.AppURL)
	}
	must(200, "the wallet page")(do("GET", walletPage, nil, ""))
	st, loc, b := postNoRedirect(t, base+walletPage+"/pay", "card=")
	answers = append(answers, loc, b)
	if st != 303 && st != 200 {
		t.Fatalf("paying on the wallet page: %d %s", st, b)
	}
	for _, id := range []string{cardReg, walletReg} {
		waitFor(t, 20*time.Second, "registration "+id+" confirmed", func() bool {
			_, b := do("GET", "/v1/storefront/registration/"+id, shop, "")
			return strings.Contains(b, `"status":"confirmed"`)
		})
	}

	// The sync worker writes the four paid orders, the mailer mails.
	db, err := pgxpool.New(context.Background(), cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(context.Background(), sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, 20*time.Second, "the paid orders in Postgres", func() bool { return count(`SELECT count(*) FROM orders`) == 4 })
	waitFor(t, 20*time.Second, "the storefront buyers' e-mail", func() bool { return mailed(t, mailDir, cardReg) && mailed(t, mailDir, walletReg) })

	// Redis loses its state; ticketd rebuilds it from Postgres by itself.
	ctx := context.Background()
	gone := append(redistest.Keys(t, rc, space), space.State())
	for p := range keys.Partitions {
		gone = append(gone, space.Live(p))
	}
	for _, k := range gone {
		if err := rc.Do(ctx, rc.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// Rebuilt: the partitions' markers are back (the rebuild publishes
	// them last) and the node sells again.
	waitFor(t, 30*time.Second, "the rebuilt state", func() bool {
		for p := range keys.Partitions {
			if n, err := rc.Do(ctx, rc.B().Exists().Key(space.Live(p)).Build()).AsInt64(); err != nil || n == 0 {
				return false
			}
		}
		st, _ := call(t, "GET", base+"/readyz", nil, "")
		return st == 200
	})
	// The rebuilt catalog still knows the secret (by its hash) and the
	// signing key (sealed): a sale after the rebuild.
	after, afterAmount := reserve("ev_sec_ga", `{`+buyer+`,"selectedTicketId":"tk_sec","quantity":1}`)
	confirm(after, afterAmount, "psp-3")
	waitFor(t, 20*time.Second, "the order after the rebuild in Postgres", func() bool { return count(`SELECT count(*) FROM orders`) == 5 })

	// Last (it locks this client out): guessing on, with the secrets in
	// the wrong places, until the lockout refuses and logs it.
	locked := false
	for i := 0; i < 2*30 && !locked; i++ {
		st, _ := do("GET", "/v1/channel/events", with(partner, "x-service-key", channelSecret, "x-service-secret", signingKey), "")
		locked = st == 429
	}
	if !locked {
		t.Fatal("60 failed authentications were not locked out")
	}
	waitFor(t, 5*time.Second, "the lockout's log line", func() bool { return strings.Contains(logs.String(), "lockout: client IP locked") })

	// What must not be found. The derived keys are binary: their hex
	// and base64 are what would show.
	signingRoot, pageKey := tickets.Subkeys(secretsKey)
	secrets := map[string][]byte{
		"channel secret": []byte(channelSecret), "signing key": []byte(signingKey), "admin token": []byte(adminToken),
		"TICKETD_SECRETS_KEY": []byte(secretsKey), "STRIPE_SECRET_KEY": []byte(stripeKey), "STRIPE_WEBHOOK_SECRET": []byte(stripeWebhook),
		"card webhook secret":             []byte(cardWebhook),
		"wallet webhook secret (derived)": []byte(hex.EncodeToString(derive(secretsKey, purposeWalletWebhooks))),
		"session key":                     derive(secretsKey, purposeSessions),
		"order id key":                    derive(secretsKey, purposeOrderIDs),
		"picker key":                      derive(secretsKey, purposePicker),
		"holds key":                       derive(secretsKey, purposeHolds),
		"waiting room key":                derive(secretsKey, purposeRoom),
		"seal key":                        catalog.SealKey(secretsKey),
		"ticket page key":                 pageKey,
		"ticket signing root":             signingRoot,
		"buyer session token":             []byte(sessionToken),
		"picker token":                    []byte(pc.Token),
	}
	for _, ev := range []string{"ev_sec_ga", "ev_sec_hall"} {
		secrets["ticket signing key of "+ev] = tickets.NewKeys(secretsKey).PrivateKey(ev).Seed()
	}

	logText := logs.String()

	if !strings.Contains(logText, `"level":"INFO"`) || !strings.Contains(logText, "sync worker") {
		t.Fatalf("the log holds too little to be a fair test:\n%s", logText)
	}
	for _, line := range strings.Split(logText, "\n") {
		if l := leak(line, secrets); l != "" {
			t.Errorf("the log shows the %s: %s", l, line)
		}
	}

	redisText := dumpRedis(t, rc, space)
	if len(redisText) < 10 {
		t.Fatalf("the Redis key space is nearly empty (%d keys): not a fair test", len(redisText))
	}
	for _, entry := range redisText {
		if l := leak(entry, secrets); l != "" {
			t.Errorf("Redis holds the %s: %.400s", l, entry)
		}
	}

	// The scans reach where the channel is kept: its stored form (the
	// secret's hash) is in both stores.
	hash := catalog.HashSecret(channelSecret)
	if !strings.Contains(strings.Join(redisText, "\n"), hash) {
		t.Fatal("the Redis dump lacks the channel's stored secret hash: it does not reach the catalog")
	}
	rows := dumpPostgres(t, db)
	if !strings.Contains(strings.Join(rows, "\n"), hash) {
		t.Fatal("the Postgres dump lacks the channel's stored secret hash: it does not reach the catalog")
	}
	if len(rows) < 10 {
		t.Fatalf("only %d Postgres rows: not a fair test", len(rows))
	}
	for _, row := range rows {
		if l := leak(row, secrets); l != "" {
			t.Errorf("Postgres holds the %s: %.400s", l, row)
		}
	}

	mails, _ := filepath.Glob(filepath.Join(mailDir, "*"))
	for _, f := range mails {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if l := leak(string(b), secrets); l != "" {
			t.Errorf("the e-mail %s shows the %s", filepath.Base(f), l)
		}
	}

	// The answers: the session and picker tokens are handed out, by
	// design, in the one answer that issues each; nothing else may show.
	configured := map[string][]byte{}
	for k, v := range secrets {
		if k != "buyer session token" && k != "picker token" {
			configured[k] = v
		}
	}
	for _, a := range answers {
		if l := leak(a, configured); l != "" {
			t.Errorf("an answer shows the %s: %.400s", l, a)
		}
	}
}

func hashText(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:]) + hex.EncodeToString(sum[:])
}

// postNoRedirect posts a form to url without following a redirect and
// returns the status, the Location and the body.
func postNoRedirect(t *testing.T, url, form string) (int, string, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Post(url, "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// dumpRedis returns every key of space with its whole value as text, one
// entry per key: strings, hashes, lists, sets, sorted sets and streams.
func dumpRedis(t *testing.T, rc rueidis.Client, space keys.Space) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	var cursor uint64
	for {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match(space.Prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range e.Elements {
			typ, err := rc.Do(ctx, rc.B().Type().Key(k).Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			var cmd rueidis.Completed
			switch typ {
			case "string":
				cmd = rc.B().Get().Key(k).Build()
			case "hash":
				cmd = rc.B().Hgetall().Key(k).Build()
			case "list":
				cmd = rc.B().Lrange().Key(k).Start(0).Stop(-1).Build()
			case "set":
				cmd = rc.B().Smembers().Key(k).Build()
			case "zset":
				cmd = rc.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()
			case "stream":
				cmd = rc.B().Xrange().Key(k).Start("-").End("+").Build()
			case "none":
				continue // expired since the scan
			default:
				t.Fatalf("key %s of type %s: the dump does not know it", k, typ)
			}
			v, err := rc.Do(ctx, cmd).ToAny()
			if err != nil && !rueidis.IsRedisNil(err) {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s (%s) = %v", k, typ, v))
		}
		if cursor = e.Cursor; cursor == 0 {
			return out
		}
	}
}

// dumpPostgres returns every row of every table of the database as JSON
// (bytea as hex), one entry per row.
func dumpPostgres(t *testing.T, db *pgxpool.Pool) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []pgx.Identifier
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, pgx.Identifier{schema, name})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) == 0 {
		t.Fatal("no tables in the test database")
	}
	var out []string
	for _, tb := range tables {
		r, err := db.Query(ctx, `SELECT row_to_json(t)::text FROM `+tb.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var s string
			if err := r.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, tb.Sanitize()+": "+s)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// xffCatalog adds to the demo catalog a channel allowlisted from one
// public address only, 203.0.113.9.
const xffCatalog = `{"tenants": [], "channels": [{"id": "ch_far", "name": "Far", "key": "ck_far", "secret": "cs_far_secret",
 "scopes": ["catalog:read"], "ipAllowlist": ["203.0.113.9/32"], "settlement": "partner_remit"}]}`

// startXFF runs ticketd with the demo catalog and xffCatalog, trusting
// the proxies given (TICKETD_TRUSTED_PROXIES), and returns its base URL.
func startXFF(t *testing.T, trusted string) string {
	t.Helper()
	cfg := localConfig(t)
	cfg.TrustedProxies, cfg.AdminToken = trusted, "xff-admin-token"
	base := startTicketd(t, cfg)
	if st, body := call(t, "PUT", base+"/v1/admin/catalog", map[string]string{"Authorization": "Bearer xff-admin-token"}, xffCatalog); st != 200 {
		t.Fatalf("apply: %d %s", st, body)
	}
	return base
}

// far asks for the catalog as ch_far with the X-Forwarded-For given ("":
// none) and returns the status.
func far(t *testing.T, base, xff string) (int, string) {
	t.Helper()
	h := map[string]string{"x-service-key": "ck_far", "x-service-secret": "cs_far_secret"}
	if xff != "" {
		h["X-Forwarded-For"] = xff
	}
	return call(t, "GET", base+"/v1/channel/events", h, "")
}

// registerFrom sends a register-guest without a buyer (refused before
// anything is held, but counted as a write) from the X-Forwarded-For
// given, and returns the status.
func registerFrom(t *testing.T, base, xff string) int {
	t.Helper()
	st, _ := call(t, "POST", base+"/v1/storefront/register-guest", map[string]string{"x-service-key": "pk_demo",
		"Origin": "http://localhost:3000", "Content-Type": "application/json", "X-Forwarded-For": xff},
		`{"eventId":"ev_demo_ga","selectedTicketId":"tk_general"}`)
	return st
}

// maxLimitedWrites bounds writesUntilLimited: four times the storefront's
// 30 writes a minute, so even a machine slow enough for the bucket to
// refill one write every 2 s meanwhile meets the limit.
const maxLimitedWrites = 120

// writesUntilLimited sends register-guest writes, the i-th (from 0) with
// X-Forwarded-For xff(i), until one is refused with 429, and returns how
// many were sent; 0 if none of maxLimitedWrites was limited. Every write
// before the 429 must be the 400 of a write counted (no buyer). Counting
// to a 429, not asserting the 31st is one, holds however slowly the
// writes go.
func writesUntilLimited(t *testing.T, base string, xff func(i int) string) int {
	t.Helper()
	for i := 0; i < maxLimitedWrites; i++ {
		switch st := registerFrom(t, base, xff(i)); st {
		case 429:
			return i + 1
		case 400:
		default:
			t.Fatalf("write %d: %d, want 400 or 429", i+1, st)
		}
	}
	return 0
}

// TestSecurityForwardedForFromUntrustedPeersIsIgnored: without
// TICKETD_TRUSTED_PROXIES the connection's peer is the client whatever
// X-Forwarded-For says: the channel allowlist is not opened by naming an
// allowlisted address, the storefront's write limit (30 a minute per
// client) is not escaped by naming a new address each time, and the
// lockout after failed authentications locks the peer, not the addresses
// it names.
func TestSecurityForwardedForFromUntrustedPeersIsIgnored(t *testing.T) {
	base := startXFF(t, "")
	for _, xff := range []string{"203.0.113.9", "198.51.100.1, 203.0.113.9", "203.0.113.9, 127.0.0.1"} {
		if st, body := far(t, base, xff); st != 403 || !strings.Contains(body, `"IP_NOT_ALLOWED"`) {
			t.Fatalf("X-Forwarded-For %q from an untrusted peer: %d %s, want 403 IP_NOT_ALLOWED", xff, st, body)
		}
	}
	// Each write names a new address: were the header believed, each
	// would have a bucket of its own and no 429 would ever come.
	if n := writesUntilLimited(t, base, func(i int) string { return fmt.Sprintf("198.51.%d.%d", 100+i/250, i%250+1) }); n == 0 {
		t.Fatalf("%d writes, each naming a new X-Forwarded-For, were never limited: the header was believed", maxLimitedWrites)
	}
	// Failed authentications from "many addresses" lock the one peer out.
	locked := false
	for i := 0; i < 60 && !locked; i++ {
		st, _ := call(t, "GET", base+"/v1/channel/events", map[string]string{"x-service-key": "ck_nope", "x-service-secret": "wrong",
			"X-Forwarded-For": fmt.Sprintf("192.0.2.%d", i+1)}, "")
		locked = st == 429
	}
	if !locked {
		t.Fatal("60 failed authentications naming 60 addresses did not lock the peer out")
	}
}

// TestSecurityForwardedForFromTrustedProxies: X-Forwarded-For is believed
// from the proxies of TICKETD_TRUSTED_PROXIES only, read from the right:
// the client is the right-most address that is not a trusted proxy, so an
// address the client put at the left of the chain opens nothing. The
// storefront's limit is then per believed client.
func TestSecurityForwardedForFromTrustedProxies(t *testing.T) {
	base := startXFF(t, "127.0.0.1/32, ::1/128, 10.0.0.0/8")
	for _, c := range []struct {
		xff string
		ok  bool
	}{
		{"203.0.113.9", true},
		{"198.51.100.7, 203.0.113.9", true},            // the proxy appended the client; the left entry is the client's own
		{"203.0.113.9, 10.1.2.3", true},                // a second trusted proxy in front
		{"203.0.113.9, 198.51.100.7", false},           // spoofed: the client wrote 203.0.113.9 itself
		{"203.0.113.9, 198.51.100.7, 10.1.2.3", false}, // the same behind two proxies
		{"203.0.113.9, garbage", false},                // an unreadable hop ends the walk at the proxy
		{"", false},                                    // no header: the proxy itself
	} {
		st, body := far(t, base, c.xff)
		if c.ok && st != 200 || !c.ok && (st != 403 || !strings.Contains(body, `"IP_NOT_ALLOWED"`)) {
			t.Errorf("X-Forwarded-For %q through a trusted proxy: %d %s, want allowed %v", c.xff, st, body, c.ok)
		}
	}
	// The write limit counts the believed client: writes of one client
	// (each naming a different spoofed left entry) meet its limit; another
	// client behind the same proxy still writes.
	if n := writesUntilLimited(t, base, func(i int) string { return fmt.Sprintf("192.0.%d.%d, 198.51.100.50", 2+i/250, i%250+1) }); n == 0 {
		t.Fatalf("%d writes of one believed client (each with a new spoofed left entry) were never limited", maxLimitedWrites)
	}
	if st := registerFrom(t, base, "198.51.100.51"); st != 400 {
		t.Fatalf("another client behind the proxy: %d, want 400 (not limited)", st)
	}
}

// fetchHeaders sends a request and returns the status and headers.
func fetchHeaders(t *testing.T, method, url string, h map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // as the OpenAPI document asks
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestSecurityCORSAndFramingOnlyForAllowedOrigins sweeps every surface of
// a whole ticketd (demo catalog; pk_demo lists localhost and 127.0.0.1)
// with an Origin on the key's list and one off it, as an actual request
// and as a preflight. Only the storefront answers CORS, and only to the
// allowed origin: echoed exactly, never "*", never with credentials,
// always with Vary: Origin. Every HTML page names who may frame it:
// nobody, or the tenant's own sites (the seat picker), never "*".
func TestSecurityCORSAndFramingOnlyForAllowedOrigins(t *testing.T) {
	cfg := localConfig(t)
	cfg.Addr = freeAddr(t)
	cfg.AppURL = "http://" + cfg.Addr
	base := startTicketd(t, cfg)
	const allowed, foreign = "http://localhost:3000", "https://evil.test"
	shop := map[string]string{"x-service-key": "pk_demo", "Origin": allowed, "Content-Type": "application/json"}

	// A card checkout, for its hosted page.
	_, reg := call(t, "POST", base+"/v1/storefront/register-guest", shop,
		`{"eventId":"ev_demo_ga","name":"Ada Lovelace","email":"ada@example.com","selectedTicketId":"tk_general","quantity":1}`)
	id := regexp.MustCompile(`"registrationId":"([^"]+)"`).FindStringSubmatch(reg)
	if id == nil {
		t.Fatalf("register-guest: %s", reg)
	}
	_, cs := call(t, "POST", base+"/v1/storefront/card/create-checkout-session", shop, fmt.Sprintf(
		`{"eventId":"ev_demo_ga","registrationId":%q,"selectedTicketId":"tk_general","quantity":1,"selectedTicketAmount":25,`+
			`"successUrl":"http://localhost:3000/thanks","cancelUrl":"http://localhost:3000/cart"}`, id[1]))
	payURL := regexp.MustCompile(`"url":"([^"]+)"`).FindStringSubmatch(cs)
	if payURL == nil {
		t.Fatalf("create-checkout-session: %s", cs)
	}
	payPath := strings.TrimPrefix(payURL[1], cfg.AppURL)

	type target struct {
		method, path, body string
		headers            map[string]string
		storefront         bool
		// page: an HTML page, which must answer 200 text/html so its
		// framing check below cannot be skipped.
		page bool
	}
	partner := map[string]string{"x-service-key": "ck_demo", "x-service-secret": "cs_demo_secret", "Content-Type": "application/json"}
	targets := []target{
		{"GET", "/v1/storefront/events/ev_demo_ga", "", shop, true, false},
		{"GET", "/v1/storefront/events/ev_nope", "", shop, true, false},
		{"POST", "/v1/storefront/quote", `{"eventId":"ev_demo_ga","selectedTicketId":"tk_general"}`, shop, true, false},
		{"GET", "/v1/storefront/seating/events/ev_demo_seated/availability", "", shop, true, false},
		{"GET", "/v1/storefront/events/ev_demo_ga", "", map[string]string{}, true, false}, // no key: MISSING_KEY
		{"GET", "/v1/channel/events", "", partner, false, false},
		{"POST", "/v1/channel/orders/status", `{"orderId":"x"}`, partner, false, false},
		{"PUT", "/v1/admin/catalog", `{}`, map[string]string{}, false, false},
		{"POST", "/v1/webhooks/card", `{}`, map[string]string{}, false, false},
		{"GET", "/v1/picker/seating/events/ev_demo_seated/config", "", map[string]string{}, false, false},
		{"GET", "/events/demo-concert-hall/dEmO2/seatmap?app=storefront", "", map[string]string{}, false, true},
		{"GET", payPath, "", map[string]string{}, false, true},
		{"GET", "/tickets/nope", "", map[string]string{}, false, false},
		{"GET", "/readyz", "", map[string]string{}, false, false},
		{"GET", "/metrics", "", map[string]string{}, false, false},
	}
	for _, tg := range targets {
		for _, o := range []string{allowed, foreign} {
			h := map[string]string{}
			for k, v := range tg.headers {
				h[k] = v
			}
			h["Origin"] = o
			st, hd, _ := fetchHeaders(t, tg.method, base+tg.path, h, tg.body)
			acao := hd.Values("Access-Control-Allow-Origin")
			where := fmt.Sprintf("%s %s from %s (%d)", tg.method, tg.path, o, st)
			if hd.Get("Access-Control-Allow-Credentials") != "" {
				t.Errorf("%s: Access-Control-Allow-Credentials %q", where, hd.Get("Access-Control-Allow-Credentials"))
			}
			switch {
			case tg.storefront && o == allowed:
				if len(acao) != 1 || acao[0] != allowed {
					t.Errorf("%s: Allow-Origin %q, want exactly %q", where, acao, allowed)
				}
			case len(acao) > 0:
				t.Errorf("%s: Allow-Origin %q, want none", where, acao)
			}
			if tg.storefront && !strings.Contains(strings.Join(hd.Values("Vary"), ","), "Origin") {
				t.Errorf("%s: Vary %q lacks Origin", where, hd.Values("Vary"))
			}
			isHTML := strings.HasPrefix(hd.Get("Content-Type"), "text/html")
			if tg.page && (st != 200 || !isHTML) {
				t.Errorf("%s: Content-Type %q; want a 200 HTML page, whose framing is checked", where, hd.Get("Content-Type"))
			}
			if isHTML {
				fa := frameAncestors(hd.Get("Content-Security-Policy"))
				if fa == nil {
					t.Errorf("%s: an HTML page without frame-ancestors: %q", where, hd.Get("Content-Security-Policy"))
				}
				for _, src := range fa {
					if src == "*" || src == "http:" || src == "https:" || strings.HasPrefix(src, "http://*:") ||
						strings.HasPrefix(src, "https://*:") || src == "http://*" || src == "https://*" {
						t.Errorf("%s: frame-ancestors allows anyone: %q", where, fa)
					}
				}
			}
		}
		// The preflight of the same path.
		for _, o := range []string{allowed, foreign} {
			st, hd, _ := fetchHeaders(t, "OPTIONS", base+tg.path, map[string]string{"Origin": o,
				"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-service-key, content-type"}, "")
			acao := hd.Values("Access-Control-Allow-Origin")
			where := fmt.Sprintf("preflight of %s from %s (%d)", tg.path, o, st)
			if tg.storefront && o == allowed {
				if st != 204 || len(acao) != 1 || acao[0] != allowed || !strings.Contains(strings.Join(hd.Values("Vary"), ","), "Origin") {
					t.Errorf("%s: Allow-Origin %q, Vary %q; want 204, exactly %q, Vary: Origin", where, acao, hd.Values("Vary"), allowed)
				}
			} else if len(acao) > 0 || hd.Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("%s: Allow-Origin %q, Allow-Methods %q; want none", where, acao, hd.Get("Access-Control-Allow-Methods"))
			}
		}
	}
	// The seat picker's page may be framed by the tenant's sites only.
	_, hd, _ := fetchHeaders(t, "GET", base+"/events/demo-concert-hall/dEmO2/seatmap?app=storefront", nil, "")
	want := []string{"http://localhost:*", "https://localhost:*", "http://127.0.0.1:*", "https://127.0.0.1:*"}
	if got := frameAncestors(hd.Get("Content-Security-Policy")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the picker's frame-ancestors: %q, want %q", got, want)
	}
}

// frameAncestors returns the sources of a CSP's frame-ancestors
// directive, nil when it has none.
func frameAncestors(csp string) []string {
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 && strings.EqualFold(f[0], "frame-ancestors") {
			return append([]string{}, f[1:]...)
		}
	}
	return nil
}
