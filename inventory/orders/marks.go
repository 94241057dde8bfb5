package orders

import (
	"fmt"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
)

// Sales a loss ticketd could not repair (docs/decisions.md, Durability and
// recovery): the scripts that mark an order paid (order_confirm, reg_pay,
// reg_register) reply with the event's units ever paid (the sold hash's
// "paid"), which the node keeps as the event's sold mark (Service.Marks);
// a rebuild that finds a mark above what it could count holds the event
// (Service.Held) until an operator releases or reconciles it.

// ReportPaid tells s.Paid the sale's partition, and s.Marks the paid units
// a paying script's reply carries at index i and the units its payment
// added at i+1 (nothing when the reply has none, or s.Marks is nil). When
// the book saw one of those units handed out before, Redis went back past
// a sale ticketd acknowledged (a rollback, or a failover to a replica that
// lagged, on a master the state checks do not watch): s.RolledBack is
// told, and the sale is answered ErrRolledBack rather than paid. It stays
// paid in Redis; the rebuild that follows counts it, and a retry after it
// answers it.
func (s *Service) ReportPaid(eventID string, arr []rueidis.RedisMessage, i int) error {
	if s.Paid != nil {
		s.Paid(keys.Partition(eventID))
	}
	if s.Marks == nil || i >= len(arr) {
		return nil
	}
	n, err := eval.Int(arr, i)
	if err != nil {
		return nil
	}
	added, _ := eval.Int(arr, i+1)
	if !s.Marks(eventID, n, added) {
		return nil
	}
	if s.RolledBack != nil {
		s.RolledBack(fmt.Sprintf("event %s's paid units went back: a sale was handed units this node saw sold before", eventID))
	}
	return ErrRolledBack
}

// ErrRolledBack answers a sale made on a Redis that went back past sales
// ticketd acknowledged (ReportPaid).
var ErrRolledBack = apierr.Unavailable("sales are stopped: Redis went back to an older state; they resume once it is rebuilt from Postgres")

// HeldError is the 503 SALES_HELD of an event whose sales are held, nil
// when they are not (or s.Held is nil).
func (s *Service) HeldError(eventID string) *apierr.Error {
	if s.Held == nil {
		return nil
	}
	return s.Held(eventID)
}
