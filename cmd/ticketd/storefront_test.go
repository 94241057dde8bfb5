package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/app"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// Without Postgres nothing can record a refund for the host's e-mail: a
// webhook whose payment needs one is still answered 200 (not a 503 the
// processor retries for ever) and the refund is in the log at Error
// level, naming the payment and not the buyer.
func TestRefundWithoutPostgresIsLoggedAndTheWebhookAnswered(t *testing.T) {
	_, space := redistest.New(t)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.KeyPrefix, cfg.RedisURL = "127.0.0.1:0", space.Prefix, redistest.URL()
	cfg.DatabaseURL, cfg.DatabaseURLSet = "postgres://postgres@127.0.0.1:1/ticketd?sslmode=disable", false // unreachable
	cfg.CardWebhookSecret = "test-card-webhook-secret"
	// The log goes to a file the test reads while ticketd writes it.
	logPath := filepath.Join(t.TempDir(), "ticketd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	base := runTicketdLog(t, cfg, options{API: true, Worker: true, Demo: true},
		slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})))
	logs := func() string {
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	shop := map[string]string{"x-service-key": "pk_demo", "Origin": "http://localhost:3000", "Content-Type": "application/json"}
	st, body := call(t, "POST", base+"/v1/storefront/register-guest", shop,
		`{"eventId":"ev_demo_ga","name":"Ada Lovelace","email":"ada@example.com","selectedTicketId":"tk_general","quantity":1}`)
	if st != 200 {
		t.Fatalf("register-guest: %d %s", st, body)
	}
	var reg struct {
		Data struct {
			RegistrationID string  `json:"registrationId"`
			Total          float64 `json:"total"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &reg); err != nil || reg.Data.RegistrationID == "" {
		t.Fatalf("register-guest answered %s (%v)", body, err)
	}
	// The buyer opened two checkouts and paid both: the first payment
	// books the registration, the second must be refunded.
	var sessions []string
	for range 2 {
		st, body := call(t, "POST", base+"/v1/storefront/card/create-checkout-session", shop, fmt.Sprintf(
			`{"eventId":"ev_demo_ga","registrationId":%q,"selectedTicketId":"tk_general","quantity":1,"selectedTicketAmount":25,`+
				`"successUrl":"http://localhost:3000/ok","cancelUrl":"http://localhost:3000/cart"}`, reg.Data.RegistrationID))
		var s struct {
			Data struct {
				SessionID string `json:"sessionId"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &s); st != 200 || err != nil || s.Data.SessionID == "" {
			t.Fatalf("create-checkout-session: %d %s (%v)", st, body, err)
		}
		sessions = append(sessions, s.Data.SessionID)
	}
	paid := int64(reg.Data.Total * 100)
	for i, sess := range []string{sessions[1], sessions[0]} {
		hook := fmt.Sprintf(`{"id":"evt_refund_%d","type":%q,"data":{"object":{"id":%q,"payment_status":"paid","amount_total":%d,"currency":"usd","client_reference_id":%q}}}`,
			i, payments.EventCheckoutCompleted, sess, paid, reg.Data.RegistrationID)
		st, body = call(t, "POST", base+"/v1/webhooks/card", map[string]string{"Content-Type": "application/json",
			payments.SignatureHeader: payments.Sign(cfg.CardWebhookSecret, time.Now(), []byte(hook))}, hook)
		if st != 200 {
			t.Fatalf("webhook %d, without Postgres: %d %s, want 200", i, st, body)
		}
	}
	var line string
	for _, l := range strings.Split(logs(), "\n") {
		if strings.Contains(l, "refund required") {
			line = l
		}
	}
	for _, want := range []string{"level=ERROR", "registration=" + reg.Data.RegistrationID, "processor=card",
		"payment=" + sessions[0], "reason=already_paid", fmt.Sprintf("amount=%d.%02d", paid/100, paid%100)} {
		if !strings.Contains(line, want) {
			t.Errorf("refund log line %q lacks %s", line, want)
		}
	}
	if l := logs(); strings.Contains(l, "ada@example.com") || strings.Contains(l, "Lovelace") {
		t.Errorf("the log names the buyer:\n%s", l)
	}
}

// The storefront's loops (the sweep of expired holds, the test
// processors' webhook deliveries) have all returned once wg says so: the
// node closes the pool and the Redis client only after that.
func TestStorefrontLoopsEndWithTheirWaitGroup(t *testing.T) {
	rc, space := redistest.New(t)
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b := app.Base{Redis: rc, Space: space, Catalog: &catalogstore.Store{Redis: rc, Space: space, Logger: log},
		Metrics: metrics.New(), Logger: log}
	node, err := app.New(b, app.NewState(b, nil), appSettings(cfg, "test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	startLoops(ctx, &wg, nodeLoops(node))
	running := func() string {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, fn := range []string{"registrations.(*Service).Run(", "payments.(*Hosted).Run("} {
			if strings.Contains(stacks, fn) {
				return fn
			}
		}
		return ""
	}
	deadline := time.Now().Add(10 * time.Second)
	for running() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if running() == "" {
		t.Fatal("the storefront's loops never ran")
	}
	cancel()
	wg.Wait()
	if fn := running(); fn != "" {
		t.Fatalf("%s still runs after the wait group said done", fn)
	}
}
