package seats

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/lua"
)

var tokenScript = lua.Load("seat_token")

// CreateToken creates the hold token's hash with the TTL, or, when it
// already exists, leaves it alone and returns its current expiry: a buyer
// session asks for its token again and must keep its seats.
func (e *Engine) CreateToken(ctx context.Context, eventID, token string) (time.Time, error) {
	if !ValidToken(token) {
		return time.Time{}, ErrInvalidToken
	}
	arr, err := lua.Array(ctx, e.Redis, tokenScript, []string{e.Space.Hold(eventID, token)}, []string{msArg(e.ttl())})
	if err != nil {
		return time.Time{}, fmt.Errorf("seats: create token: %w", err)
	}
	exp, err := lua.Int(arr, 1)
	if err != nil {
		return time.Time{}, fmt.Errorf("seats: create token: %w", err)
	}
	return msTime(exp), nil
}
