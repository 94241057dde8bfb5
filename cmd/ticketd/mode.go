package main

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/tickets"
)

// TICKETD_ENV values. Production is the default: development is asked for
// by name (make run, -demo, the tests, the bench).
const (
	envProduction  = "production"
	envDevelopment = "development"
)

// minSecretsKey is the shortest TICKETD_SECRETS_KEY production takes: 32
// bytes, the size of the HMAC-SHA256 keys derived from it.
const minSecretsKey = 32

// Processor names of TICKETD_CARD_PROCESSOR and TICKETD_WALLET_PROCESSOR;
// "none" (or unset in production) is no processor.
const processorNone = "none"

// errDemoInProduction refuses -demo in production: the demo catalog's
// credentials are public.
var errDemoInProduction = errors.New("TICKETD_ENV=production with -demo: the demo catalog's credentials are public; " +
	"run the demo with TICKETD_ENV=development (or unset)")

// loadMode reads TICKETD_ENV, TICKETD_TEST_PAYMENTS and the processors
// (TICKETD_CARD_PROCESSOR, TICKETD_WALLET_PROCESSOR,
// TICKETD_STRIPE_WALLET_METHODS), then checks what production refuses
// (checkMode). demo is the -demo flag: it implies development, and is
// refused with an explicit TICKETD_ENV=production, as the demo catalog's
// credentials are public.
func (c *config) loadMode(demo bool) error {
	mode, set := env("TICKETD_ENV", envProduction)
	switch mode {
	case envProduction:
		if demo && set {
			return errDemoInProduction
		}
		c.Development = demo
	case envDevelopment:
		c.Development = true
	default:
		return fmt.Errorf("TICKETD_ENV=%q: want production or development", mode)
	}
	switch v, _ := env("TICKETD_TEST_PAYMENTS", ""); v {
	case "":
		c.TestPayments = c.Development
	case "on":
		c.TestPayments = true
	case "off":
		c.TestPayments = false
	default:
		return fmt.Errorf("TICKETD_TEST_PAYMENTS=%q: want on or off", v)
	}
	var err error
	if c.CardProcessor, err = c.processor("TICKETD_CARD_PROCESSOR", payments.Card); err != nil {
		return err
	}
	if c.WalletProcessor, err = c.processor("TICKETD_WALLET_PROCESSOR", payments.Wallet); err != nil {
		return err
	}
	methods, _ := env("TICKETD_STRIPE_WALLET_METHODS", strings.Join(payments.DefaultStripeWalletMethods, ","))
	if c.StripeWalletMethods, err = payments.ParseStripeWalletMethods(methods); err != nil {
		return fmt.Errorf("TICKETD_STRIPE_WALLET_METHODS=%q: %w", methods, err)
	}
	// Stripe stays on after a switch back to a test processor, to close
	// the sessions opened before it; their late payments need the webhook
	// secret, or Stripe's deliveries are refused for days.
	if c.StripeSecretKey != "" && c.StripeWebhookSecret == "" {
		return fmt.Errorf("STRIPE_SECRET_KEY is set without STRIPE_WEBHOOK_SECRET: Stripe's webhooks could not be verified")
	}
	return c.checkMode()
}

// processor reads one of the processor variables: builtin (the test
// processor's name, its default with test payments on), "stripe", or
// none (the default in production).
func (c *config) processor(name, builtin string) (string, error) {
	def := processorNone
	if c.TestPayments {
		def = builtin
	}
	v, _ := env(name, def)
	switch v {
	case processorNone:
		return "", nil
	case builtin, payments.StripeName:
		return v, nil
	}
	return "", fmt.Errorf("%s=%q: want %s, stripe or none", name, v, builtin)
}

// checkMode refuses what the mode forbids; run checks it again, so a config
// built in code is held to the same rules as the environment's. Each error
// names the variable to change.
func (c config) checkMode() error {
	for _, p := range []struct{ name, value, builtin string }{
		{"TICKETD_CARD_PROCESSOR", c.CardProcessor, payments.Card},
		{"TICKETD_WALLET_PROCESSOR", c.WalletProcessor, payments.Wallet},
	} {
		switch {
		case p.value == p.builtin && !c.TestPayments:
			return fmt.Errorf("%s=%s is ticketd's built-in test processor, which takes no money: use stripe, "+
				"or set TICKETD_TEST_PAYMENTS=on for a staging deployment", p.name, p.value)
		case p.value == payments.StripeName && (c.StripeSecretKey == "" || c.StripeWebhookSecret == ""):
			return fmt.Errorf("%s=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET", p.name)
		}
	}
	if err := c.checkStripeKey(); err != nil {
		return err
	}
	if c.Development {
		return nil
	}
	switch k := c.SecretsKey; {
	case k == "":
		return fmt.Errorf("TICKETD_SECRETS_KEY is not set: production needs a random key of at least %d bytes, "+
			"the same on every node (openssl rand -hex 32); TICKETD_ENV=development runs without one", minSecretsKey)
	case subtle.ConstantTimeCompare([]byte(k), []byte(tickets.DevelopmentSecretsKey)) == 1:
		return fmt.Errorf("TICKETD_SECRETS_KEY is ticketd's public development key: anyone could forge webhooks, " +
			"tickets and page links with it; set a random key of its own (openssl rand -hex 32)")
	case len(k) < minSecretsKey:
		return fmt.Errorf("TICKETD_SECRETS_KEY is %d bytes: production needs at least %d (openssl rand -hex 32)", len(k), minSecretsKey)
	}
	return nil
}

// checkStripeKey refuses a Stripe secret key of the other mode than the
// deployment's payments: a test key (sk_test_, rk_test_) in production
// without test payments would let Stripe's test cards confirm real tickets
// with no money taken, while /readyz says payments are live; a live key
// (sk_live_, rk_live_) where payments are simulated would charge real
// cards while every page and e-mail says TEST MODE. Only the public
// prefix of the key is read.
func (c config) checkStripeKey() error {
	k := c.StripeSecretKey
	if k == "" {
		return nil
	}
	live := strings.HasPrefix(k, "sk_live_") || strings.HasPrefix(k, "rk_live_")
	switch {
	case c.testMode() && live:
		return errors.New("STRIPE_SECRET_KEY is a live key while payments are simulated here (development, or " +
			"TICKETD_TEST_PAYMENTS=on): real cards would be charged while every page says TEST MODE; use a test key (sk_test_...)")
	case !c.testMode() && !live:
		return errors.New("STRIPE_SECRET_KEY is not a live key (sk_live_... or rk_live_...): in production Stripe's test " +
			"cards would confirm tickets with no money taken; use a live key, or TICKETD_TEST_PAYMENTS=on for a staging deployment")
	}
	return nil
}

// testMode says whether payments are simulated: in development, and with
// the built-in test processors on. Every page, e-mail and registration
// then says so, and /readyz answers payments "simulated".
func (c config) testMode() bool { return c.Development || c.TestPayments }

// logMode says at start, in one line, that payments are simulated (test
// mode), or which processors take payments in production.
func logMode(c config, log *slog.Logger) {
	procs := []any{"card", orNone(c.CardProcessor), "wallet", orNone(c.WalletProcessor)}
	switch {
	case c.Development:
		log.Warn("development mode (TICKETD_ENV=development): payments are SIMULATED; not for real buyers", procs...)
	case c.TestPayments:
		log.Warn("TEST MODE (TICKETD_TEST_PAYMENTS=on): payments are SIMULATED by the built-in test processors; not for real buyers", procs...)
	default:
		log.Info("production mode", procs...)
	}
}

func orNone(processor string) string {
	if processor == "" {
		return processorNone
	}
	return processor
}
