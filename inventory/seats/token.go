package seats

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/roompass"
)

var (
	tokenScript = eval.Load("seat_token")
	dropScript  = eval.Load("seat_token_drop")
)

// CreateToken creates the hold token's hash with the TTL, or, when it
// already exists, leaves it alone and returns its current expiry: a buyer
// session asks for its token again and must keep its seats. The token
// counts for no client (a partner's).
func (e *Engine) CreateToken(ctx context.Context, eventID, token string) (time.Time, error) {
	return e.CreateTokenFor(ctx, eventID, token, holds.Client{})
}

// CreateTokenFor is CreateToken for a client whose holds are counted
// (holds.Client; the zero value counts none): a new token counts for it
// while it lives, and one beyond the client's limit is refused with
// holds.LimitError. An existing token is answered as CreateToken does.
func (e *Engine) CreateTokenFor(ctx context.Context, eventID, token string, client holds.Client) (time.Time, error) {
	exp, _, err := e.createToken(ctx, eventID, token, client, nil)
	return exp, err
}

// CreatePassToken is CreateTokenFor on a seated event with a waiting room:
// the token burns pass (its signature checked by the caller), whose units
// it keeps reserved while it lives and holds at most (lua/seat_token.lua).
// token is the pass's own (room.Service.PassToken), so a retry of a call
// whose answer was lost finds it: an existing token is answered as
// CreateToken does. A pass no longer live and unused is refused with
// roompass's error (QUEUE_PASS_USED, QUEUE_PASS_EXPIRED, QUEUE_PASS_INVALID).
func (e *Engine) CreatePassToken(ctx context.Context, eventID, token string, client holds.Client, pass *roompass.Pass) (time.Time, error) {
	exp, _, err := e.createToken(ctx, eventID, token, client, pass)
	return exp, err
}

// createToken is CreateTokenFor; created reports whether this call made
// the token (false: it existed already).
func (e *Engine) createToken(ctx context.Context, eventID, token string, client holds.Client, pass *roompass.Pass) (exp time.Time, created bool, err error) {
	if !ValidToken(token) {
		return time.Time{}, false, ErrInvalidToken
	}
	arr, err := eval.Array(ctx, e.Redis, tokenScript,
		[]string{e.Space.Hold(eventID, token), e.Space.IPRegistrations(eventID), e.Space.IPTokens(eventID, client.Key),
			e.Space.Room(eventID), e.Space.RoomPlaces(eventID), e.Space.RoomPasses(eventID), e.Space.RoomAudit(eventID)},
		[]string{msArg(e.ttl()), token, client.Key, client.LimitArg(), pass.Arg()})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("seats: create token: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("seats: create token: %w", err)
	}
	if code == reply.ClientLimit {
		return time.Time{}, false, holds.LimitError(client.Limit)
	}
	if err := roompass.Refusal(arr); err != nil {
		return time.Time{}, false, err
	}
	ms, err := eval.Int(arr, 1)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("seats: create token: %w", err)
	}
	return msTime(ms), code == reply.OK, nil
}

// dropToken deletes a token best-available made and could hold nothing
// with, so it stops counting for client (lua/seat_token_drop.lua). A token
// that holds a seat is kept. It runs on a context of its own: the
// request's may be what ran out.
func (e *Engine) dropToken(ctx context.Context, eventID, token string, client holds.Client) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, err := eval.Array(dctx, e.Redis, dropScript, []string{e.Space.Hold(eventID, token), e.Space.IPTokens(eventID, client.Key)},
		[]string{token})
	if err != nil {
		return fmt.Errorf("seats: drop token: %w", err)
	}
	return nil
}
