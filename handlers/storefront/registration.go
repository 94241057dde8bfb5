package storefront

import (
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// errRegNotFound is the one answer for an unknown registration and
// another tenant's: the same bytes, so existence is not disclosed.
var errRegNotFound = apierr.Of("NOT_FOUND", "no such registration for this key")

// lookup reads a registration of the key's tenant. Anything else, a
// malformed id included, is NOT_FOUND.
func (a *API) lookup(r *request, id string) (registrations.Registration, *apierr.Error) {
	if _, ok := keys.OrderEvent(id); !ok {
		return registrations.Registration{}, errRegNotFound
	}
	// The route's rate limit, when deferred, rides in this read (its
	// refusal is the answer, whatever became of the read).
	reg, found, err := a.Registrations.GetAlong(r.ctx, id, guard.DeferredOf(r.ctx).Ride(r.fctx, r.ctx))
	if err != nil {
		return reg, a.unavailable("registration", err)
	}
	if !found || reg.TenantID != r.tenantID {
		return registrations.Registration{}, errRegNotFound
	}
	return reg, nil
}

// registration is GET /v1/storefront/registration/:registrationId, what
// the success page polls. It is answered whatever became of the event
// since: a buyer who paid sees the status even if the host has switched
// the event off.
func (a *API) registration(ctx *fasthttp.RequestCtx, r *request) {
	id, _ := ctx.UserValue("registrationId").(string)
	reg, e := a.lookup(r, id)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	httpx.OK(ctx, a.view(reg))
}
