package storefront

import (
	"bytes"
	"context"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/seating"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/room"
)

// The waiting room's routes (inventory/room): join, status and leave,
// under the storefront's gate like every storefront call. A place's
// status and leave take its poll token as a bearer token; the pass a
// status gives travels as the x-queue-pass header of register-guest.

// passHeader carries the waiting room's pass.
const passHeader = "x-queue-pass"

var (
	errNoRoom = apierr.Of("NO_WAITING_ROOM", "this event has no waiting room: buy without joining one")
	errNoPoll = apierr.Of("MISSING_CREDENTIALS",
		"send the pollToken the join answered as Authorization: Bearer <pollToken>")
	errBadPoll = apierr.Of("INVALID_CREDENTIALS", "the bearer token is not a pollToken of this event's waiting room")
	errWait    = apierr.Invalid("wait must be a whole number of seconds from 0 to %d", int(room.MaxWait/time.Second))
	errKnown   = apierr.Invalid("known must be the state the last status answered: %s or %s",
		strings.Join(room.States[:len(room.States)-1], ", "), room.States[len(room.States)-1])
)

// joinBody is POST /v1/storefront/queue/{eventId}/join.
type joinBody struct {
	Email    *string `json:"email"`
	Quantity *int64  `json:"quantity"`
	// ShowingID is the showing whose line to join: required on a
	// multi-showing event (a line per showing), absent on another.
	ShowingID string `json:"showingId"`
	// Device is the buyer's device id, made once and kept by the page
	// (localStorage): a second join from it answers the same place.
	Device string `json:"device"`
	// Work is the solved challenge of a room with proof of work.
	Work *workBody `json:"work"`
}

// workBody is a join's proof of work: a challenge from
// .../challenge and the nonce that solves it.
type workBody struct {
	Challenge string `json:"challenge"`
	Nonce     string `json:"nonce"`
}

// challengeBody is POST /v1/storefront/queue/{eventId}/challenge.
type challengeBody struct {
	Email *string `json:"email"`
}

// challengeView is a challenge to solve before joining: a nonce such that
// SHA-256(challenge ":" nonce) starts with bits zero bits.
type challengeView struct {
	Required  bool   `json:"required"`
	Challenge string `json:"challenge,omitempty"`
	Bits      int    `json:"bits,omitempty"`
	ExpiresAt string `json:"expiresAt,omitempty"`
}

// placeView is a place as join and status answer it.
type placeView struct {
	QueueID   string `json:"queueId,omitempty"`
	PollToken string `json:"pollToken,omitempty"`
	// ShowingID is the showing whose line the place is in, on a
	// multi-showing event.
	ShowingID string `json:"showingId,omitempty"`
	State     string `json:"state"`
	Quantity  int64  `json:"quantity"`
	// Position is 1 at the head of the line; Ahead the places before.
	Position int64 `json:"position"`
	Ahead    int64 `json:"ahead"`
	// ETASeconds is the estimated wait, when known.
	ETASeconds *int64 `json:"etaSeconds,omitempty"`
	// Odds are the chances, in percent, that tickets are left at the
	// place's turn.
	Odds          int64     `json:"odds"`
	Pass          string    `json:"pass,omitempty"`
	PassExpiresAt string    `json:"passExpiresAt,omitempty"`
	PassUsed      bool      `json:"passUsed,omitempty"`
	SeatsHeld     bool      `json:"seatsHeld,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	Fairness      *fairness `json:"fairness,omitempty"`
}

// fairness lets anyone check a fair room's order: the commitment (the
// SHA-256 of the shuffle key) is shown from the start, the key from T0.
type fairness struct {
	Mode         string `json:"mode"`
	Commitment   string `json:"commitment,omitempty"`
	ShuffleKey   string `json:"shuffleKey,omitempty"`
	SalesStartAt string `json:"salesStartAt"`
}

// placeView is st, a place of line (ev's room, or one of its showings').
func (a *API) placeView(line *catalog.Room, st room.Status) placeView {
	v := placeView{ShowingID: line.Showing, State: st.State, Quantity: st.Quantity, Position: st.Position, Ahead: st.Ahead, Odds: st.Odds,
		Pass: st.Pass, PassUsed: st.PassUsed, SeatsHeld: st.SeatsHeld, Reason: st.Reason}
	if st.ETA != nil {
		s := int64((*st.ETA + time.Second - 1) / time.Second)
		v.ETASeconds = &s
	}
	if !st.PassExpiresAt.IsZero() && st.Pass != "" {
		v.PassExpiresAt = st.PassExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	f := &fairness{Mode: line.Mode(), SalesStartAt: line.SalesStartAt.UTC().Format(time.RFC3339)}
	if line.Fair {
		f.Commitment = a.Room.Commitment(line.ID)
		if !time.Now().Before(line.SalesStartAt) {
			f.ShuffleKey = hex.EncodeToString(a.Room.ShuffleKey(line.ID))
		}
	}
	v.Fairness = f
	return v
}

// roomEvent is the path's event, which must have a waiting room.
func (a *API) roomEvent(ctx *fasthttp.RequestCtx, r *request) (*catalog.CompiledEvent, *apierr.Error) {
	ref, _ := ctx.UserValue("eventId").(string)
	ev, e := a.event(r, ref)
	if e != nil {
		return nil, e
	}
	if ev.Room == nil || a.Room == nil {
		return nil, errNoRoom
	}
	return ev, nil
}

// roomEmail is the path's room event, the request's body decoded into b
// and the e-mail it names (email's field of b), checked; false when it
// answered a refusal.
func (a *API) roomEmail(ctx *fasthttp.RequestCtx, r *request, b any, email **string) (*catalog.CompiledEvent, string, bool) {
	ev, e := a.roomEvent(ctx, r)
	var addr string
	if e == nil {
		if e = httpx.Decode(ctx, b); e == nil {
			addr, e = checkout.ValidateEmail("email", *email)
		}
	}
	if e != nil {
		httpx.Fail(ctx, e)
		return nil, "", false
	}
	return ev, addr, true
}

// queueJoin is POST /v1/storefront/queue/{eventId}/join.
func (a *API) queueJoin(ctx *fasthttp.RequestCtx, r *request) {
	// The write limit in the node's memory (API.joins): a join's place is
	// its identity's whatever it costs, and a Redis call for the limit
	// would cost the rush as much as the join (room.Service batches those).
	if e := guard.DeferredOf(r.ctx).Local(ctx, &a.joins); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	var b joinBody
	ev, email, ok := a.roomEmail(ctx, r, &b, &b.Email)
	if !ok {
		return
	}
	line, e := room.LineOf(ev, b.ShowingID)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	qty := int64(1)
	if b.Quantity != nil {
		qty = *b.Quantity
	}
	req := room.JoinRequest{EventID: ev.ID, ShowingID: line.Showing, Email: email, Device: b.Device, Quantity: qty}
	if b.Work != nil {
		req.Work = room.Work{Challenge: b.Work.Challenge, Nonce: b.Work.Nonce}
	}
	j, err := a.Room.Join(r.ctx, line, req)
	if err != nil {
		httpx.Fail(ctx, a.unavailable("queue join", err))
		return
	}
	v := a.placeView(line, j.Status)
	v.QueueID, v.PollToken = j.QueueID, j.PollToken
	httpx.OK(ctx, v)
}

// queueChallenge is POST /v1/storefront/queue/{eventId}/challenge: the
// proof of work a join by the e-mail must carry (required: false when the
// room asks for none).
func (a *API) queueChallenge(ctx *fasthttp.RequestCtx, r *request) {
	var b challengeBody
	ev, email, ok := a.roomEmail(ctx, r, &b, &b.Email)
	if !ok {
		return
	}
	c, ok := a.Room.Challenge(ev.Room, ev.ID, email)
	if !ok {
		httpx.OK(ctx, challengeView{})
		return
	}
	httpx.OK(ctx, challengeView{Required: true, Challenge: c.Challenge, Bits: c.Bits, ExpiresAt: c.ExpiresAt.UTC().Format(time.RFC3339Nano)})
}

// place is the place the request's bearer poll token names.
func (a *API) place(ctx *fasthttp.RequestCtx, ev *catalog.CompiledEvent) (room.Place, *apierr.Error) {
	auth := ctx.Request.Header.Peek("Authorization")
	tok, ok := bytes.CutPrefix(auth, []byte("Bearer "))
	if !ok || len(tok) == 0 {
		return room.Place{}, errNoPoll
	}
	p, ok := a.Room.PlaceOf(ev.ID, string(tok))
	if !ok {
		return room.Place{}, errBadPoll
	}
	return p, nil
}

// roomPlace is the line (the path's room event's room, or its showing's)
// and the place the request's poll token names; false when it answered a
// refusal.
func (a *API) roomPlace(ctx *fasthttp.RequestCtx, r *request) (*catalog.Room, room.Place, bool) {
	ev, e := a.roomEvent(ctx, r)
	if e == nil {
		var p room.Place
		if p, e = a.place(ctx, ev); e == nil {
			// a token of a showing the catalog no longer has names no line
			if line, ok := ev.Room.Line(p.Showing); ok {
				return line, p, true
			}
			e = errBadPoll
		}
	}
	httpx.Fail(ctx, e)
	return nil, room.Place{}, false
}

// queueStatus is GET /v1/storefront/queue/{eventId}/status; ?wait=N
// makes it a long-poll (room.Service.Wait): a waiting or sold-out place's
// answer is held up to N seconds until what it says changes, or, with
// ?known=<the state last answered>, answered at once when the place's
// state is another.
func (a *API) queueStatus(ctx *fasthttp.RequestCtx, r *request) {
	line, p, ok := a.roomPlace(ctx, r)
	if !ok {
		return
	}
	var wait time.Duration
	if w := ctx.QueryArgs().Peek("wait"); len(w) > 0 {
		n, err := strconv.Atoi(string(w))
		if err != nil || n < 0 || time.Duration(n)*time.Second > room.MaxWait {
			httpx.Fail(ctx, errWait)
			return
		}
		wait = time.Duration(n) * time.Second
	}
	// known: the state the client last heard (room.Service.Wait)
	known := string(ctx.QueryArgs().Peek("known"))
	if known != "" && !slices.Contains(room.States, known) {
		httpx.Fail(ctx, errKnown)
		return
	}
	rctx := r.ctx
	if wait > 0 {
		// The request's deadline bounds its Redis work, not the wait:
		// this one's runs the wait longer (keeping the context's values).
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(context.WithoutCancel(r.ctx), wait+guard.TimeoutOr(a.Timeout))
		defer cancel()
	}
	st, err := a.Room.Wait(rctx, line, line.ID, p, wait, known, a.pollCount(ctx, r))
	if err != nil {
		httpx.Fail(ctx, a.unavailable("queue status", err))
		return
	}
	v := a.placeView(line, st)
	v.QueueID = p.QueueID
	httpx.OK(ctx, v)
}

// pollCount counts a status request (room.Count) in its client IP's read
// limit, once in each place it is answered from: in the node's memory
// (API.polls) when its first poll is, a waiting place, so that it costs
// Redis nothing; in Redis (the route's deferred limit, taken alone: the
// status script writes) before its first poll that reads Redis: a place
// that left the line (admitted, gone), or any while the node's frontier is
// stale.
func (a *API) pollCount(ctx *fasthttp.RequestCtx, r *request) room.Count {
	d := guard.DeferredOf(r.ctx)
	first := true
	return func(rctx context.Context, memory bool) error {
		if memory {
			if !first {
				return nil // a long-poll's wake-up: the request is counted
			}
			first = false
			if e := d.Local(ctx, &a.polls); e != nil {
				return e
			}
			return nil
		}
		first = false
		e, err := d.Take(ctx, rctx) // once: a settled limit asks nothing
		if err != nil {
			return err
		}
		if e != nil {
			return e
		}
		return nil
	}
}

// queueLeave is POST /v1/storefront/queue/{eventId}/leave.
func (a *API) queueLeave(ctx *fasthttp.RequestCtx, r *request) {
	line, p, ok := a.roomPlace(ctx, r)
	if !ok {
		return
	}
	if !p.Maker {
		httpx.Fail(ctx, room.ErrNotMaker)
		return
	}
	// a place whose pass bought (or holds seats) stays as it is, and says so
	state, err := a.Room.Leave(r.ctx, line.ID, p.QueueID)
	if err != nil {
		httpx.Fail(ctx, a.unavailable("queue leave", err))
		return
	}
	httpx.OK(ctx, map[string]any{"queueId": p.QueueID, "state": state})
}

// roomPass checks the x-queue-pass of a registration of ev's showing
// showingID ("" none) by email: the pass it burns, which the showing's
// room gave on a multi-showing event, nil for an event without a room. On
// a seated event the hold token carries the pass (made with it:
// SeatPass): inHold, and no header is read. Whether the pass is live,
// unused and the buyer's is Redis' to say (reg_register): a used pass is
// told so however late it comes back.
func (a *API) roomPass(ctx *fasthttp.RequestCtx, ev *catalog.CompiledEvent, showingID, email string) (p *room.Pass, inHold bool, e *apierr.Error) {
	if ev.Room == nil {
		return nil, false, nil
	}
	if a.Room == nil {
		return nil, false, errRoomDown
	}
	if ev.Seated() {
		return nil, true, nil
	}
	raw := ctx.Request.Header.Peek(passHeader)
	if len(raw) == 0 {
		return nil, false, room.ErrRequired
	}
	line, e := room.LineOf(ev, showingID)
	if e != nil {
		return nil, false, e
	}
	pass, err := a.Room.CheckPass(line.ID, string(raw), email)
	if err != nil {
		return nil, false, a.unavailable("queue pass", err)
	}
	return &pass, false, nil
}

// errRoomDown answers an event with a waiting room on a node that runs none.
var errRoomDown = apierr.Unavailable("this event's waiting room is not running on this server")

// SeatPass reads the x-queue-pass of a seated event's hold-token or
// best-available into req, for every surface that sells the storefront's
// seats (the storefront's API, the seat picker): the pass, checked as this
// room's (rs nil: the node runs no room, 503), and the hold token it
// names. Other endpoints, an event without a room and a request without
// the header leave req alone (the seat handler answers QUEUE_REQUIRED
// where a pass is needed).
func SeatPass(rs *room.Service, ctx *fasthttp.RequestCtx, ep seating.Endpoint, ev *catalog.CompiledEvent, req *seating.Request) *apierr.Error {
	if ev.Room == nil || !ev.Seated() || !ep.MakesToken() {
		return nil // (a GA event's seat calls answer NOT_SEATED)
	}
	raw := ctx.Request.Header.Peek(passHeader)
	if len(raw) == 0 {
		return nil
	}
	if rs == nil {
		return errRoomDown
	}
	p, err := rs.CheckPass(ev.ID, string(raw), "")
	if err != nil {
		return room.ErrPassBad // CheckPass's one refusal
	}
	req.Pass, req.PassToken = &p, rs.PassToken(ev.ID, p)
	return nil
}
