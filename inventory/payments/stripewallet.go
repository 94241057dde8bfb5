package payments

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// StripeWalletMethods are the Checkout payment method types a Stripe
// wallet session may offer: the wallets Stripe runs as payment methods of
// their own. Apple Pay and Google Pay are not among them: Checkout offers
// them on the card type, beside the card form, so a session limited to
// them cannot be made; the card processor offers them (docs/payments.md).
var StripeWalletMethods = []string{"link", "cashapp", "amazon_pay", "paypal", "revolut_pay"}

// DefaultStripeWalletMethods is what a wallet session offers when
// TICKETD_STRIPE_WALLET_METHODS is unset: Link, which takes USD as ticketd
// charges. Each other type must be turned on in the Stripe Dashboard first
// (Stripe refuses a session naming one that is not) and takes only some
// countries' accounts and currencies.
var DefaultStripeWalletMethods = []string{"link"}

// ParseStripeWalletMethods reads a comma-separated list of
// StripeWalletMethods, each at most once, at least one.
func ParseStripeWalletMethods(list string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		switch {
		case m == "":
			continue
		case !slices.Contains(StripeWalletMethods, m):
			return nil, fmt.Errorf("%q is not a Stripe wallet payment method type (want some of %s; "+
				"Apple Pay and Google Pay come with the card processor)", m, strings.Join(StripeWalletMethods, ", "))
		case slices.Contains(out, m):
			return nil, fmt.Errorf("%q is named twice", m)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("name at least one payment method type")
	}
	return out, nil
}
