package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"sync"
	"unicode/utf8"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
)

type confirmBody struct {
	OrderID          *string          `json:"orderId"`
	Amount           *json.RawMessage `json:"amount"`
	PartnerReference *string          `json:"partnerReference"`
}

var (
	errNoSigningKey = apierr.Of("SIGNING_KEY_NOT_CONFIGURED", "no signing key is configured for this channel; do not retry")
	errBadSignature = apierr.Of("INVALID_SIGNATURE",
		"x-service-signature does not match HMAC-SHA256 over orderId.amount.USD.partnerReference (amount with exactly two decimals)")
	errNotRemit = apierr.Of("NOT_PARTNER_REMIT", "this channel is not configured to settle by partner remit")
)

// Signature is the lowercase hex HMAC-SHA256 of a confirm, keyed with the
// channel's signing key, over "orderId.amount.USD.partnerReference" with the
// amount at exactly two decimals.
func Signature(signingKey, orderID string, amount money.Cents, ref string) string {
	pool := macs(signingKey)
	m := pool.Get().(hash.Hash)
	defer pool.Put(m)
	m.Reset()
	var buf [256]byte
	b := append(buf[:0], orderID...)
	b = append(b, '.')
	b = amount.Append(b)
	b = append(b, ".USD."...)
	b = append(b, ref...)
	m.Write(b)
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0]))
}

// signers pools keyed HMACs per signing key: hmac.New hashes the key and
// allocates two SHA-256 states, on every confirm otherwise.
var signers sync.Map // signing key -> *sync.Pool of hash.Hash

func macs(key string) *sync.Pool {
	if p, ok := signers.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := signers.LoadOrStore(key, &sync.Pool{New: func() any { return hmac.New(sha256.New, []byte(key)) }})
	return p.(*sync.Pool)
}

// ConfirmFields is a checked confirm body.
type ConfirmFields struct {
	OrderID   string
	Amount    money.Cents
	Reference string // partnerReference
}

// DecodeConfirm reads and checks a confirm body: INVALID_REQUEST for a
// missing or malformed field (nothing is charged on the service's side).
// The amount must be a JSON number with at most two decimals.
func DecodeConfirm(ctx *fasthttp.RequestCtx) (ConfirmFields, *apierr.Error) {
	var body confirmBody
	if e := httpx.Decode(ctx, &body); e != nil {
		return ConfirmFields{}, e
	}
	if body.OrderID == nil || *body.OrderID == "" || len(*body.OrderID) > keys.MaxOrderID {
		return ConfirmFields{}, apierr.Invalid("orderId is required")
	}
	if body.Amount == nil {
		return ConfirmFields{}, apierr.Invalid("amount is required")
	}
	amount, e := httpx.Amount("amount", *body.Amount)
	if e != nil {
		return ConfirmFields{}, e
	}
	if body.PartnerReference == nil || *body.PartnerReference == "" {
		return ConfirmFields{}, apierr.Invalid("partnerReference is required")
	}
	ref := *body.PartnerReference
	// The reference is stored with the paid order: control characters (a
	// NUL above all) would make Postgres refuse the row after the sale.
	if utf8.RuneCountInString(ref) > 200 || !utf8.ValidString(ref) || checkout.HasControl(ref) {
		return ConfirmFields{}, apierr.Invalid("partnerReference must be at most 200 printable characters")
	}
	return ConfirmFields{OrderID: *body.OrderID, Amount: amount, Reference: ref}, nil
}

// VerifySignature checks the x-service-signature of a confirm against the
// channel's signing key: SIGNING_KEY_NOT_CONFIGURED without a key,
// INVALID_SIGNATURE on a mismatch.
func VerifySignature(ctx *fasthttp.RequestCtx, signingKey string, f ConfirmFields) *apierr.Error {
	if signingKey == "" {
		return errNoSigningKey
	}
	want := Signature(signingKey, f.OrderID, f.Amount, f.Reference)
	if !hmac.Equal(ctx.Request.Header.Peek("x-service-signature"), []byte(want)) {
		return errBadSignature
	}
	return nil
}

// confirm is POST /v1/channel/orders/confirm.
func (a *API) confirm(ctx *fasthttp.RequestCtx, c *caller) {
	f, e := DecodeConfirm(ctx)
	if e == nil {
		e = VerifySignature(ctx, c.Channel.SigningKey, f)
	}
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if c.Channel.Settlement != catalog.SettlementPartnerRemit {
		httpx.Fail(ctx, errNotRemit)
		return
	}
	req := orders.ConfirmRequest{ChannelID: c.Channel.ID, OrderID: f.OrderID, Amount: f.Amount, Reference: f.Reference}
	if ev, ok := keys.OrderEvent(req.OrderID); ok {
		if e := c.snap.Events[ev]; e != nil && e.Status == catalog.StatusCancelled {
			req.EventCancelled = true
		}
	}
	res, err := a.Orders.ConfirmOrder(c.ctx, req)
	if err != nil {
		a.failConfirm(ctx, err, "order", f.OrderID)
		return
	}
	if !res.Duplicate {
		a.Metrics.PaidOrder()
	}
	httpx.OK(ctx, res)
}

var errAccrualRetry = apierr.Of("ACCRUAL_FAILED_RETRY", "temporary failure; retry the confirm (it is idempotent)")

// failConfirm answers a confirm that failed with err: a refusal as it is;
// Redis trouble, or sales stopped while Redis is restored (any 503), as
// ACCRUAL_FAILED_RETRY, confirm's own code: nothing was claimed or
// everything was, and confirm is idempotent, so a retry is safe. An error
// that is no answer of ticketd's is logged with logArgs.
func (a *API) failConfirm(ctx *fasthttp.RequestCtx, err error, logArgs ...any) {
	var ae *apierr.Error
	if errors.As(err, &ae) && ae.Status != fasthttp.StatusServiceUnavailable {
		httpx.Fail(ctx, ae)
		return
	}
	if ae == nil {
		a.Logger.Error("confirm failed", append(logArgs, "err", err)...)
	}
	httpx.Fail(ctx, errAccrualRetry)
}

type statusBody struct {
	OrderID *string `json:"orderId"`
}

// status is POST /v1/channel/orders/status: the authoritative state.
func (a *API) status(ctx *fasthttp.RequestCtx, c *caller) {
	var body statusBody
	if e := httpx.Decode(ctx, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if body.OrderID == nil || *body.OrderID == "" {
		httpx.Fail(ctx, apierr.Invalid("orderId is required"))
		return
	}
	st, lost, found, err := a.Orders.Lookup(c.ctx, *body.OrderID, c.Channel.ID)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	if lost {
		// Its amount is not known any more.
		httpx.OK(ctx, map[string]any{"orderId": st.OrderID, "status": st.Status, "currency": "USD"})
		return
	}
	// A session sees only the orders it reserved; a key, its channel's.
	if !found || st.ChannelID != c.Channel.ID || (c.Session != nil && st.Caller != c.id()) {
		httpx.Fail(ctx, orders.ErrNotFound)
		return
	}
	httpx.OK(ctx, map[string]any{"orderId": st.OrderID, "status": st.Status, "amount": st.Amount, "currency": "USD"})
}
