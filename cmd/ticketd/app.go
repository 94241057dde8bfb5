package main

import (
	"context"
	"encoding/hex"

	"github.com/ticketd/ticketd/handlers/app"
	"github.com/ticketd/ticketd/inventory/payments"
)

// appSettings are the API's settings from cfg, its keys derived from
// secretsKey (so every node has the same): the built-in test card
// processor and wallet with test payments on (payments.Open), and the
// processors TICKETD_CARD_PROCESSOR and TICKETD_WALLET_PROCESSOR name
// (decisions.md §3 and §4). The caller sets Trusted and Replication.
func appSettings(cfg config, secretsKey string) app.Settings {
	secret := func(set, purpose string) string {
		if set != "" {
			return set
		}
		// Both ends of a built-in processor run in ticketd: a secret
		// derived from the secrets key is shared by every node.
		return hex.EncodeToString(derive(secretsKey, purpose))
	}
	return app.Settings{
		AppURL: cfg.AppURL, AdminToken: cfg.AdminToken,
		Keys: app.Keys{
			Sessions: derive(secretsKey, purposeSessions), OrderIDs: derive(secretsKey, purposeOrderIDs),
			// The seat picker's page tokens are signed under a key of
			// their own: any node serves the page's calls.
			Picker: derive(secretsKey, purposePicker), Holds: derive(secretsKey, purposeHolds), Tickets: secretsKey,
			// The waiting room's poll tokens, passes and shuffle keys.
			Room:          derive(secretsKey, purposeRoom),
			CardWebhook:   secret(cfg.CardWebhookSecret, purposeCardWebhooks),
			WalletWebhook: secret(cfg.WalletWebhookSecret, purposeWalletWebhooks),
		},
		OrderTTL: cfg.OrderTTL, SeatHoldTTL: cfg.SeatHoldTTL, CheckoutTTL: cfg.CheckoutTTL, RegisterHoldTTL: cfg.RegisterHoldTTL,
		HoldsPerIP: cfg.HoldsPerIP, MaxUnsynced: cfg.MaxUnsynced,
		TestMode: cfg.testMode(), TestPayments: cfg.TestPayments,
		CardProcessor: cfg.CardProcessor, WalletProcessor: cfg.WalletProcessor,
		Stripe:              payments.StripeConfig{SecretKey: cfg.StripeSecretKey, APIBase: cfg.StripeAPIBase},
		StripeWalletMethods: cfg.StripeWalletMethods, StripeWebhookSecret: cfg.StripeWebhookSecret,
	}
}

// nodeLoops are what an API node runs beside the server: the app's loops
// and the test processors' webhook deliveries. They use Redis (the sweep
// Postgres too), so the node waits for them before closing either.
func nodeLoops(a *app.App) []func(context.Context) {
	return append(a.Loops, a.Deliveries)
}
