package tickets

import "github.com/ticketd/ticketd/inventory/orders"

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
