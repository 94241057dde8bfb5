package webhooks

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/stripe/stripe-go/v82/webhook"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/jsonpos"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// signed serves the webhook of a built-in test processor: POST
// /v1/webhooks/card (checkout.session.completed) or /v1/webhooks/wallet
// (the wallet's callback), both signed with Payment-Signature.
func (a *API) signed(processor string, secret *string, decode func([]byte) (event, *apierr.Error)) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		// The raw body, as signed; the server held it to the 64 KB limit.
		b := ctx.PostBody()
		ae := a.verify(*secret, ctx, b)
		var ev event
		if ae == nil {
			ev, ae = decode(b)
		}
		if ae != nil {
			httpx.Fail(ctx, ae)
			return
		}
		ev.delivery = delivery(ctx.Request.Header.Peek(payments.SignatureHeader))
		a.process(ctx, processor, ev)
	}
}

// stripe: POST /v1/webhooks/stripe, Stripe's events.
func (a *API) stripe(ctx *fasthttp.RequestCtx) {
	sig := ctx.Request.Header.Peek("Stripe-Signature")
	ev, ae := decodeStripe(a.StripeSecret, string(sig), ctx.PostBody(), a.now(), a.StripeLive)
	if ae != nil && ae.Reason == "livemode" {
		// "payment": a live payment refused here is money to refund, never
		// folded into another's log line.
		a.log().Error("webhooks: a Stripe payment of another mode than this deployment's payments is refused; "+
			"check the endpoint's webhook secret and STRIPE_SECRET_KEY", "event", ev.id, "payment", ev.session,
			"deployment_live", a.StripeLive)
	}
	if ae != nil {
		httpx.Fail(ctx, ae)
		return
	}
	ev.delivery = delivery(sig)
	if ev.foreign {
		a.log().Info("webhooks: stripe checkout session not created by ticketd, ignored", "event", ev.id, "session", ev.session)
	}
	a.process(ctx, payments.StripeName, ev)
}

func (a *API) verify(secret string, ctx *fasthttp.RequestCtx, b []byte) *apierr.Error {
	err := payments.Verify(secret, string(ctx.Request.Header.Peek(payments.SignatureHeader)), b, a.now())
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return payments.ErrInvalidSignature
	}
	return nil
}

// strict decodes b into v refusing unknown fields, trailing data and wrong
// types, with a message naming what is wrong.
func strict(b []byte, v any) *apierr.Error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apierr.Invalid("webhook body is not valid: %s", decodeMessage(err, b))
	}
	if dec.More() {
		return apierr.Invalid("webhook body is not valid: data after the JSON object")
	}
	return nil
}

// decodeMessage says what is wrong with b, which err refused: the field
// of the wrong type, where the JSON breaks, or the unknown field.
func decodeMessage(err error, b []byte) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return "field " + te.Field + " has the wrong type"
	}
	if p, ok := jsonpos.Of(b, err); ok {
		return "malformed JSON " + p.String() + ": " + p.Msg
	}
	if msg := err.Error(); strings.Contains(msg, "unknown field") {
		return msg[strings.Index(msg, "unknown field"):]
	}
	return "malformed JSON"
}

func checkEventID(id string) *apierr.Error {
	if id == "" || len(id) > maxEventID {
		return apierr.Invalid("webhook field id must be 1 to %d characters", maxEventID)
	}
	return nil
}

func checkReference(field, reg string) *apierr.Error {
	if _, ok := keys.OrderEvent(reg); !ok {
		return apierr.Invalid("webhook field %s is not a registration id", field)
	}
	return nil
}

func decodeCard(b []byte) (event, *apierr.Error) {
	var w struct {
		ID   *string `json:"id"`
		Type *string `json:"type"`
		Data *struct {
			Object *struct {
				ID                *string `json:"id"`
				PaymentStatus     *string `json:"payment_status"`
				AmountTotal       *int64  `json:"amount_total"`
				Currency          *string `json:"currency"`
				ClientReferenceID *string `json:"client_reference_id"`
			} `json:"object"`
		} `json:"data"`
	}
	if ae := strict(b, &w); ae != nil {
		return event{}, ae
	}
	if w.ID == nil || w.Type == nil || w.Data == nil || w.Data.Object == nil {
		return event{}, apierr.Invalid("webhook body needs id, type and data.object")
	}
	if ae := checkEventID(*w.ID); ae != nil {
		return event{}, ae
	}
	o := w.Data.Object
	if *w.Type != payments.EventCheckoutCompleted || o.PaymentStatus == nil || *o.PaymentStatus != "paid" {
		return event{id: *w.ID, ignored: true}, nil
	}
	if o.ID == nil || o.AmountTotal == nil || o.Currency == nil || o.ClientReferenceID == nil {
		return event{}, apierr.Invalid("webhook data.object needs id, amount_total, currency and client_reference_id")
	}
	if *o.AmountTotal < 0 || *o.ID == "" {
		return event{}, apierr.Invalid("webhook data.object has an empty id or a negative amount_total")
	}
	if ae := checkReference("data.object.client_reference_id", *o.ClientReferenceID); ae != nil {
		return event{}, ae
	}
	return event{id: *w.ID, payment: registrations.Payment{
		RegistrationID: *o.ClientReferenceID, Processor: payments.Card, PaymentID: *o.ID,
		Amount: money.Cents(*o.AmountTotal), Currency: *o.Currency,
	}}, nil
}

func decodeWallet(b []byte) (event, *apierr.Error) {
	var w struct {
		ID        *string          `json:"id"`
		Status    *string          `json:"status"`
		Amount    *json.RawMessage `json:"amount"`
		Currency  *string          `json:"currency"`
		Reference *string          `json:"reference"`
	}
	if ae := strict(b, &w); ae != nil {
		return event{}, ae
	}
	if w.ID == nil || w.Status == nil {
		return event{}, apierr.Invalid("webhook body needs id and status")
	}
	if ae := checkEventID(*w.ID); ae != nil {
		return event{}, ae
	}
	if *w.Status != "COMPLETED" {
		return event{id: *w.ID, ignored: true}, nil
	}
	if w.Amount == nil || w.Currency == nil || w.Reference == nil {
		return event{}, apierr.Invalid("webhook body needs amount, currency and reference")
	}
	// A JSON number in dollars, exact: never through float64, never a string.
	raw := string(*w.Amount)
	if raw == "" || raw[0] == '"' || raw[0] == '-' {
		return event{}, apierr.Invalid("webhook field amount must be a non-negative JSON number with at most two decimals")
	}
	amt, err := money.Parse(raw)
	if err != nil {
		return event{}, apierr.Invalid("webhook field amount must be a non-negative JSON number with at most two decimals")
	}
	if ae := checkReference("reference", *w.Reference); ae != nil {
		return event{}, ae
	}
	return event{id: *w.ID, payment: registrations.Payment{
		RegistrationID: *w.Reference, Processor: payments.Wallet, PaymentID: *w.ID,
		Amount: amt, Currency: *w.Currency,
	}}, nil
}

// stripeCompleted is what ticketd reads of a Checkout Session in a
// checkout.session.* event.
type stripeCompleted struct {
	ID                string            `json:"id"`
	PaymentStatus     string            `json:"payment_status"`
	AmountTotal       *int64            `json:"amount_total"`
	Currency          string            `json:"currency"`
	ClientReferenceID string            `json:"client_reference_id"`
	Metadata          map[string]string `json:"metadata"`
}

func decodeStripe(secret, header string, b []byte, now time.Time, live bool) (event, *apierr.Error) {
	if secret == "" {
		return event{}, payments.ErrInvalidSignature
	}
	// The signature is checked first and the timestamp after it, in both
	// directions (stripe-go would refuse an old one before the signature,
	// and a future one never): a stale answer then tells only a holder of
	// the secret that the timestamp was the problem, as payments.Verify.
	// The API version of the endpoint may differ from stripe-go's: only the
	// few fields below are read, which every version has.
	e, err := webhook.ConstructEventWithOptions(b, header, secret, webhook.ConstructEventOptions{
		IgnoreTolerance: true, IgnoreAPIVersionMismatch: true,
	})
	switch {
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return event{}, payments.ErrInvalidSignature
	case err != nil:
		return event{}, apierr.Invalid("webhook body is not a Stripe event")
	}
	if t, ok := stripeTime(header); !ok || now.Sub(t) > payments.Tolerance || t.Sub(now) > payments.Tolerance {
		return event{}, payments.ErrWebhookStale
	}
	if ae := checkEventID(e.ID); ae != nil {
		return event{}, ae
	}
	// async_payment_succeeded completes a session whose payment method
	// settled later (completed with payment_status unpaid first).
	if e.Type != "checkout.session.completed" && e.Type != "checkout.session.async_payment_succeeded" {
		return event{id: e.ID, ignored: true}, nil
	}
	if e.Data == nil || len(e.Data.Raw) == 0 {
		return event{}, apierr.Invalid("webhook event has no data.object")
	}
	// Only the marker is read first: a session ticketd did not create
	// (another integration on the same Stripe account) may have any shape.
	var mark struct {
		ID       any            `json:"id"`
		Metadata map[string]any `json:"metadata"`
	}
	_ = json.Unmarshal(e.Data.Raw, &mark)
	if v, ok := mark.Metadata[payments.MetadataRegistration]; !ok || v == "" {
		// Not ours: acknowledged, since Stripe retries anything else for
		// days and then disables the endpoint.
		id, _ := mark.ID.(string)
		return event{id: e.ID, ignored: true, foreign: true, session: id}, nil
	}
	var cs stripeCompleted
	if err := json.Unmarshal(e.Data.Raw, &cs); err != nil {
		return event{}, apierr.Invalid("webhook data.object is not a checkout session: %s", decodeMessage(err, e.Data.Raw))
	}
	if cs.PaymentStatus != "paid" {
		return event{id: e.ID, ignored: true}, nil
	}
	reg := cs.ClientReferenceID
	if reg == "" {
		reg = cs.Metadata[payments.MetadataRegistration]
	}
	if cs.ID == "" || cs.AmountTotal == nil || *cs.AmountTotal < 0 || cs.Currency == "" {
		return event{}, apierr.Invalid("webhook checkout session needs id, amount_total and currency")
	}
	if ae := checkReference("data.object.client_reference_id", reg); ae != nil {
		return event{}, ae
	}
	// A paid session of ticketd's in a test-mode event where payments are
	// live would book tickets no money paid for; a live one where payments
	// are simulated took real money while every page says TEST MODE.
	// Neither is booked (the start refuses a key of the wrong mode: this
	// holds against a misconfigured endpoint). Checked only here, for
	// ticketd's own paid sessions: other events of either mode (a Connect
	// platform's live endpoint also gets its accounts' test events) are
	// acknowledged as above, or Stripe would retry them for days.
	if e.Livemode != live {
		return event{id: e.ID, session: cs.ID}, registrations.PaymentRefused("livemode")
	}
	return event{id: e.ID, payment: registrations.Payment{
		RegistrationID: reg, Processor: payments.StripeName, PaymentID: cs.ID,
		Amount: money.Cents(*cs.AmountTotal), Currency: cs.Currency,
	}}, nil
}

// stripeTime reads the t element of a Stripe-Signature header; the last
// one, as stripe-go's verification takes it.
func stripeTime(header string) (t time.Time, ok bool) {
	for part := range strings.SplitSeq(header, ",") {
		if v, found := strings.CutPrefix(part, "t="); found {
			sec, err := strconv.ParseInt(v, 10, 64)
			t, ok = time.Unix(sec, 0), err == nil
		}
	}
	return t, ok
}
