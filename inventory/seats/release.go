package seats

import (
	"context"
	"errors"
	"fmt"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/lua"
)

var releaseScript = lua.Load("seat_release")

// Release frees labels (all of the token's seats when labels is nil) and
// returns the seats it freed, by row and number. Only seats the token still
// holds are freed: a seat handed to an order or held by someone else is left
// alone. The token stays usable until it expires. An unknown or expired
// token frees nothing and is not an error. A non-nil empty list is a 400:
// omit the labels to release everything.
func (e *Engine) Release(ctx context.Context, eventID, token string, labels []string) ([]string, error) {
	if !ValidToken(token) {
		return nil, ErrInvalidToken
	}
	all := labels == nil
	if !all {
		var err error
		if labels, err = checkCount(labels); err != nil {
			return nil, err
		}
		for _, l := range labels {
			if len(l) > 64 {
				return nil, apierr.Invalid("seat labels are at most 64 characters")
			}
		}
	}
	hold := e.Space.Hold(eventID, token)
	for range retries {
		flag := "0"
		if all {
			flag = "1"
			var err error
			if labels, _, err = e.heldLabels(ctx, eventID, token); err != nil {
				return nil, fmt.Errorf("seats: release: %w", err)
			}
			if len(labels) == 0 {
				return []string{}, nil
			}
		}
		args := make([]string, 0, 2+len(labels))
		args = append(args, token, flag)
		args = append(args, labels...)
		arr, err := lua.Array(ctx, e.Redis, releaseScript, e.seatKeys(eventID, labels, hold), args)
		if err != nil {
			return nil, fmt.Errorf("seats: release: %w", err)
		}
		code, err := lua.Int(arr, 0)
		if err != nil {
			return nil, fmt.Errorf("seats: release: %w", err)
		}
		switch code {
		case 0:
			released, err := lua.Strs(arr, 1)
			if err != nil {
				return nil, fmt.Errorf("seats: release: %w", err)
			}
			if released == nil {
				released = []string{}
			}
			sortLabels(released)
			return released, nil
		case 2:
			continue // a hold changed the token's seats since we read them
		default:
			return nil, unexpected("release", code)
		}
	}
	return nil, errors.New("seats: release: the token's seats kept changing; retry")
}
