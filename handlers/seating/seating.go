// Package seating serves the seat endpoints of decisions.md §4 (config,
// availability, hold-token, hold, extend, release, the hold read) and §7
// (best-available) once, for every surface that sells seats. A surface mounts them under its
// own prefix with its Gate: the gate authenticates the caller, applies its
// limits, resolves the request's event and says whose hold token the caller
// uses (Request).
//
//	seating.Mount(r.Group("/v1/storefront/seating/events/{id}"), engine, gate)
package seating

import (
	"context"
	"crypto/subtle"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/roompass"
	"github.com/ticketd/ticketd/inventory/seats"
)

// Endpoint names a seat endpoint, so a gate can pick its scope and rate
// class per endpoint.
type Endpoint int

// The seat endpoints.
const (
	Config Endpoint = iota
	Availability
	// HoldRead reads what a hold token holds (a page that reloads picks
	// its hold up again): a read, so it sits before HoldToken.
	HoldRead
	HoldToken
	Hold
	Extend
	Release
	// BestAvailable picks and holds adjacent seats (decisions.md §7): a
	// write, with hold's scope and rate class.
	BestAvailable
)

// Writes reports whether the endpoint changes holds (the others read).
func (e Endpoint) Writes() bool { return e >= HoldToken }

// MakesToken reports whether the endpoint may make a hold token
// (hold-token; best-available without one): on an event with a waiting
// room, the one that burns the buyer's pass (Request.Pass).
func (e Endpoint) MakesToken() bool { return e == HoldToken || e == BestAvailable }

// Request is what a surface's gate resolved for one seat request.
type Request struct {
	// Ctx bounds the request's Redis work.
	Ctx context.Context
	// Event is the path's event, found for the caller and on sale; the
	// seating handlers refuse it with NOT_SEATED when it has no seat map.
	Event *catalog.CompiledEvent
	// OwnToken is the token policy. Non-empty, it is the one hold token
	// the caller owns for Event (a partner buyer session's derived token):
	// hold-token hands it out, hold and best-available create it on first
	// use, and a request naming another token is refused. Empty, the
	// caller names its own token, taken from hold-token or made by
	// best-available (a keyed partner, the storefront, the picker).
	OwnToken string
	// Read, when set, is how availability is read: the seat picker's
	// short-lived cache shared by its polling pages. Nil reads Redis
	// afresh (the storefront, the partner API).
	Read func(ctx context.Context, ev *catalog.CompiledEvent) (seats.Availability, error)
	// Client is who the hold tokens this request creates count for
	// (holds.Client: the storefront's and the picker's client IP, up to
	// TICKETD_HOLDS_PER_IP); the zero value counts none (the partner
	// surface, bounded by its keys' rate limits).
	Client holds.Client
	// Pass is the waiting room's pass the request carried (the storefront's
	// x-queue-pass, its signature checked), on an event with a room; nil
	// when none came or the surface takes none. On such an event
	// hold-token, and best-available without a token, need it: the token
	// they make burns it (seats.Engine.CreatePassToken) and is PassToken,
	// the pass's own (room.Service.PassToken); other tokens hold nothing
	// there (QUEUE_REQUIRED).
	Pass      *roompass.Pass
	PassToken string
}

// Handler serves one seat request the gate let through.
type Handler func(ctx *fasthttp.RequestCtx, r Request)

// Gate wraps a seat handler in a surface's checks: it answers a refused
// request itself and calls h only with a resolved Request.
type Gate func(ep Endpoint, h Handler) fasthttp.RequestHandler

// Mount registers the seat endpoints on g, a group whose path ends in
// "/events/{id}" (the {id} the gate resolves).
func Mount(g *router.Group, eng *seats.Engine, gate Gate) {
	s := &server{seats: eng}
	g.GET("/config", gate(Config, s.config))
	g.GET("/availability", gate(Availability, s.availability))
	g.GET("/hold/{token}", gate(HoldRead, s.holdRead))
	g.POST("/hold-token", gate(HoldToken, s.holdToken))
	g.POST("/hold", gate(Hold, s.hold))
	g.POST("/hold/{token}/extend", gate(Extend, s.extend))
	g.POST("/release", gate(Release, s.release))
	g.POST("/best-available", gate(BestAvailable, s.bestAvailable))
}

type server struct{ seats *seats.Engine }

type holdBody struct {
	HoldToken  string   `json:"holdToken"`
	SeatLabels []string `json:"seatLabels"`
}

func seated(r Request) *apierr.Error {
	if !r.Event.Seated() {
		return seats.ErrNotSeated
	}
	return nil
}

// token picks the hold token of a request from the one the caller named
// ("" when none) under r's token policy.
func token(r Request, named string) (string, *apierr.Error) {
	if r.OwnToken != "" {
		if named != "" && !sameToken(named, r.OwnToken) {
			return "", seats.ErrInvalidToken
		}
		return r.OwnToken, nil
	}
	if named == "" {
		return "", apierr.Invalid("holdToken is required")
	}
	if !seats.ValidToken(named) {
		return "", seats.ErrInvalidToken
	}
	return named, nil
}

// sameToken compares a named hold token with the caller's own in constant
// time: a hold token is a bearer secret, and every secret is compared so
// (cmd/ticketd's TestSecurityTimingSafeComparisons).
func sameToken(named, own string) bool {
	return subtle.ConstantTimeCompare([]byte(named), []byte(own)) == 1
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *server) config(ctx *fasthttp.RequestCtx, r Request) {
	if e := seated(r); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	httpx.OK(ctx, s.seats.Config(r.Event))
}

func (s *server) availability(ctx *fasthttp.RequestCtx, r Request) {
	if e := seated(r); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	read := s.seats.Availability
	if r.Read != nil {
		read = r.Read
	}
	av, err := read(r.Ctx, r.Event)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, av)
}

func (s *server) holdToken(ctx *fasthttp.RequestCtx, r Request) {
	if e := seated(r); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if r.Event.Room != nil {
		s.passToken(ctx, r)
		return
	}
	tok := r.OwnToken
	if tok == "" {
		tok = seats.NewToken()
	}
	exp, err := s.seats.CreateTokenFor(r.Ctx, r.Event.ID, tok, r.Client)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"holdToken": tok, "expiresAt": rfc3339(exp)})
}

// passToken answers hold-token on an event with a waiting room: the token
// the request's pass makes (the same one again for a retry with it).
func (s *server) passToken(ctx *fasthttp.RequestCtx, r Request) {
	if r.Pass == nil {
		httpx.Fail(ctx, roompass.ErrRequired)
		return
	}
	exp, err := s.seats.CreatePassToken(r.Ctx, r.Event.ID, r.PassToken, r.Client, r.Pass)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"holdToken": r.PassToken, "expiresAt": rfc3339(exp)})
}

// seatedBody refuses an event without a seat map, else decodes the JSON
// body into v: the checks every seat write starts with.
func seatedBody(ctx *fasthttp.RequestCtx, r Request, v any) *apierr.Error {
	if e := seated(r); e != nil {
		return e
	}
	return httpx.Decode(ctx, v)
}

// holdRequest reads what hold and release share: the body and the
// caller's hold token.
func holdRequest(ctx *fasthttp.RequestCtx, r Request) (holdBody, string, *apierr.Error) {
	var body holdBody
	if e := seatedBody(ctx, r, &body); e != nil {
		return body, "", e
	}
	tok, e := token(r, body.HoldToken)
	return body, tok, e
}

func (s *server) hold(ctx *fasthttp.RequestCtx, r Request) {
	body, tok, e := holdRequest(ctx, r)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if r.OwnToken != "" {
		// An owned token is created on first use (and anew after it
		// timed out): the owner is the caller, not the token.
		if _, err := s.seats.CreateTokenFor(r.Ctx, r.Event.ID, tok, r.Client); err != nil {
			httpx.Error(ctx, err)
			return
		}
	}
	res, err := s.seats.Hold(r.Ctx, r.Event, tok, body.SeatLabels)
	held(ctx, res, err)
}

// held answers hold and best-available alike: what the token holds now.
func held(ctx *fasthttp.RequestCtx, res seats.HoldResult, err error) {
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"holdToken": res.HoldToken, "seatLabels": res.SeatLabels,
		"subtotal": res.Subtotal, "expiresAt": rfc3339(res.ExpiresAt)})
}

// pathToken reads what extend and the hold read share: the hold token the
// path names, under r's token policy.
func pathToken(ctx *fasthttp.RequestCtx, r Request) (string, *apierr.Error) {
	if e := seated(r); e != nil {
		return "", e
	}
	named, _ := ctx.UserValue("token").(string)
	return token(r, named)
}

func (s *server) extend(ctx *fasthttp.RequestCtx, r Request) {
	tok, e := pathToken(ctx, r)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	exp, err := s.seats.ExtendFor(r.Ctx, r.Event.ID, tok, r.Client)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, map[string]any{"expiresAt": rfc3339(exp)})
}

// holdRead answers what the named token holds now, as hold does, without
// changing it; a gone token is HOLD_EXPIRED, as for extend.
func (s *server) holdRead(ctx *fasthttp.RequestCtx, r Request) {
	tok, e := pathToken(ctx, r)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	res, err := s.seats.Held(r.Ctx, r.Event, tok)
	held(ctx, res, err)
}

func (s *server) release(ctx *fasthttp.RequestCtx, r Request) {
	body, tok, e := holdRequest(ctx, r)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	released, err := s.seats.Release(r.Ctx, r.Event, tok, body.SeatLabels)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	if released == nil {
		released = []string{}
	}
	httpx.OK(ctx, map[string]any{"holdToken": tok, "released": released})
}

type bestBody struct {
	Quantity  int    `json:"quantity"`
	Category  string `json:"category"`
	HoldToken string `json:"holdToken"`
}

// bestAvailable holds the best block of adjacent free seats. Its token is
// the caller's own (created on first use), the one named (which must
// exist, as for hold), or else a new one, as hold-token would give.
func (s *server) bestAvailable(ctx *fasthttp.RequestCtx, r Request) {
	var body bestBody
	if e := seatedBody(ctx, r, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	req := seats.BestRequest{Quantity: body.Quantity, Category: body.Category, Token: body.HoldToken, Client: r.Client}
	switch {
	case r.Event.Room != nil && body.HoldToken == "":
		// the token is the pass's (a named one must be one a pass made:
		// the hold refuses another)
		if r.Pass == nil {
			httpx.Fail(ctx, roompass.ErrRequired)
			return
		}
		req.Token, req.Create, req.Pass = r.PassToken, true, r.Pass
	case r.OwnToken != "":
		if body.HoldToken != "" && !sameToken(body.HoldToken, r.OwnToken) {
			httpx.Fail(ctx, seats.ErrInvalidToken)
			return
		}
		req.Token, req.Create = r.OwnToken, true
	case body.HoldToken == "":
		req.Token, req.Create = seats.NewToken(), true
	}
	// The route's rate limit, when deferred, rides in the seats' read.
	req.Along = guard.DeferredOf(r.Ctx).Ride(ctx, r.Ctx)
	res, err := s.seats.BestAvailable(r.Ctx, r.Event, req)
	held(ctx, res, err)
}
