package main

import (
	"context"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/pages"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/handlers/storefront"
	"github.com/ticketd/ticketd/handlers/webhooks"
	"github.com/ticketd/ticketd/inventory/catalogstore"
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
	// run starts what runs beside the API until ctx ends: the sweep of
	// expired checkout holds and the test processors' webhook deliveries.
	run func(ctx context.Context)
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
	log        *slog.Logger
}

// newFront wires the storefront (decisions.md §3 and §4): the built-in
// test wallet always, the test card processor or Stripe as
// TICKETD_CARD_PROCESSOR says (payments.Open).
func newFront(d frontDeps) (front, error) {
	secret := func(set, purpose string) string {
		if set != "" {
			return set
		}
		// Both ends of a built-in processor run in ticketd: a secret
		// derived from the secrets key is shared by every node.
		return hex.EncodeToString(derive(d.secretsKey, purpose))
	}
	cardSecret := secret(d.cfg.CardWebhookSecret, "ticketd card webhooks v1")
	walletSecret := secret(d.cfg.WalletWebhookSecret, "ticketd wallet webhooks v1")
	procs, err := payments.Open(payments.Config{
		CardProcessor: d.cfg.CardProcessor,
		Hosted:        payments.HostedConfig{Redis: d.redis, Space: d.space, AppURL: d.cfg.AppURL, Logger: d.log},
		CardSecret:    cardSecret, WalletSecret: walletSecret,
		Stripe: payments.StripeConfig{SecretKey: d.cfg.StripeSecretKey, APIBase: d.cfg.StripeAPIBase},
	})
	if err != nil {
		return front{}, err
	}
	regs := &registrations.Service{Redis: d.redis, Space: d.space, Orders: d.orders, CheckoutTTL: d.cfg.CheckoutTTL,
		StreamCap: d.orders.StreamCap, Expirer: procs.Set, Logger: d.log}
	if d.pool != nil {
		regs.Archive = orderdb.Store{Pool: d.pool}
	}
	tix := tickets.NewKeys(d.secretsKey)
	api := &storefront.API{
		Catalog: d.store.Current, Orders: d.orders, Registrations: regs, Seats: d.seats,
		Card: procs.Card, Wallet: procs.Wallet, Processors: procs.Set, Tickets: tix, AppURL: d.cfg.AppURL,
		Limiter: d.limiter, ClientIP: d.resolver, Gate: d.monitor.Gate, Logger: d.log,
	}
	hooks := &webhooks.API{Booker: regs, Redis: d.redis, Space: d.space, CardSecret: cardSecret,
		WalletSecret: walletSecret, StripeSecret: d.cfg.StripeWebhookSecret, Logger: d.log}
	pay := &pages.Pay{Wallet: procs.Wallet, Logger: d.log}
	if procs.TestCard != nil {
		pay.Card = procs.TestCard
	}
	f := front{surfaces: []server.Surface{api, hooks, pay}}
	if d.pool != nil {
		hooks.Refunds = refunddb.Store{Pool: d.pool}
		f.surfaces = append(f.surfaces, &pages.Tickets{Orders: orderdb.Store{Pool: d.pool}, Keys: tix, Logger: d.log})
	}
	f.run = func(ctx context.Context) {
		go regs.Run(ctx, time.Second)
		go procs.Run(ctx)
	}
	return f, nil
}
