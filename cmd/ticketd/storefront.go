package main

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/pages"
	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/handlers/storefront"
	"github.com/ticketd/ticketd/handlers/webhooks"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/seats"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/refunddb"
)

// front is the storefront side of an API node: the surface, the payment
// processors with their webhooks and hosted pages, and the ticket page.
type front struct {
	surfaces []server.Surface
	// loops run beside the API, each until its ctx ends: the sweep of
	// expired checkout holds and the test processors' webhook deliveries.
	// They use Redis (the sweep Postgres too), so the node waits for them
	// before closing either.
	loops []func(ctx context.Context)
}

// frontDeps are what the storefront takes from the rest of the node.
type frontDeps struct {
	cfg        config
	secretsKey string
	redis      rueidis.Client
	space      keys.Space
	pool       *pgxpool.Pool // nil without Postgres
	store      *catalogstore.Store
	orders     *orders.Service
	seats      *seats.Engine
	limiter    *ratelimit.Limiter
	resolver   *clientip.Resolver
	monitor    *redisstate.Monitor
	// gate is the sales gate of the surfaces: the monitor's, then
	// TICKETD_MAX_UNSYNCED's. The sweep follows the monitor's alone.
	gate func() *apierr.Error
	log  *slog.Logger
}

// newFront wires the storefront (decisions.md §3 and §4): the built-in
// test card processor and wallet with test payments on (payments.Open),
// and the processors TICKETD_CARD_PROCESSOR and TICKETD_WALLET_PROCESSOR
// name.
func newFront(d frontDeps) (front, error) {
	secret := func(set, purpose string) string {
		if set != "" {
			return set
		}
		// Both ends of a built-in processor run in ticketd: a secret
		// derived from the secrets key is shared by every node.
		return hex.EncodeToString(derive(d.secretsKey, purpose))
	}
	// Without test payments the built-in processors do not run: no
	// secret, so their webhooks are not mounted either.
	var cardSecret, walletSecret string
	if d.cfg.TestPayments {
		cardSecret = secret(d.cfg.CardWebhookSecret, purposeCardWebhooks)
		walletSecret = secret(d.cfg.WalletWebhookSecret, purposeWalletWebhooks)
	}
	procs, err := payments.Open(payments.Config{
		CardProcessor: d.cfg.CardProcessor, WalletProcessor: d.cfg.WalletProcessor, TestPayments: d.cfg.TestPayments,
		Hosted:     payments.HostedConfig{Redis: d.redis, Space: d.space, AppURL: d.cfg.AppURL, Logger: d.log},
		CardSecret: cardSecret, WalletSecret: walletSecret,
		Stripe:              payments.StripeConfig{SecretKey: d.cfg.StripeSecretKey, APIBase: d.cfg.StripeAPIBase},
		StripeWalletMethods: d.cfg.StripeWalletMethods,
	})
	if err != nil {
		return front{}, err
	}
	// The sweep and the webhooks wait while the Redis state is not
	// current (a Redis back from an older snapshot must neither give holds
	// back nor book payments); payments know each event's tenant and
	// cancellation from the catalog.
	regs := &registrations.Service{Redis: d.redis, Space: d.space, Orders: d.orders, CheckoutTTL: d.cfg.CheckoutTTL,
		HoldTTL: d.cfg.RegisterHoldTTL, StreamCap: d.orders.StreamCap, Expirer: procs.Set, Event: registrations.CatalogEvents(d.store.Current),
		Gate: d.monitor.Gate, Logger: d.log}
	if d.pool != nil {
		regs.Archive = orderdb.Store{Pool: d.pool}
	}
	tix := tickets.NewKeys(d.secretsKey)
	hp := holds.Policy{Key: derive(d.secretsKey, purposeHolds), Limit: d.cfg.HoldsPerIP}
	api := &storefront.API{
		Catalog: d.store.Current, Orders: d.orders, Registrations: regs, Seats: d.seats,
		Card: procs.Card, Wallet: procs.Wallet, Processors: procs.Set, Tickets: tix, TestMode: d.cfg.testMode(),
		Limiter: d.limiter, ClientIP: d.resolver, Gate: d.gate, Logger: d.log,
		Holds: hp,
	}
	hooks := &webhooks.API{Booker: regs, Redis: d.redis, Space: d.space, CardSecret: cardSecret,
		WalletSecret: walletSecret, StripeSecret: d.cfg.StripeWebhookSecret, StripeLive: !d.cfg.testMode(),
		Gate: d.gate, Logger: d.log}
	// The seat picker's page tokens are signed under a key of their own:
	// every node derives the same one, so any node serves the page's calls.
	pick := &picker.Picker{Catalog: d.store.Current, Seats: d.seats, Key: derive(d.secretsKey, purposePicker),
		Limiter: d.limiter, ClientIP: d.resolver, Gate: d.gate, TestMode: d.cfg.testMode(), Logger: d.log,
		Holds: hp}
	f := front{surfaces: []server.Surface{api, hooks, pick}}
	if procs.TestCard != nil && procs.TestWallet != nil {
		// The hosted pages exist only with the built-in processors.
		f.surfaces = append(f.surfaces, &pages.Pay{Card: procs.TestCard, Wallet: procs.TestWallet, Logger: d.log})
	}
	if d.pool != nil {
		hooks.Refunds = refunddb.Store{Pool: d.pool}
		f.surfaces = append(f.surfaces, &pages.Tickets{Orders: orderdb.Store{Pool: d.pool}, Keys: tix, TestMode: d.cfg.testMode(), Logger: d.log})
	} else {
		// Without Postgres no refund can be recorded for the host's e-mail
		// (and no mail is sent): the log is where an operator finds it.
		hooks.Refunds = loggedRefunds{log: d.log}
	}
	f.loops = []func(context.Context){
		func(ctx context.Context) { regs.Run(ctx, time.Second) },
		procs.Run,
	}
	return f, nil
}

// loggedRefunds records a refund a payment needs by logging it at Error
// level, on a node without Postgres: the webhook is then answered 200, as
// its payment is handled as far as this node can (a 503 would be retried
// for as long as the processor tries, to the same end). The log names the
// payment, never the buyer.
type loggedRefunds struct{ log *slog.Logger }

func (l loggedRefunds) Refund(_ context.Context, o registrations.Outcome, p registrations.Payment) error {
	reason := o.RefundReason
	if reason == "" {
		reason = o.Reason
	}
	l.log.Error("storefront: refund required: refund this payment through the processor (no Postgres to record it for the host)",
		"registration", o.ID, "processor", p.Processor, "payment", p.PaymentID, "reason", reason,
		"amount", p.Amount.String(), "currency", strings.ToUpper(p.Currency))
	return nil
}
