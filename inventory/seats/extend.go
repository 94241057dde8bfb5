package seats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/lua"
)

var extendScript = lua.Load("seat_extend")

// Extend moves the token's expiry, and that of every seat it holds, to
// now + TTL, but never beyond its creation + MaxTTL, and returns it; a token
// counted for a client counts until then. A gone token is ErrHoldExpired.
func (e *Engine) Extend(ctx context.Context, eventID, token string) (time.Time, error) {
	if !ValidToken(token) {
		return time.Time{}, ErrInvalidToken
	}
	hold := e.Space.Hold(eventID, token)
	for range retries {
		tok, err := e.readToken(ctx, eventID, token)
		if err != nil {
			return time.Time{}, fmt.Errorf("seats: extend: %w", err)
		}
		if !tok.exists {
			return time.Time{}, ErrHoldExpired
		}
		args := make([]string, 0, 4+len(tok.labels))
		args = append(args, token, msArg(e.ttl()), msArg(e.maxTTL()), tok.client)
		args = append(args, tok.labels...)
		arr, err := lua.Array(ctx, e.Redis, extendScript,
			e.seatKeys(eventID, tok.labels, hold, e.Space.IPTokens(eventID, tok.client)), args)
		if err != nil {
			return time.Time{}, fmt.Errorf("seats: extend: %w", err)
		}
		code, err := lua.Int(arr, 0)
		if err != nil {
			return time.Time{}, fmt.Errorf("seats: extend: %w", err)
		}
		switch code {
		case 0:
			exp, err := lua.Int(arr, 1)
			if err != nil {
				return time.Time{}, fmt.Errorf("seats: extend: %w", err)
			}
			return msTime(exp), nil
		case 1:
			return time.Time{}, ErrHoldExpired
		case 2:
			continue // a hold changed the token's seats (or it was made anew) since we read it
		default:
			return time.Time{}, unexpected("extend", code)
		}
	}
	return time.Time{}, errors.New("seats: extend: the token's seats kept changing; retry")
}
