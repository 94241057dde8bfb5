package channel

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/seats"
)

// The seating endpoints of the partner surface (decisions.md §4). Inside a
// buyer session the session owns one hold token per event; a keyed caller
// takes tokens from hold-token and passes them along.

type holdBody struct {
	HoldToken  string   `json:"holdToken"`
	SeatLabels []string `json:"seatLabels"`
}

func (a *API) seatedEvent(ctx *fasthttp.RequestCtx, c *caller) (*catalog.CompiledEvent, *apierr.Error) {
	ev, e := a.saleable(ctx, c)
	if e != nil {
		return nil, e
	}
	if !ev.Seated() {
		return nil, apierr.Of("NOT_SEATED", "this event has no seat map")
	}
	return ev, nil
}

// token picks the hold token of a request: the session's own, or the one
// the keyed caller names.
func (a *API) token(c *caller, eventID, named string) (string, *apierr.Error) {
	if c.Session != nil {
		own := a.Sessions.HoldToken(c.Session, eventID)
		if named != "" && named != own {
			return "", apierr.Of("INVALID_HOLD_TOKEN", "this hold token does not belong to the session")
		}
		return own, nil
	}
	if named == "" {
		return "", apierr.Invalid("holdToken is required")
	}
	if !seats.ValidToken(named) {
		return "", apierr.Of("INVALID_HOLD_TOKEN", "holdToken is not a hold token")
	}
	return named, nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (a *API) seatConfig(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.seatedEvent(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	httpx.OK(ctx, a.Seats.Config(ev))
}

func (a *API) seatAvailability(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.seatedEvent(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	av, err := a.Seats.Availability(c.ctx, ev)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, av)
}

func (a *API) holdToken(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.seatedEvent(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	tok := seats.NewToken()
	if c.Session != nil {
		tok = a.Sessions.HoldToken(c.Session, ev.ID)
	}
	exp, err := a.Seats.CreateToken(c.ctx, ev.ID, tok)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"holdToken": tok, "expiresAt": rfc3339(exp)})
}

// holdRequest reads what hold and release share: the seated event, the
// body and the caller's hold token.
func (a *API) holdRequest(ctx *fasthttp.RequestCtx, c *caller) (*catalog.CompiledEvent, holdBody, string, *apierr.Error) {
	var body holdBody
	ev, e := a.seatedEvent(ctx, c)
	if e == nil {
		e = httpx.Decode(ctx, &body)
	}
	if e != nil {
		return nil, body, "", e
	}
	tok, e := a.token(c, ev.ID, body.HoldToken)
	return ev, body, tok, e
}

func (a *API) hold(ctx *fasthttp.RequestCtx, c *caller) {
	ev, body, tok, e := a.holdRequest(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if c.Session != nil {
		// A session's token is created on first use (and anew after it
		// timed out): the session is the owner, not the token.
		if _, err := a.Seats.CreateToken(c.ctx, ev.ID, tok); err != nil {
			httpx.Error(ctx, err)
			return
		}
	}
	res, err := a.Seats.Hold(c.ctx, ev, tok, body.SeatLabels)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"holdToken": res.HoldToken, "seatLabels": res.SeatLabels,
		"subtotal": res.Subtotal, "expiresAt": rfc3339(res.ExpiresAt)})
}

func (a *API) extend(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.seatedEvent(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	named, _ := ctx.UserValue("token").(string)
	tok, e := a.token(c, ev.ID, named)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	exp, err := a.Seats.Extend(c.ctx, ev.ID, tok)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"expiresAt": rfc3339(exp)})
}

func (a *API) release(ctx *fasthttp.RequestCtx, c *caller) {
	ev, body, tok, e := a.holdRequest(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	released, err := a.Seats.Release(c.ctx, ev.ID, tok, body.SeatLabels)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	if released == nil {
		released = []string{}
	}
	httpx.OK(ctx, map[string]any{"holdToken": tok, "released": released})
}
