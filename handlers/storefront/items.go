package storefront

import (
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// checkoutItems is what the buyer is charged for, by name: each line of
// reg named from the event in the catalog, then the adjustments the order
// record holds (a discount as a negative item, the service fee, VAT,
// refund protection). They always sum to reg.Total: a difference the
// record does not explain (none is expected) is shown as its own item
// rather than letting the page's figures disagree with the charge.
func checkoutItems(ev *catalog.CompiledEvent, reg registrations.Registration) payments.Items {
	items := make(payments.Items, 0, len(reg.Lines)+4)
	for _, l := range reg.Lines {
		items = append(items, payments.Item{Name: lineName(ev, l), Quantity: l.Quantity, UnitPrice: l.UnitPrice, Amount: l.Amount})
	}
	one := func(name string, c money.Cents) {
		if c != 0 {
			items = append(items, payments.Item{Name: name, Quantity: 1, UnitPrice: c, Amount: c})
		}
	}
	discount := "Discount"
	if reg.DiscountCode != "" {
		discount += " (" + reg.DiscountCode + ")"
	}
	one(discount, -reg.Discount)
	one("Service fee", reg.Fee)
	one("VAT", reg.VAT)
	one("Refund protection", reg.RefundProtection)
	if d := reg.Total - items.Sum(); d > 0 {
		one("Fees and taxes", d)
	} else if d < 0 {
		one("Adjustment", d)
	}
	return items
}

// lineName names an order line as the event's catalog does: the ticket
// type's, area's or extra's name, a seat as "Seat A-12 (Stalls)", a table
// as "Table T1 (VIP)". A line the catalog no longer names keeps its kind.
func lineName(ev *catalog.CompiledEvent, l orders.Line) string {
	switch l.Kind {
	case orders.LineTicket:
		if t := ev.Tickets[l.RefID]; t != nil && t.Name != "" {
			return t.Name
		}
		return "Ticket"
	case orders.LineSeat:
		c, _ := ev.SeatCategory(l.RefID)
		return inCategory("Seat "+l.RefID, c)
	case orders.LineArea:
		if a := ev.Areas[l.RefID]; a != nil && a.Name != "" {
			return a.Name
		}
		return "Standing area"
	case orders.LineTable:
		var c *catalog.Category
		if tb := ev.Tables[l.RefID]; tb != nil {
			c = ev.Categories[tb.Category]
		}
		return inCategory("Table "+l.RefID, c)
	case orders.LineExtra:
		if x := ev.Extras[l.RefID]; x != nil && x.Name != "" {
			return x.Name
		}
		return "Extra"
	}
	return "Item"
}

// inCategory adds a seat's or table's category to its name.
func inCategory(name string, c *catalog.Category) string {
	if c == nil || c.Name == "" {
		return name
	}
	return name + " (" + c.Name + ")"
}
