package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/seats"
	"github.com/ticketd/ticketd/sync/mailer"
	"github.com/ticketd/ticketd/sync/unsynced"
)

// config is ticketd's environment (decisions.md §5).
type config struct {
	Addr           string
	AppURL         string
	RedisURL       string
	RedisURLSet    bool
	DatabaseURL    string
	DatabaseURLSet bool
	AdminToken     string
	SecretsKey     string
	KeyPrefix      string
	TrustedProxies string
	OrderTTL       time.Duration
	CheckoutTTL    time.Duration
	SeatHoldTTL    time.Duration
	LogFormat      string
	// Recovery is TICKETD_RECOVERY: "auto" (default) rebuilds Redis from
	// Postgres by itself after a loss; "manual" leaves it to the operator.
	Recovery  string
	PprofAddr string
	// RedisFlushDelay is rueidis' MaxFlushDelay (TICKETD_REDIS_FLUSH_DELAY).
	RedisFlushDelay time.Duration
	// CardProcessor is TICKETD_CARD_PROCESSOR: "card" (the built-in test
	// processor, the default with test payments on), "stripe", or "" (none,
	// the default in production: card/create-checkout-session answers
	// PAYMENT_METHOD_UNAVAILABLE).
	CardProcessor string
	// The built-in processors' webhook secrets
	// (TICKETD_CARD_WEBHOOK_SECRET, TICKETD_WALLET_WEBHOOK_SECRET); ""
	// derives them from the secrets key, as both ends run in ticketd.
	CardWebhookSecret, WalletWebhookSecret string
	// Stripe's (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE).
	StripeSecretKey, StripeWebhookSecret, StripeAPIBase string
	// RedisConnections is how many pipelined connections ticketd keeps to
	// Redis (TICKETD_REDIS_CONNECTIONS, a power of two from 1 to 256); 0
	// (unset) chooses by the server's durability (see connectRedis).
	RedisConnections int
	// RegisterHoldTTL is TICKETD_REGISTER_HOLD_TTL: how long a paid
	// registration holds until a checkout session is opened for it
	// (default 3m, at most CheckoutTTL).
	RegisterHoldTTL time.Duration
	// HoldsPerIP is TICKETD_HOLDS_PER_IP: registrations awaiting payment
	// and seat hold tokens one client IP may have per event (default 8;
	// 0 counts none).
	HoldsPerIP int64
	// DemoAddr is where ticketd -demo serves the demo shop
	// (TICKETD_DEMO_ADDR, default localhost:8081): an origin of its own, as a
	// host's site is.
	DemoAddr string
	// demoRoomT0 is how long after start the demo's waiting room admits
	// (demoRoomTimes; 0 is demoRoomDelay, a minute). Not read from the
	// environment: the browser tests shorten it.
	demoRoomT0 time.Duration
	// demoRoomWork, when set, is the demo's waiting room's proof of work
	// (off in the demo, as by default, so the README's curl joins work).
	// Not read from the environment: the browser tests turn it on.
	demoRoomWork *catalog.ProofOfWork
	// Development is TICKETD_ENV=development (make run, -demo, the tests,
	// the bench); false, the zero value, is production (see mode.go).
	Development bool
	// TestPayments is TICKETD_TEST_PAYMENTS=on: the built-in test card
	// and wallet processors, their pages and webhooks exist (default on in
	// development only; a staging deployment sets it).
	TestPayments bool
	// WalletProcessor is TICKETD_WALLET_PROCESSOR: "wallet" (the built-in
	// test wallet), "stripe", or "" (none: wallet/create-payment answers
	// PAYMENT_METHOD_UNAVAILABLE). CardProcessor may be "" the same way.
	WalletProcessor string
	// StripeWalletMethods are the Checkout payment method types a Stripe
	// wallet session offers (TICKETD_STRIPE_WALLET_METHODS).
	StripeWalletMethods []string
	// Conn is the connection caps and the body budget (conns.go).
	Conn connConfig
	// RedisWaitReplicas is TICKETD_REDIS_WAIT_REPLICAS: how many Redis
	// replicas must hold a payment before it is answered paid (WAIT; default
	// 0, none), and RedisWaitTimeout (TICKETD_REDIS_WAIT_TIMEOUT, default
	// 500ms) how long one sale waits for them.
	RedisWaitReplicas int64
	RedisWaitTimeout  time.Duration
	// MaxUnsynced is TICKETD_MAX_UNSYNCED: how many paid orders may wait
	// for Postgres, and how long, before sales stop (unsynced.Default).
	MaxUnsynced unsynced.Limit
}

// defaultDatabaseURL is DATABASE_URL's default: database "ticketd" on the
// local server, never the server's shared "postgres" database.
const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/ticketd?sslmode=disable"

func env(name, def string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v, true
	}
	return def, false
}

// defaultAppURL is the public URL when TICKETD_APP_URL is unset: this host,
// on the port ticketd listens on, so links and the demo lines reach it.
func defaultAppURL(addr string) string {
	port := "8080"
	if _, p, err := net.SplitHostPort(addr); err == nil && p != "" {
		if n, err := net.LookupPort("tcp", p); err == nil {
			port = strconv.Itoa(n)
		}
	}
	return "http://localhost:" + port
}

// loadConfig reads the environment of a ticketd started without -demo.
func loadConfig() (config, error) { return loadConfigFor(false) }

// loadConfigFor reads the environment; demo is the -demo flag, which asks
// for development mode (mode.go).
func loadConfigFor(demo bool) (config, error) {
	var c config
	c.Addr, _ = env("TICKETD_ADDR", ":8080")
	c.AppURL, _ = env("TICKETD_APP_URL", defaultAppURL(c.Addr))
	c.DemoAddr, _ = env("TICKETD_DEMO_ADDR", "localhost:8081")
	c.RedisURL, c.RedisURLSet = env("REDIS_URL", "redis://127.0.0.1:6379")
	// The default is a database of ticketd's own on the local server
	// (created when missing, see ensureDefaultDatabase), so no TLS on
	// loopback (pgx would otherwise try it first and pay for it on every
	// write).
	c.DatabaseURL, c.DatabaseURLSet = env("DATABASE_URL", defaultDatabaseURL)
	c.AdminToken, _ = env("TICKETD_ADMIN_TOKEN", "")
	c.SecretsKey, _ = env("TICKETD_SECRETS_KEY", "")
	c.KeyPrefix, _ = env("TICKETD_KEY_PREFIX", "")
	if err := keys.CheckPrefix(c.KeyPrefix); err != nil {
		return c, fmt.Errorf("TICKETD_KEY_PREFIX=%q: %w", c.KeyPrefix, err)
	}
	c.TrustedProxies, _ = env("TICKETD_TRUSTED_PROXIES", "")
	if _, err := clientip.ParsePrefixes(c.TrustedProxies); err != nil {
		return c, fmt.Errorf("TICKETD_TRUSTED_PROXIES=%q: %w", c.TrustedProxies, err)
	}
	// The mailer's variables (TICKETD_MAIL, TICKETD_SMTP_URL,
	// TICKETD_MAIL_PER_HOUR, ...) are read again where the mailer starts;
	// checked here, a bad one refuses the start in one line naming it, on an
	// API-only node too.
	if _, err := mailer.ConfigFromEnv(os.Getenv, c.AppURL); err != nil {
		return c, err
	}
	c.LogFormat, _ = env("TICKETD_LOG_FORMAT", "text")
	c.PprofAddr, _ = env("TICKETD_PPROF_ADDR", "")
	if conns, set := env("TICKETD_REDIS_CONNECTIONS", ""); set {
		n, err := strconv.Atoi(conns)
		if err != nil || n < 1 || n > 256 || n&(n-1) != 0 {
			return c, fmt.Errorf("TICKETD_REDIS_CONNECTIONS=%q: want a power of two from 1 to 256", conns)
		}
		c.RedisConnections = n
	}
	c.CardWebhookSecret, _ = env("TICKETD_CARD_WEBHOOK_SECRET", "")
	c.WalletWebhookSecret, _ = env("TICKETD_WALLET_WEBHOOK_SECRET", "")
	c.StripeSecretKey, _ = env("STRIPE_SECRET_KEY", "")
	c.StripeWebhookSecret, _ = env("STRIPE_WEBHOOK_SECRET", "")
	c.StripeAPIBase, _ = env("STRIPE_API_BASE", "")
	if err := c.loadMode(demo); err != nil {
		return c, err
	}
	c.Recovery, _ = env("TICKETD_RECOVERY", recoveryAuto)
	if c.Recovery != recoveryAuto && c.Recovery != recoveryManual {
		return c, fmt.Errorf("TICKETD_RECOVERY=%q: want auto or manual", c.Recovery)
	}
	// The TTLs reach Redis as whole milliseconds (PX) and scripts compare them
	// to Redis time, so below a second they round to nothing or expire before
	// the buyer can act; a hold may not outlive the 30m cap from its first hold.
	for _, d := range []struct {
		name     string
		dst      *time.Duration
		def      time.Duration
		min, max time.Duration // max 0: no upper bound
	}{
		{"TICKETD_ORDER_TTL", &c.OrderTTL, 30 * time.Minute, time.Second, 0},
		{"TICKETD_CHECKOUT_TTL", &c.CheckoutTTL, 15 * time.Minute, time.Second, 0},
		{"TICKETD_REGISTER_HOLD_TTL", &c.RegisterHoldTTL, registrations.DefaultHoldTTL, time.Second, 0},
		{"TICKETD_SEAT_HOLD_TTL", &c.SeatHoldTTL, seats.DefaultTTL, time.Second, seats.DefaultMaxTTL},
		{"TICKETD_REDIS_FLUSH_DELAY", &c.RedisFlushDelay, 20 * time.Microsecond, time.Nanosecond, 0},
		// WAIT counts whole milliseconds; past a few seconds a buyer's
		// request times out first (5s).
		{"TICKETD_REDIS_WAIT_TIMEOUT", &c.RedisWaitTimeout, redisstate.DefaultWaitTimeout, time.Millisecond, 5 * time.Second},
	} {
		v, set := env(d.name, "")
		if !set {
			*d.dst = d.def
			continue
		}
		p, err := time.ParseDuration(v)
		switch {
		case err != nil || p <= 0:
			return c, fmt.Errorf("%s=%q: want a positive duration such as 30m", d.name, v)
		case p < d.min:
			return c, fmt.Errorf("%s=%q: must be at least %s", d.name, v, d.min)
		case d.max > 0 && p > d.max:
			return c, fmt.Errorf("%s=%q: must be at most %s", d.name, v, d.max)
		}
		*d.dst = p
	}
	// The register hold leads into the checkout window: set longer, it
	// would outlast it (refused); by default it is the shorter of the two.
	if v, set := env("TICKETD_REGISTER_HOLD_TTL", ""); set && c.RegisterHoldTTL > c.CheckoutTTL {
		return c, fmt.Errorf("TICKETD_REGISTER_HOLD_TTL=%q: must not be longer than TICKETD_CHECKOUT_TTL (%s)", v, c.CheckoutTTL)
	}
	c.RegisterHoldTTL = min(c.RegisterHoldTTL, c.CheckoutTTL)
	c.HoldsPerIP = 8
	if v, set := env("TICKETD_HOLDS_PER_IP", ""); set {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("TICKETD_HOLDS_PER_IP=%q: want a whole number, 0 to turn the limit off", v)
		}
		c.HoldsPerIP = n
	}
	if v, set := env("TICKETD_REDIS_WAIT_REPLICAS", ""); set {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 100 {
			return c, fmt.Errorf("TICKETD_REDIS_WAIT_REPLICAS=%q: want how many Redis replicas must hold a sale, 0 (none) to 100", v)
		}
		c.RedisWaitReplicas = n
	}
	v, _ := env("TICKETD_MAX_UNSYNCED", unsynced.Default)
	var err error
	if c.MaxUnsynced, err = unsynced.Parse(v); err != nil {
		return c, fmt.Errorf("TICKETD_MAX_UNSYNCED=%q: %w", v, err)
	}
	c.Conn, err = loadConnConfig()
	return c, err
}
