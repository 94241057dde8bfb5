package seats

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/lua"
)

var releaseScript = lua.Load("seat_release")

// Release frees labels (all of the token's seats when labels is nil) and
// returns the seats it freed, by row and number. Only seats the token still
// holds are freed: a seat handed to an order or held by someone else is left
// alone. The token stays usable until it expires. An unknown or expired
// token frees nothing and is not an error. A non-nil empty list is a 400:
// omit the labels to release everything. A partial release that would leave
// a freed seat alone under the event's single-seat rule is a 409 SEAT_RULE
// naming it (ReleaseRuleError); releasing all of the token's seats, by nil
// or by naming them all, is always allowed.
func (e *Engine) Release(ctx context.Context, ev *catalog.CompiledEvent, token string, labels []string) ([]string, error) {
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
	eventID := ev.ID
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
		var near []string
		if !all {
			near = neighbours(ev, labels)
		}
		args := make([]string, 0, 4+len(labels)+len(near))
		args = append(args, token, flag, strconv.Itoa(len(labels)), ev.SeatMap.Rule())
		args = append(args, labels...)
		args = append(args, near...)
		ks := e.seatKeys(eventID, append(labels[:len(labels):len(labels)], near...), hold, e.Space.Booked(eventID))
		arr, err := lua.Array(ctx, e.Redis, releaseScript, ks, args)
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
		case 5:
			stranded, err := lua.Strs(arr, 1)
			if err != nil || len(stranded) == 0 {
				return nil, unexpected("release: no stranded seat", code)
			}
			return nil, ReleaseRuleError(ev, stranded)
		default:
			return nil, unexpected("release", code)
		}
	}
	return nil, errors.New("seats: release: the token's seats kept changing; retry")
}
