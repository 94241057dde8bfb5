package orders

import (
	"context"
	"errors"
)

// ConfirmOrder is the partner surface's confirm: Confirm, and for an
// order Redis does not have, the answer the record gives (s.Archive). A
// paid order of the caller in Postgres is a replay (same reference) or a
// second charge to refund (another reference, CONFIRM_FAILED
// already_paid); an order ticketd made for the caller but knows nowhere
// (lost with Redis' state, or aged out after it expired) failed
// (CONFIRM_FAILED lost): the partner refunds.
func (s *Service) ConfirmOrder(ctx context.Context, req ConfirmRequest) (Confirmation, error) {
	res, err := s.Confirm(ctx, req)
	if !errors.Is(err, ErrNotFound) {
		return res, err
	}
	var st State
	var found bool
	if s.Archive != nil {
		if st, found, err = s.Archive.Order(ctx, req.OrderID); err != nil {
			return Confirmation{}, err
		}
	}
	if !found && s.Minted(req.OrderID, req.ChannelID) {
		return Confirmation{}, ConfirmFailed("lost")
	}
	if !found || st.ChannelID != req.ChannelID || st.Status != StatusPaid {
		return Confirmation{}, ErrNotFound
	}
	if st.PartnerReference != req.Reference {
		return Confirmation{}, ConfirmFailed("already_paid")
	}
	tix, err := s.Archive.Tickets(ctx, req.OrderID)
	if err != nil {
		return Confirmation{}, err
	}
	return Confirmation{OrderID: req.OrderID, Status: StatusPaid, Tickets: tix, Duplicate: true}, nil
}

// Lookup is an order's state as the status call answers it: from Redis,
// else from the record (s.Archive). lost says the order was made for
// channelID but is known nowhere (lost with Redis' state, or aged out
// after it expired): it can never be paid, and st holds only its id and
// StatusFailed, its amount no longer known.
func (s *Service) Lookup(ctx context.Context, orderID, channelID string) (st State, lost, found bool, err error) {
	st, found, err = s.Status(ctx, orderID)
	if err == nil && !found && s.Archive != nil {
		st, found, err = s.Archive.Order(ctx, orderID)
	}
	if err != nil {
		return State{}, false, false, err
	}
	if !found && s.Minted(orderID, channelID) {
		return State{OrderID: orderID, Status: StatusFailed}, true, false, nil
	}
	return st, false, found, nil
}
