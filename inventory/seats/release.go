package seats

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/reply"
)

var releaseScript = eval.Load("seat_release")

// Release frees labels (all of the token's seats when labels is nil) and
// returns the seats it freed, by row and number, in one script call. Only seats the token still
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
	flag := "0"
	var near []string
	if all {
		flag = "1"
		labels = nil
	} else {
		near = neighbours(ev, labels)
	}
	args := make([]string, 0, 4+len(labels)+len(near))
	args = append(args, token, flag, strconv.Itoa(len(labels)), ev.SeatMap.Rule())
	args = append(args, labels...)
	args = append(args, near...)
	arr, err := eval.Array(ctx, e.Redis, releaseScript,
		[]string{e.Space.Hold(ev.ID, token), e.Space.Booked(ev.ID), e.Space.SeatHolds(ev.ID), e.Space.OrderSeats(ev.ID), e.Space.RegSeats(ev.ID)}, args)
	if err != nil {
		return nil, fmt.Errorf("seats: release: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return nil, fmt.Errorf("seats: release: %w", err)
	}
	switch code {
	case reply.OK:
		released, err := eval.Strs(arr, 1)
		if err != nil {
			return nil, fmt.Errorf("seats: release: %w", err)
		}
		if released == nil {
			released = []string{}
		}
		sortLabels(released)
		return released, nil
	case reply.Stranded:
		stranded, err := eval.Strs(arr, 1)
		if err != nil || len(stranded) == 0 {
			return nil, unexpected("release: no stranded seat", code)
		}
		return nil, ReleaseRuleError(ev, stranded)
	}
	return nil, unexpected("release", code)
}
