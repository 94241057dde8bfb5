// Package webhooks receives the payment processors' signed webhooks under
// /v1/webhooks (decisions.md section 4): the built-in card processor and
// wallet provider (header Payment-Signature, t=<unix>,v1=<hex>) and Stripe
// (Stripe-Signature, verified with stripe-go's webhook package). A verified
// payment is booked through registrations.Service.Pay.
//
// Each event is processed once: its id is remembered in Redis with the
// delivery that processed it. The same delivery again (the very signature
// header, so the same signed request captured and replayed) is refused
// 409 WEBHOOK_REPLAYED; a new delivery of an event already processed (a
// processor's retry, signed anew with its own timestamp) is answered 200
// with data {duplicate: true}, because a processor retries every non-2xx
// answer for days and the event's work is done. Neither is booked again.
// An event whose processing failed (Redis or Postgres away: 503) is not
// remembered, so the processor's retry books it; Pay is idempotent. The
// mark of an event that pays a registration sits in the registration's
// slot, and a booking that needs nothing more writes it in its own step
// (MarkingBooker): the claim and the booking are the webhook's two round
// trips.
package webhooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// Booker books a verified payment: registrations.Service is one.
type Booker interface {
	Pay(ctx context.Context, p registrations.Payment) (registrations.Outcome, error)
}

// MarkingBooker is a Booker that remembers the webhook's delivery with a
// booked payment, in one step (registrations.Service.PayMarked): the
// webhook then answers without a write of its own.
type MarkingBooker interface {
	PayMarked(ctx context.Context, p registrations.Payment, m registrations.Mark) (registrations.Outcome, error)
}

// RefundRecorder tells the host that a registration needs a refund (a
// payment that came too late for its inventory, or a second payment):
// sync/refunddb records it with the host's e-mail. It must be idempotent:
// a retried webhook records the same outcome again.
type RefundRecorder interface {
	Refund(ctx context.Context, o registrations.Outcome, p registrations.Payment) error
}

// API holds the webhook handlers' dependencies.
type API struct {
	Booker Booker
	// Refunds is required: without it every webhook is answered 503
	// (and logged), because a payment that needs a refund must never be
	// booked half-way; the processor's retries book it once it is set.
	Refunds RefundRecorder
	// Gate, when set, is checked before anything else: nil, or the 503 to
	// answer while the Redis state is not current (redisstate.Monitor.Gate:
	// unreachable, lost or being rebuilt), so a stale Redis never books a
	// payment; the processor retries the 503.
	Gate func() *apierr.Error
	// Redis and Space keep the ids of processed events (replay protection).
	Redis rueidis.Client
	Space keys.Space
	// Secrets: TICKETD_CARD_WEBHOOK_SECRET, TICKETD_WALLET_WEBHOOK_SECRET,
	// STRIPE_WEBHOOK_SECRET. A built-in processor without a secret is not
	// running (production without TICKETD_TEST_PAYMENTS): its webhook is
	// not mounted (404). Stripe without one has every webhook refused.
	CardSecret   string
	WalletSecret string
	StripeSecret string
	// StripeLive is the mode of the Stripe events this deployment books:
	// live-mode ones in production without test payments, test-mode ones
	// (false) in development and staging. An event of the other mode is
	// refused (409 PAYMENT_MISMATCH, reason "livemode") and logged.
	StripeLive bool
	// Timeout bounds each webhook's Redis and Postgres work (default 10 s).
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock signatures are checked against; nil is time.Now.
	Now func() time.Time
}

// Register mounts POST /v1/webhooks/stripe, and /card and /wallet when
// their built-in processor runs (its secret is set).
func (a *API) Register(r *router.Router) {
	g := r.Group("/v1/webhooks")
	if a.CardSecret != "" {
		g.POST("/card", a.guard(a.signed(payments.Card, &a.CardSecret, decodeCard)))
	}
	if a.WalletSecret != "" {
		g.POST("/wallet", a.guard(a.signed(payments.Wallet, &a.WalletSecret, decodeWallet)))
	}
	g.POST("/stripe", a.guard(a.stripe))
}

var errNoRefunds = apierr.Unavailable("webhooks cannot be booked now; retry later")

// guard answers 503 before h runs while the API cannot book safely: the
// Gate says Redis is not current, or no RefundRecorder is set (a
// misconfiguration, logged). A webhook is authenticated by its signature,
// which h checks with the body; process bounds its work by a timeout of
// its own.
func (a *API) guard(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	rt := &guard.Route[struct{}]{Gate: &a.Gate, OwnContext: true,
		Auth: func(*fasthttp.RequestCtx, struct{}) (struct{}, guard.Quota, *apierr.Error) {
			if a.Refunds == nil {
				a.log().Error("webhooks: no RefundRecorder is set; every webhook is refused")
				return struct{}{}, guard.Quota{}, errNoRefunds
			}
			return struct{}{}, guard.Quota{}, nil
		}}
	return rt.Wrap(func(ctx *fasthttp.RequestCtx, _ context.Context, _ struct{}) { h(ctx) })
}

const (
	// seenTTL outlives the 5-minute signature window many times over: a
	// captured delivery cannot be replayed after its key is gone, because
	// its signature is stale by then.
	seenTTL = 24 * time.Hour
	// pendingSlack is how long an event's pending mark outlives the
	// processing's timeout (pendingTTL).
	pendingSlack = 5 * time.Second
	// releaseTimeout bounds removing the pending mark of a failed
	// processing, on a context of its own.
	releaseTimeout = 2 * time.Second
	maxEventID     = 255
)

var (
	errInProgress = apierr.Of("WEBHOOK_IN_PROGRESS", "this event is being processed; retry later")
	errReplayed   = apierr.Of("WEBHOOK_REPLAYED", "this very delivery was processed before: a replay is refused")
)

// delivery names one signed delivery by its signature header: a
// processor signs each attempt anew, so only a replay repeats it.
func delivery(signature []byte) string {
	sum := sha256.Sum256(signature)
	return hex.EncodeToString(sum[:8])
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *API) log() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// timeout is the bound of one webhook's work.
func (a *API) timeout() time.Duration {
	if a.Timeout > 0 {
		return a.Timeout
	}
	return 10 * time.Second
}

// pendingTTL frees an event whose processing died with its node, or whose
// mark was set by a call that never learnt it (Redis' reply lost on a
// slow or cut link, answered 503). A processing holds the mark at most its
// timeout, so the mark need not outlive that by much, and the processor's
// retry is not refused (WEBHOOK_IN_PROGRESS) for longer than needed.
func (a *API) pendingTTL() time.Duration { return a.timeout() + pendingSlack }

// event is a verified, decoded webhook: a payment to book, or nothing.
type event struct {
	id string
	// delivery is the signature header's digest (see delivery).
	delivery string
	ignored  bool // not a completed payment: answered 200, not recorded
	// foreign: a Stripe checkout session without ticketd's marker
	// (metadata.registration_id), ignored; session is its id, for the log.
	foreign bool
	session string
	payment registrations.Payment
}

// reply is the data of a webhook's 200 answer.
type reply struct {
	Received       bool   `json:"received"`
	Ignored        bool   `json:"ignored,omitempty"`
	Duplicate      bool   `json:"duplicate,omitempty"`
	RegistrationID string `json:"registrationId,omitempty"`
	Status         string `json:"status,omitempty"`
	Reclaimed      bool   `json:"reclaimed,omitempty"`
}

// process books a verified event once (see the package comment).
func (a *API) process(ctx *fasthttp.RequestCtx, processor string, ev event) {
	if ev.ignored {
		httpx.OK(ctx, reply{Received: true, Ignored: true})
		return
	}
	c, cancel := guard.RequestContext(ctx, a.timeout())
	defer cancel()
	key := a.Space.WebhookSeen(processor, ev.id, ev.payment.RegistrationID)
	set, err := a.Redis.Do(c, a.Redis.B().Set().Key(key).Value("pending").Nx().Px(a.pendingTTL()).Build()).AsBool()
	if err != nil && !rueidis.IsRedisNil(err) {
		httpx.Error(ctx, err)
		return
	}
	if !set {
		st, err := a.Redis.Do(c, a.Redis.B().Get().Key(key).Build()).ToString()
		switch {
		case err == nil && st == "done:"+ev.delivery:
			httpx.Fail(ctx, errReplayed)
		case err == nil && strings.HasPrefix(st, "done"):
			httpx.OK(ctx, reply{Received: true, Duplicate: true, RegistrationID: ev.payment.RegistrationID})
		case err == nil || rueidis.IsRedisNil(err):
			httpx.Fail(ctx, errInProgress)
		default:
			httpx.Error(ctx, err)
		}
		return
	}
	var mark registrations.Mark
	if _, ok := keys.OrderEvent(ev.payment.RegistrationID); ok {
		// In the registration's slot: the booking writes it (MarkingBooker).
		mark = registrations.Mark{Key: key, Value: "done:" + ev.delivery, TTL: seenTTL}
	}
	out, err := a.book(c, ev.payment, mark)
	if err != nil {
		// Forgotten, so that the processor's retry is processed. On a
		// context of its own: c may be what ran out (Redis slow), and the
		// mark would then refuse the retries until it expires.
		rctx, rcancel := context.WithTimeout(context.Background(), releaseTimeout)
		derr := a.Redis.Do(rctx, a.Redis.B().Del().Key(key).Build()).Error()
		rcancel()
		if derr != nil {
			a.log().Warn("webhooks: release event", "processor", processor, "err", derr)
		}
		httpx.Error(ctx, err)
		return
	}
	// Unless the booking remembered it in its own step (out.Marked).
	if !out.Marked {
		if err := a.Redis.Do(c, a.Redis.B().Set().Key(key).Value("done:"+ev.delivery).Px(seenTTL).Build()).Error(); err != nil {
			// Booked all the same; a redelivery is then booked again as a
			// Duplicate by Pay.
			a.log().Warn("webhooks: remember event", "processor", processor, "err", err)
		}
	}
	httpx.OK(ctx, reply{
		Received: true, Duplicate: out.Duplicate, RegistrationID: out.ID,
		Status: out.Status, Reclaimed: out.Reclaimed,
	})
}

// book pays and, when the payment cannot be booked, tells the host. A
// booker that can (MarkingBooker) writes mark with a booked payment that
// needs no refund, in the payment's own step.
func (a *API) book(ctx context.Context, p registrations.Payment, mark registrations.Mark) (registrations.Outcome, error) {
	var out registrations.Outcome
	var err error
	if mb, ok := a.Booker.(MarkingBooker); ok && mark.Key != "" {
		out, err = mb.PayMarked(ctx, p, mark)
	} else {
		out, err = a.Booker.Pay(ctx, p)
	}
	if err != nil {
		return out, err
	}
	// RefundReason, not the status: a second payment of a confirmed
	// registration ("already_paid") leaves it confirmed, and its money must
	// go back all the same.
	if out.RefundReason != "" {
		if err := a.Refunds.Refund(ctx, out, p); err != nil {
			return out, err
		}
		a.log().Warn("webhooks: payment needs a refund", "registration", out.ID, "processor", p.Processor,
			"payment", p.PaymentID, "reason", out.RefundReason)
	}
	return out, nil
}
