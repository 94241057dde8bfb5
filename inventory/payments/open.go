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
	// CardProcessor is TICKETD_CARD_PROCESSOR: "card" (default, the
	// built-in test processor) or "stripe".
	CardProcessor string
	// Hosted configures the built-in processors; its Secret is ignored in
	// favour of CardSecret and WalletSecret.
	Hosted       HostedConfig
	CardSecret   string // TICKETD_CARD_WEBHOOK_SECRET
	WalletSecret string // TICKETD_WALLET_WEBHOOK_SECRET
	Stripe       StripeConfig
}

// Processors are the processors ticketd runs.
type Processors struct {
	// Card takes card payments: the test card processor or Stripe.
	Card Processor
	// Wallet is the built-in wallet provider.
	Wallet *Hosted
	// TestCard is the built-in card processor; nil when Stripe takes cards.
	TestCard *Hosted
	// Set holds them all by name (the registrations.Expirer). With
	// STRIPE_SECRET_KEY set it holds Stripe even when Stripe does not take
	// cards (any more), so sessions opened before a switch can be closed.
	Set Set
}

// Open builds the processors of cfg. A built-in processor without its
// webhook secret is an error: it would sign with "" and ticketd would
// refuse every webhook it sends.
func Open(cfg Config) (Processors, error) {
	var ps Processors
	if cfg.WalletSecret == "" {
		return Processors{}, errors.New("payments: the wallet needs TICKETD_WALLET_WEBHOOK_SECRET")
	}
	h := cfg.Hosted
	h.Secret = cfg.WalletSecret
	ps.Wallet = NewWallet(h)
	switch cfg.CardProcessor {
	case "", Card:
		if cfg.CardSecret == "" {
			return Processors{}, errors.New("payments: the test card processor needs TICKETD_CARD_WEBHOOK_SECRET")
		}
		h.Secret = cfg.CardSecret
		ps.TestCard = NewCard(h)
		ps.Card = ps.TestCard
	case StripeName:
		if cfg.Stripe.SecretKey == "" {
			return Processors{}, errors.New("payments: TICKETD_CARD_PROCESSOR=stripe needs STRIPE_SECRET_KEY")
		}
		ps.Card = NewStripe(cfg.Stripe)
	default:
		return Processors{}, fmt.Errorf("payments: TICKETD_CARD_PROCESSOR is %q: want card or stripe", cfg.CardProcessor)
	}
	ps.Set = NewSet(ps.Card, ps.Wallet)
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
	for _, h := range []*Hosted{ps.TestCard, ps.Wallet} {
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
