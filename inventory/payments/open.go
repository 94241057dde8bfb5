package payments

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Config chooses and configures the processors ticketd runs.
type Config struct {
	// CardProcessor is TICKETD_CARD_PROCESSOR: "card" (the built-in test
	// processor), "stripe", or "" for none.
	CardProcessor string
	// WalletProcessor is TICKETD_WALLET_PROCESSOR: "wallet" (the built-in
	// test wallet), "stripe", or "" for none.
	WalletProcessor string
	// TestPayments runs the built-in test processors (development, or
	// TICKETD_TEST_PAYMENTS=on): without it they do not exist, and neither
	// "card" nor "wallet" may be chosen.
	TestPayments bool
	// Hosted configures the built-in processors; its Secret is ignored in
	// favour of CardSecret and WalletSecret.
	Hosted       HostedConfig
	CardSecret   string // TICKETD_CARD_WEBHOOK_SECRET
	WalletSecret string // TICKETD_WALLET_WEBHOOK_SECRET
	Stripe       StripeConfig
	// StripeWalletMethods are the payment method types of a Stripe wallet
	// session (TICKETD_STRIPE_WALLET_METHODS); nil is
	// DefaultStripeWalletMethods.
	StripeWalletMethods []string
}

// Processors are the processors ticketd runs.
type Processors struct {
	// Card takes card payments: the test card processor, Stripe, or nil
	// (none: the storefront answers PAYMENT_METHOD_UNAVAILABLE).
	Card Processor
	// Wallet takes wallet payments: the test wallet, Stripe, or nil.
	Wallet Processor
	// TestCard and TestWallet are the built-in processors, nil unless
	// Config.TestPayments: they serve their pages and webhooks even when
	// another processor takes new payments, for the sessions opened before.
	TestCard, TestWallet *Hosted
	// Set holds them all by name (the registrations.Expirer). With
	// STRIPE_SECRET_KEY set it holds Stripe even when Stripe takes no
	// payments (any more), so sessions opened before a switch can be closed.
	Set Set
}

// Open builds the processors of cfg. A built-in processor without its
// webhook secret is an error: it would sign with "" and ticketd would
// refuse every webhook it sends.
func Open(cfg Config) (Processors, error) {
	var ps Processors
	if cfg.TestPayments {
		if cfg.CardSecret == "" {
			return Processors{}, errors.New("payments: the test card processor needs TICKETD_CARD_WEBHOOK_SECRET")
		}
		if cfg.WalletSecret == "" {
			return Processors{}, errors.New("payments: the test wallet needs TICKETD_WALLET_WEBHOOK_SECRET")
		}
		h := cfg.Hosted
		h.Secret = cfg.CardSecret
		ps.TestCard = NewCard(h)
		h.Secret = cfg.WalletSecret
		ps.TestWallet = NewWallet(h)
	}
	// pick is the processor a variable names: its built-in test processor
	// (only with test payments on), Stripe, or none.
	pick := func(name, value, builtin string, test *Hosted, stripe func() *Stripe) (Processor, error) {
		switch value {
		case "":
			return nil, nil
		case builtin:
			if test == nil {
				return nil, fmt.Errorf("payments: %s=%s, the built-in test processor, runs only with test payments on", name, value)
			}
			return test, nil
		case StripeName:
			if cfg.Stripe.SecretKey == "" {
				return nil, fmt.Errorf("payments: %s=stripe needs STRIPE_SECRET_KEY", name)
			}
			return stripe(), nil
		}
		return nil, fmt.Errorf("payments: %s is %q: want %s, stripe or none", name, value, builtin)
	}
	var err error
	if ps.Card, err = pick("TICKETD_CARD_PROCESSOR", cfg.CardProcessor, Card, ps.TestCard,
		func() *Stripe { return NewStripe(cfg.Stripe) }); err != nil {
		return Processors{}, err
	}
	if ps.Wallet, err = pick("TICKETD_WALLET_PROCESSOR", cfg.WalletProcessor, Wallet, ps.TestWallet, func() *Stripe {
		methods := cfg.StripeWalletMethods
		if len(methods) == 0 {
			methods = DefaultStripeWalletMethods
		}
		return NewStripeWallet(cfg.Stripe, methods)
	}); err != nil {
		return Processors{}, err
	}
	ps.Set = Set{}
	for _, p := range []Processor{ps.Card, ps.Wallet} {
		if p != nil {
			ps.Set[p.Name()] = p
		}
	}
	for _, h := range []*Hosted{ps.TestCard, ps.TestWallet} {
		if h != nil {
			ps.Set[h.Name()] = h
		}
	}
	if _, ok := ps.Set[StripeName]; !ok && cfg.Stripe.SecretKey != "" {
		// Expire only: no new session is opened with Stripe.
		ps.Set[StripeName] = NewStripe(cfg.Stripe)
	}
	return ps, nil
}

// Run runs the webhook delivery loops of the built-in processors until ctx
// ends (every node may run them).
func (ps Processors) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range []*Hosted{ps.TestCard, ps.TestWallet} {
		if h == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.Run(ctx, time.Second)
		}()
	}
	wg.Wait()
}
