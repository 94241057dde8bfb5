package seats

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/reply"
)

var extendScript = eval.Load("seat_extend")

// Extend is ExtendFor for a caller that counts no client (a partner's).
func (e *Engine) Extend(ctx context.Context, eventID, token string) (time.Time, error) {
	return e.ExtendFor(ctx, eventID, token, holds.Client{})
}

// ExtendFor moves the token's expiry, and that of every seat it holds, to
// now + TTL, but never beyond its creation + MaxTTL, and returns it, in one
// script call (lua/seat_extend.lua reads the token's seats). A token
// counted for client counts until then; one counted for another client
// keeps counting until its old expiry. A token a waiting room's pass made
// keeps its place's units reserved until then. A gone token is
// ErrHoldExpired.
func (e *Engine) ExtendFor(ctx context.Context, eventID, token string, client holds.Client) (time.Time, error) {
	if !ValidToken(token) {
		return time.Time{}, ErrInvalidToken
	}
	arr, err := eval.Array(ctx, e.Redis, extendScript,
		[]string{e.Space.Hold(eventID, token), e.Space.IPTokens(eventID, client.Key), e.Space.SeatHolds(eventID),
			e.Space.RoomPlaces(eventID), e.Space.RoomPasses(eventID)},
		[]string{token, msArg(e.ttl()), msArg(e.maxTTL()), client.Key})
	if err != nil {
		return time.Time{}, fmt.Errorf("seats: extend: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return time.Time{}, fmt.Errorf("seats: extend: %w", err)
	}
	switch code {
	case reply.OK:
		exp, err := eval.Int(arr, 1)
		if err != nil {
			return time.Time{}, fmt.Errorf("seats: extend: %w", err)
		}
		return msTime(exp), nil
	case reply.HoldGone:
		return time.Time{}, ErrHoldExpired
	}
	return time.Time{}, unexpected("extend", code)
}
