package scenario

import (
	"context"
	"errors"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/integrity"
)

// BaselineRecord is the baseline server's record of an event, read
// through its GET /v1/baseline/stats/{eventId}. It reports no revenue.
type BaselineRecord struct {
	API *api.Client
}

// Record returns the baseline's paid orders and tickets of eventID.
func (b BaselineRecord) Record(ctx context.Context, eventID string) (integrity.Record, error) {
	s, err := b.API.BaselineStats(ctx, eventID)
	return integrity.Record{Orders: s.PaidOrders, Tickets: s.Tickets, Revenue: -1}, err
}

// SeatLabels is not available: the baseline sells general admission only.
func (b BaselineRecord) SeatLabels(context.Context, string) ([]string, error) {
	return nil, errors.New("the baseline sells no seats")
}
