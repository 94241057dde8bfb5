package seats

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// Held reads what token holds for ev without changing it: its seats (by
// row and number), their subtotal and its expiry, so a page that reloads
// can pick its hold up again. A gone token is ErrHoldExpired. One HGETALL
// reads the seats and the expiry together, so they always agree.
func (e *Engine) Held(ctx context.Context, ev *catalog.CompiledEvent, token string) (HoldResult, error) {
	if !ValidToken(token) {
		return HoldResult{}, ErrInvalidToken
	}
	h, err := e.Redis.Do(ctx, e.Redis.B().Hgetall().Key(e.Space.Hold(ev.ID, token)).Build()).AsStrMap()
	if err != nil {
		return HoldResult{}, fmt.Errorf("seats: held: %w", err)
	}
	raw, ok := h["exp"]
	if !ok {
		return HoldResult{}, ErrHoldExpired
	}
	exp, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return HoldResult{}, fmt.Errorf("seats: held: exp %q: %w", raw, err)
	}
	labels := []string{}
	for f := range h {
		if l, ok := strings.CutPrefix(f, "s:"); ok {
			labels = append(labels, l)
		}
	}
	sortLabels(labels)
	return HoldResult{HoldToken: token, SeatLabels: labels, Subtotal: subtotal(ev, labels), ExpiresAt: msTime(exp)}, nil
}
