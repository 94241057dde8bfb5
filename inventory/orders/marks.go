package orders

import (
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/lua"
)

// Sales a loss ticketd could not repair (docs/decisions.md, Durability and
// recovery): the scripts that mark an order paid (order_confirm, reg_pay,
// reg_register) reply with the event's units ever paid (the sold hash's
// "paid"), which the node keeps as the event's sold mark (Service.Marks);
// a rebuild that finds a mark above what it could count holds the event
// (Service.Held) until an operator releases or reconciles it.

// ReportPaid tells s.Marks the paid units a paying script's reply carries
// at index i (nothing when the reply has none, or s.Marks is nil).
func (s *Service) ReportPaid(eventID string, arr []rueidis.RedisMessage, i int) {
	if s.Marks == nil || i >= len(arr) {
		return
	}
	if n, err := lua.Int(arr, i); err == nil {
		s.Marks(eventID, n)
	}
}

// HeldError is the 503 SALES_HELD of an event whose sales are held, nil
// when they are not (or s.Held is nil).
func (s *Service) HeldError(eventID string) *apierr.Error {
	if s.Held == nil {
		return nil
	}
	return s.Held(eventID)
}
