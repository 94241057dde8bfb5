package tickets

import (
	"time"

	"github.com/ticketd/ticketd/inventory/orders"
)

// Order is a paid order as the buyer's ticket page shows it.
type Order struct {
	OrderID   string
	EventID   string
	EventName string
	// StartsAt is the event's (or the order's showing's) start as the
	// catalog gives it (RFC 3339), "" when unknown.
	StartsAt  string
	BuyerName string
	Tickets   []orders.Ticket
}

// Ticket returns the i-th ticket of o as its QR code carries it.
func (o Order) Ticket(i int) Ticket {
	t := o.Tickets[i]
	return Ticket{ID: t.TicketID, EventID: o.EventID, Admission: t.Label}
}

// FormatStart writes a catalog start time (RFC 3339) for people, in the
// offset the catalog gave: "Thursday 1 July 2027, 18:00 UTC". Anything
// else is returned as it is.
func FormatStart(rfc3339 string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		return rfc3339
	}
	return t.Format("Monday 2 January 2006, 15:04 MST")
}
