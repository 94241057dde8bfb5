package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
)

// StripeName is the Stripe processor's name (TICKETD_CARD_PROCESSOR=stripe,
// TICKETD_WALLET_PROCESSOR=stripe).
const StripeName = "stripe"

// MetadataRegistration is the Checkout Session metadata key naming the
// registration, beside client_reference_id.
const MetadataRegistration = "registration_id"

// Stripe requires a Checkout Session to live at least 30 minutes and at
// most 24 hours; a shorter checkout window is enforced by Expire, which
// the sweeper calls when the registration's hold ends.
const (
	stripeMinLife = 31 * time.Minute // a minute's room for clock skew
	stripeMaxLife = 24 * time.Hour
)

// StripeConfig configures the Stripe processor.
type StripeConfig struct {
	SecretKey string // STRIPE_SECRET_KEY
	// APIBase is the API's base URL (STRIPE_API_BASE); "" is Stripe's own.
	// Tests point it at a stripe-mock.
	APIBase string
	// HTTPClient makes the API calls; nil means stripe-go's default.
	HTTPClient *http.Client
}

// Stripe opens Stripe Checkout Sessions (stripe-go v82). The webhook
// that reports the payment is verified in handlers/webhooks.
type Stripe struct {
	sc *stripe.Client
	// methods, when set, are the only payment method types its sessions
	// offer (the wallet's); nil leaves them to the Stripe Dashboard.
	methods []string
}

// NewStripe returns the Stripe processor.
func NewStripe(cfg StripeConfig) *Stripe {
	bc := &stripe.BackendConfig{
		HTTPClient:    cfg.HTTPClient,
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(strings.TrimRight(cfg.APIBase, "/"))
	}
	return &Stripe{sc: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))}
}

// NewStripeWallet returns the Stripe processor of wallet payments: its
// Checkout Sessions offer only methods (StripeWalletMethods). Its sessions
// are Stripe's like the card's, so it has the same name, webhook and
// Expire.
func NewStripeWallet(cfg StripeConfig, methods []string) *Stripe {
	s := NewStripe(cfg)
	s.methods = slices.Clone(methods)
	return s
}

// Name is "stripe".
func (s *Stripe) Name() string { return StripeName }

// CreateSession creates a Checkout Session in payment mode for req.
func (s *Stripe) CreateSession(ctx context.Context, req CheckoutRequest) (Session, error) {
	now := time.Now()
	exp := req.ExpiresAt
	if exp.Before(now.Add(stripeMinLife)) {
		exp = now.Add(stripeMinLife)
	}
	if exp.After(now.Add(stripeMaxLife)) {
		exp = now.Add(stripeMaxLife)
	}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems:         stripeLines(req),
		ClientReferenceID: stripe.String(req.RegistrationID),
		SuccessURL:        stripe.String(req.SuccessURL),
		CancelURL:         stripe.String(req.CancelURL),
		ExpiresAt:         stripe.Int64(exp.Unix()),
		// Adaptive Pricing would charge the buyer in another currency, and
		// the webhook then reports an amount and currency that are not the
		// registration's, which ticketd refuses to book (PAYMENT_MISMATCH).
		AdaptivePricing: &stripe.CheckoutSessionCreateAdaptivePricingParams{Enabled: stripe.Bool(false)},
	}
	if req.BuyerEmail != "" {
		p.CustomerEmail = stripe.String(req.BuyerEmail)
	}
	if len(s.methods) > 0 {
		p.PaymentMethodTypes = stripe.StringSlice(s.methods)
	}
	p.AddMetadata(MetadataRegistration, req.RegistrationID)
	cs, err := s.sc.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return Session{}, fmt.Errorf("payments: stripe: create checkout session: %w", withoutEmail(err, req.BuyerEmail))
	}
	return Session{ID: cs.ID, URL: cs.URL}, nil
}

// withoutEmail is err with the buyer's e-mail left out: Stripe repeats a
// value it refuses in its message ("Invalid email address: ..."), and the
// error is logged.
func withoutEmail(err error, email string) error {
	if email == "" || !strings.Contains(err.Error(), email) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), email, "(the buyer's e-mail)"))
}

// stripeLines turns the checkout items into Checkout line items in usd,
// the fee and VAT as lines of their own. Stripe takes no negative price, so
// a checkout with a discount, one without items, or one whose items do not
// sum to the amount becomes a single line of the event for the total:
// Stripe always charges exactly the registration's total.
func stripeLines(req CheckoutRequest) []*stripe.CheckoutSessionCreateLineItemParams {
	item := func(name string, unit money.Cents, qty int64) *stripe.CheckoutSessionCreateLineItemParams {
		return &stripe.CheckoutSessionCreateLineItemParams{
			Quantity: stripe.Int64(qty),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String("usd"),
				UnitAmount:  stripe.Int64(int64(unit)),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(name)},
			},
		}
	}
	if len(req.Items) == 0 || req.Items.HasNegative() || req.Items.Sum() != req.Amount {
		return []*stripe.CheckoutSessionCreateLineItemParams{item(orDefault(req.EventName, "Registration "+req.RegistrationID), req.Amount, 1)}
	}
	out := make([]*stripe.CheckoutSessionCreateLineItemParams, 0, len(req.Items))
	for _, it := range req.Items {
		if it.Amount == 0 {
			continue // nothing to charge; Stripe shows no free lines
		}
		if it.Quantity > 0 && it.UnitPrice*money.Cents(it.Quantity) == it.Amount {
			out = append(out, item(it.Name, it.UnitPrice, it.Quantity))
		} else {
			out = append(out, item(it.Name, it.Amount, 1))
		}
	}
	if len(out) == 0 { // a free checkout: Stripe needs a line
		return []*stripe.CheckoutSessionCreateLineItemParams{item(orDefault(req.EventName, "Registration "+req.RegistrationID), req.Amount, 1)}
	}
	return out
}

// LineName names an order line of a hosted session opened before sessions
// stored items (its page has nothing better to show).
func LineName(l orders.Line) string {
	kind := map[string]string{
		orders.LineTicket: "Ticket", orders.LineSeat: "Seat", orders.LineArea: "Area",
		orders.LineTable: "Table", orders.LineExtra: "Extra",
	}[l.Kind]
	if kind == "" {
		kind = l.Kind
	}
	return kind + " " + l.RefID
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Expire expires an open Checkout Session. A session Stripe would not
// expire (a 4xx: it may be complete already, or the call was rate limited)
// is read back: complete (whatever its payment_status: an async payment may
// still succeed) is paid, expired is not, and one still open is an error so
// the hold is kept while the buyer can pay.
func (s *Stripe) Expire(ctx context.Context, sessionID string) (paid bool, err error) {
	p := &stripe.CheckoutSessionExpireParams{}
	_, err = s.sc.V1CheckoutSessions.Expire(ctx, sessionID, p)
	if err == nil {
		return false, nil // it was open and is expired now: never paid
	}
	var se *stripe.Error
	if !errors.As(err, &se) || se.HTTPStatusCode < 400 || se.HTTPStatusCode >= 500 {
		return false, fmt.Errorf("payments: stripe: expire checkout session: %w", err)
	}
	rp := &stripe.CheckoutSessionRetrieveParams{}
	cs, rerr := s.sc.V1CheckoutSessions.Retrieve(ctx, sessionID, rp)
	if rerr != nil {
		return false, fmt.Errorf("payments: stripe: expire checkout session: %w (retrieve: %v)", err, rerr)
	}
	paid, serr := stripeClosed(cs)
	if serr != nil {
		return false, fmt.Errorf("payments: stripe: expire checkout session: %w (%v)", err, serr)
	}
	return paid, nil
}

// stripeClosed reads a session that should no longer be open: complete is
// paid (a complete but unpaid session awaits an async payment, whose
// webhook still comes), expired is not, anything else is an error.
func stripeClosed(cs *stripe.CheckoutSession) (paid bool, err error) {
	switch cs.Status {
	case stripe.CheckoutSessionStatusComplete:
		return true, nil
	case stripe.CheckoutSessionStatusExpired:
		return false, nil
	default:
		return false, fmt.Errorf("session %s is still %q", cs.ID, cs.Status)
	}
}
