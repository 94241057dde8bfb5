package orders

import (
	"context"
	"fmt"

	"github.com/ticketd/ticketd/inventory/capacity"
)

// Remaining returns, per capacity field of an event, what seller (its
// share's field: capacity.Storefront, capacity.ChannelField) has left to
// sell (capacity.Remaining, bounded by the seller's share:
// capacity.ForSeller). Fields without a capacity are absent.
func (s *Service) Remaining(ctx context.Context, eventID, seller string) (map[string]int64, error) {
	res := s.Redis.DoMulti(ctx,
		s.Redis.B().Hgetall().Key(s.Space.Caps(eventID)).Build(),
		s.Redis.B().Hgetall().Key(s.Space.Sold(eventID)).Build())
	caps, err := res[0].AsIntMap()
	if err != nil {
		return nil, fmt.Errorf("remaining: %w", err)
	}
	sold, err := res[1].AsIntMap()
	if err != nil {
		return nil, fmt.Errorf("remaining: %w", err)
	}
	return capacity.ForSeller(capacity.Remaining(caps, sold), seller), nil
}
