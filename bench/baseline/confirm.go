package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"unicode/utf8"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/money"
)

type confirmBody struct {
	OrderID          *string          `json:"orderId"`
	Amount           *json.RawMessage `json:"amount"`
	PartnerReference *string          `json:"partnerReference"`
}

var (
	errNoSigningKey = apierr.New(401, "SIGNING_KEY_NOT_CONFIGURED", "no signing key is configured for this channel; do not retry")
	errRetry        = apierr.New(503, "ACCRUAL_FAILED_RETRY", "temporary failure; retry the confirm (it is idempotent)")
	errBadSignature = apierr.New(401, "INVALID_SIGNATURE",
		"x-service-signature does not match HMAC-SHA256 over orderId.amount.USD.partnerReference (amount with exactly two decimals)")
)

// signature is the lowercase hex HMAC-SHA256, keyed with the channel's
// signing key, over "orderId.amount.USD.partnerReference" with the amount at
// exactly two decimals: ticketd's confirm signature.
func signature(signingKey, orderID string, amount money.Cents, ref string) string {
	m := hmac.New(sha256.New, []byte(signingKey))
	b := make([]byte, 0, len(orderID)+len(ref)+32)
	b = append(b, orderID...)
	b = append(b, '.')
	b = amount.Append(b)
	b = append(b, ".USD."...)
	b = append(b, ref...)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// confirm is POST /v1/channel/orders/confirm: validate and verify the
// signature, then claim the order's inventory in one transaction (claim.go).
func (a *app) confirm(ctx *fasthttp.RequestCtx, _ *snapshot, ch *channel) {
	var body confirmBody
	if e := httpx.Decode(ctx, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if body.OrderID == nil || *body.OrderID == "" || len(*body.OrderID) > 64 {
		httpx.Fail(ctx, apierr.Invalid("orderId is required"))
		return
	}
	if body.Amount == nil {
		httpx.Fail(ctx, apierr.Invalid("amount is required"))
		return
	}
	raw := []byte(*body.Amount)
	if len(raw) == 0 || raw[0] == '"' {
		httpx.Fail(ctx, apierr.Invalid("amount must be a JSON number"))
		return
	}
	amount, err := money.Parse(string(raw))
	if err != nil {
		httpx.Fail(ctx, apierr.Invalid("amount must be a non-negative number with at most two decimals"))
		return
	}
	if body.PartnerReference == nil || *body.PartnerReference == "" {
		httpx.Fail(ctx, apierr.Invalid("partnerReference is required"))
		return
	}
	ref := *body.PartnerReference
	if utf8.RuneCountInString(ref) > 200 || !utf8.ValidString(ref) {
		httpx.Fail(ctx, apierr.Invalid("partnerReference must be at most 200 characters"))
		return
	}
	if ch.signingKey == "" {
		httpx.Fail(ctx, errNoSigningKey)
		return
	}
	want := signature(ch.signingKey, *body.OrderID, amount, ref)
	if !hmac.Equal(ctx.Request.Header.Peek("x-service-signature"), []byte(want)) {
		httpx.Fail(ctx, errBadSignature)
		return
	}
	rctx, cancel := reqCtx()
	defer cancel()
	res, err := a.claim(rctx, ch.id, *body.OrderID, amount, ref)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			httpx.Fail(ctx, ae)
			return
		}
		// The transaction rolled back whole: a retry is safe, as with ticketd.
		a.log.Error("confirm failed", "order", *body.OrderID, "err", err)
		httpx.Fail(ctx, errRetry)
		return
	}
	httpx.OK(ctx, res)
}
