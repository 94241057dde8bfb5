package main

import (
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/pricing"
)

// reserveBody is the reserve request: the buyer and a GA cart, either
// tickets[] or the selectedTicketId + quantity shorthand.
type reserveBody struct {
	BuyerName        *string              `json:"buyerName,omitempty"`
	BuyerEmail       *string              `json:"buyerEmail,omitempty"`
	BuyerPhone       *string              `json:"buyerPhone,omitempty"`
	Tickets          []pricing.TicketLine `json:"tickets,omitempty"`
	SelectedTicketID string               `json:"selectedTicketId,omitempty"`
	Quantity         *int64               `json:"quantity,omitempty"`
}

// line is one priced order line.
type line struct {
	ticketID string
	name     string
	quantity int64
	price    money.Cents
}

// priced is a checked cart.
type priced struct {
	lines      []line
	admissions int64
	total      money.Cents
}

func quantityErr(q int64) *apierr.Error {
	return apierr.Of("INVALID_QUANTITY", "ticket quantity must be 1 to %d, got %d", pricing.MaxQuantity, q).With("quantity", q)
}

// price checks the cart against the event, with ticketd's cart limits
// (pricing.MaxQuantity, pricing.MaxLines), and totals it in cents the way
// ticketd does for a GA cart without discounts or percentages: subtotal plus
// feePerTicket for each admission that costs something (a free cart pays no fee).
func price(ev *event, b *reserveBody) (priced, *apierr.Error) {
	var p priced
	var raw []pricing.TicketLine
	switch {
	case b.SelectedTicketID != "":
		if len(b.Tickets) > 0 {
			return p, apierr.Invalid("send either tickets or selectedTicketId, not both")
		}
		n := int64(1)
		if b.Quantity != nil {
			n = *b.Quantity
		}
		raw = []pricing.TicketLine{{TicketID: b.SelectedTicketID, Quantity: n}}
	case b.Quantity != nil:
		return p, apierr.Invalid("quantity goes with selectedTicketId; in tickets each line has its own quantity")
	default:
		raw = b.Tickets
	}
	if len(raw) == 0 {
		return p, apierr.Invalid("the cart is empty: send tickets or selectedTicketId")
	}
	if len(raw) > pricing.MaxLines {
		return p, apierr.Invalid("a cart has at most %d ticket lines", pricing.MaxLines)
	}
	at := make(map[string]int, len(raw))
	for i, l := range raw {
		if l.TicketID == "" {
			return p, apierr.Invalid("tickets[%d].ticketId is required", i)
		}
		if l.Quantity < 1 || l.Quantity > pricing.MaxQuantity {
			return p, quantityErr(l.Quantity)
		}
		if j, ok := at[l.TicketID]; ok { // repeated lines of one type merge
			p.lines[j].quantity += l.Quantity
			if p.lines[j].quantity > pricing.MaxQuantity {
				return p, quantityErr(p.lines[j].quantity)
			}
			continue
		}
		t := ev.tickets[l.TicketID]
		if t == nil {
			return p, apierr.Of("TICKET_NOT_FOUND", "ticket %q is not on sale for this event", l.TicketID)
		}
		at[l.TicketID] = len(p.lines)
		p.lines = append(p.lines, line{ticketID: t.id, name: t.name, quantity: l.Quantity, price: t.price})
	}
	var subtotal money.Cents
	var paid int64
	for _, l := range p.lines {
		if t := ev.tickets[l.ticketID]; t.maxPerOrder > 0 && l.quantity > t.maxPerOrder {
			return p, apierr.Of("MAX_PER_ORDER_EXCEEDED", "at most %d of ticket %q per order", t.maxPerOrder, t.id).With("maxPerOrder", t.maxPerOrder)
		}
		subtotal += l.price * money.Cents(l.quantity)
		p.admissions += l.quantity
		if l.price > 0 {
			paid += l.quantity
		}
	}
	if p.admissions > pricing.MaxQuantity {
		return p, quantityErr(p.admissions)
	}
	p.total = subtotal
	if subtotal > 0 {
		p.total += ev.fee * money.Cents(paid)
	}
	return p, nil
}
