package seats

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/roompass"
)

var holdScript = eval.Load("seat_hold")

// HoldResult is what a token holds after a successful hold.
type HoldResult struct {
	HoldToken string `json:"holdToken"`
	// SeatLabels are all seats the token holds now, by row and number.
	SeatLabels []string `json:"seatLabels"`
	// Subtotal is the sum of the category prices of SeatLabels.
	Subtotal  money.Cents `json:"subtotal"`
	ExpiresAt time.Time   `json:"expiresAt"`
}

// Hold adds labels to the seats of token, all or nothing: when any of them
// is booked or held by another token or order, nothing is held and the
// error is a 409 SEAT_CONFLICT naming exactly those seats. Seats the token
// already holds are kept. The token's expiry does not move (Extend does
// that); the new seats expire with it. A gone token is ErrHoldExpired. A
// hold the event's single-seat rule refuses is a 409 SEAT_RULE (RuleError);
// conflicts are answered first. A token holds at most MaxPerToken seats
// (400 MAX_PER_ORDER_EXCEEDED). On an event with a waiting room the token
// must have been made with a pass (CreatePassToken; 403 QUEUE_REQUIRED
// otherwise), and holds at most the pass's units.
func (e *Engine) Hold(ctx context.Context, ev *catalog.CompiledEvent, token string, labels []string) (HoldResult, error) {
	if !ev.Seated() {
		return HoldResult{}, ErrNotSeated
	}
	if !ValidToken(token) {
		return HoldResult{}, ErrInvalidToken
	}
	labels, err := checkSeats(ev, labels)
	if err != nil {
		return HoldResult{}, err
	}
	limit := MaxPerToken(ev)
	if len(labels) > limit {
		return HoldResult{}, tokenLimitError(limit)
	}
	near := neighbours(ev, labels)
	ks := []string{e.Space.Hold(ev.ID, token), e.Space.Booked(ev.ID), e.Space.Live(keys.Partition(ev.ID)), e.Space.SeatHolds(ev.ID), e.Space.OrderSeats(ev.ID), e.Space.RegSeats(ev.ID),
		e.Space.RoomPlaces(ev.ID)}
	room := "0"
	if ev.Room != nil {
		room = "1"
	}
	args := make([]string, 0, 5+len(labels)+len(near))
	args = append(args, token, strconv.Itoa(limit), strconv.Itoa(len(labels)), ev.SeatMap.Rule(), room)
	args = append(args, labels...)
	args = append(args, near...)
	arr, err := eval.Array(ctx, e.Redis, holdScript, ks, args)
	if err != nil {
		return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
	}
	switch code {
	case reply.OK:
		exp, err := eval.Int(arr, 1)
		if err != nil {
			return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
		}
		held, err := eval.Strs(arr, 2)
		if err != nil {
			return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
		}
		sortLabels(held)
		return HoldResult{HoldToken: token, SeatLabels: held, Subtotal: subtotal(ev, held), ExpiresAt: msTime(exp)}, nil
	case reply.HoldGone:
		return HoldResult{}, ErrHoldExpired
	case reply.SeatTaken:
		conflicts, err := eval.Strs(arr, 1)
		if err != nil {
			return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
		}
		return HoldResult{}, ConflictError(conflicts)
	case reply.TokenLimit:
		most, err := eval.Int(arr, 1)
		if err != nil {
			return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
		}
		if most < int64(limit) {
			return HoldResult{}, apierr.MaxPerOrder(most, fmt.Sprintf(
				"this hold token was made with a waiting room pass for %s, and holds at most that many; release some first", seatCount(most)))
		}
		return HoldResult{}, tokenLimitError(limit)
	case reply.PassRequired, reply.PassUsed, reply.PassExpired:
		return HoldResult{}, roompass.Refusal(arr)
	case reply.Stopped:
		return HoldResult{}, redisstate.ErrSalesStopped
	case reply.Stranded:
		stranded, err := eval.Strs(arr, 1)
		if err != nil {
			return HoldResult{}, fmt.Errorf("seats: hold: %w", err)
		}
		if len(stranded) == 0 {
			return HoldResult{}, unexpected("hold: no stranded seat", code)
		}
		return HoldResult{}, RuleError(ev, stranded)
	}
	return HoldResult{}, unexpected("hold", code)
}

// tokenLimitError is the cart's MAX_PER_ORDER_EXCEEDED for a hold token:
// a token holds the seats of one order.
func tokenLimitError(limit int) *apierr.Error {
	return apierr.MaxPerOrder(int64(limit),
		fmt.Sprintf("a hold holds at most %s for this event (its maxPerOrder); release some first", seatCount(int64(limit))))
}

// checkSeats validates labels against the event's map before Redis sees
// them: count, existence (SEAT_NOT_FOUND) and price (SEAT_NOT_PRICED).
func checkSeats(ev *catalog.CompiledEvent, labels []string) ([]string, error) {
	labels, err := checkCount(labels)
	if err != nil {
		return nil, err
	}
	var unknown, unpriced []string
	for _, l := range labels {
		cat, ok := ev.SeatCategory(l)
		switch {
		case !ok:
			unknown = append(unknown, l)
		case cat == nil || cat.Price == nil:
			unpriced = append(unpriced, l)
		}
	}
	if len(unknown) > 0 {
		return nil, apierr.SeatNotFound(unknown)
	}
	if len(unpriced) > 0 {
		return nil, apierr.SeatNotPriced(unpriced)
	}
	return labels, nil
}

// subtotal sums the category prices of labels. A seat that lost its price
// or left the map since it was held adds nothing; reserve rejects it later.
func subtotal(ev *catalog.CompiledEvent, labels []string) money.Cents {
	var sum money.Cents
	for _, l := range labels {
		if cat, ok := ev.SeatCategory(l); ok && cat != nil && cat.Price != nil {
			sum += *cat.Price
		}
	}
	return sum
}

// seatCount is n seats, in words: "1 seat", "2 seats".
func seatCount(n int64) string {
	if n == 1 {
		return "1 seat"
	}
	return strconv.FormatInt(n, 10) + " seats"
}
