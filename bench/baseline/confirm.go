package main

import (
	"errors"

	"github.com/valyala/fasthttp"

	ticketd "github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
)

var errRetry = apierr.Of("ACCRUAL_FAILED_RETRY", "temporary failure; retry the confirm (it is idempotent)")

// confirm is POST /v1/channel/orders/confirm: the body and signature are
// checked by ticketd's own code (handlers/channel), then the order's
// inventory is claimed in one transaction (claim.go).
func (a *app) confirm(ctx *fasthttp.RequestCtx, _ *snapshot, ch *channel) {
	f, e := ticketd.DecodeConfirm(ctx)
	if e == nil {
		e = ticketd.VerifySignature(ctx, ch.signingKey, f)
	}
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	rctx, cancel := reqCtx()
	defer cancel()
	res, err := a.claim(rctx, ch.id, f.OrderID, f.Amount, f.Reference)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			httpx.Fail(ctx, ae)
			return
		}
		// The transaction rolled back whole: a retry is safe, as with ticketd.
		a.log.Error("confirm failed", "order", f.OrderID, "err", err)
		httpx.Fail(ctx, errRetry)
		return
	}
	httpx.OK(ctx, res)
}
