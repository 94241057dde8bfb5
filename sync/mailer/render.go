package mailer

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/outbox"
)

// errNotYet is a row whose data Postgres does not hold (yet): retried.
var errNotYet = errors.New("mailer: the order is not in Postgres")

// render builds the message of a claimed row from Postgres; paid holds the
// orders this batch read already (render adds those it reads).
func (m *Mailer) render(ctx context.Context, r row, paid map[string]orderdb.PaidOrder) (Message, error) {
	to, err := mail.ParseAddress(r.recipient)
	if err != nil {
		return Message{}, fmt.Errorf("%w: recipient is not an address", ErrPermanent)
	}
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return Message{}, fmt.Errorf("%w: sender %q is not an address", ErrPermanent, m.From)
	}
	var msg message
	switch r.kind {
	case outbox.BuyerTickets, outbox.HostNotify:
		o, ok := paid[r.orderID]
		if !ok {
			var err error
			if o, ok, err = (orderdb.Store{Pool: m.Pool}).Paid(ctx, r.orderID); err != nil {
				return Message{}, err
			}
			if !ok {
				return Message{}, errNotYet
			}
			paid[r.orderID] = o
		}
		if r.kind == outbox.BuyerTickets {
			msg, err = m.buyerTickets(o)
		} else {
			msg, err = hostNotify(o)
		}
		if err != nil {
			return Message{}, err
		}
	case outbox.HostRefund:
		rf, err := m.refund(ctx, r)
		if err != nil {
			return Message{}, err
		}
		msg, err = hostRefund(rf)
		if err != nil {
			return Message{}, err
		}
	default:
		return Message{}, fmt.Errorf("%w: unknown outbox kind %q", ErrPermanent, r.kind)
	}
	if m.TestMode {
		msg = testMode(msg)
	}
	msg.from, msg.to = from.String(), to.String()
	msg.date = time.Now()
	// The same on a resend, so a mail client can tell a duplicate.
	msg.messageID = fmt.Sprintf("%d.%s@ticketd", r.id, safeName(r.orderID))
	data, err := msg.encode()
	if err != nil {
		return Message{}, fmt.Errorf("mailer: encode: %w", err)
	}
	return Message{OrderID: r.orderID, Kind: r.kind, From: from.Address, To: to.Address, Data: data}, nil
}

// amount formats cents for people: "USD 42.50", or "free".
func amount(c money.Cents, currency string) string {
	if c == 0 {
		return "free"
	}
	return strings.ToUpper(currency) + " " + c.String()
}

// buyerTickets renders the buyer's e-mail: one signed QR image per ticket,
// inline, and the link to the ticket page.
func (m *Mailer) buyerTickets(o orderdb.PaidOrder) (message, error) {
	page := o.TicketOrder()
	d := buyerData{PaidOrder: o, When: tickets.FormatStart(o.StartsAt), Total: amount(o.Total, o.Currency),
		PageURL: m.Keys.PageURL(m.AppURL, o.OrderID)}
	var images []inline
	for i := range o.Tickets {
		code := m.Keys.Sign(page.Ticket(i))
		png, err := tickets.PNG(code, 0)
		if err != nil {
			return message{}, err
		}
		cid := fmt.Sprintf("ticket-%d.%s@ticketd", i+1, safeName(o.OrderID))
		images = append(images, inline{cid: cid, name: fmt.Sprintf("ticket-%d.png", i+1), png: png})
		d.Tickets = append(d.Tickets, ticketData{N: i + 1, ID: o.Tickets[i].TicketID, Label: o.Tickets[i].Label, CID: cid, Code: code})
	}
	text, html, err := execute("buyer", d)
	if err != nil {
		return message{}, err
	}
	return message{subject: "Your tickets for " + o.EventName, text: text, html: html, images: images}, nil
}

func hostNotify(o orderdb.PaidOrder) (message, error) {
	d := buyerData{PaidOrder: o, When: tickets.FormatStart(o.StartsAt), Total: amount(o.Total, o.Currency)}
	for i, t := range o.Tickets {
		d.Tickets = append(d.Tickets, ticketData{N: i + 1, ID: t.TicketID, Label: t.Label})
	}
	text, html, err := execute("host", d)
	if err != nil {
		return message{}, err
	}
	return message{subject: fmt.Sprintf("New registration for %s: %s", o.EventName, o.BuyerName), text: text, html: html}, nil
}

func hostRefund(rf refundData) (message, error) {
	text, html, err := execute("refund", rf)
	if err != nil {
		return message{}, err
	}
	return message{subject: fmt.Sprintf("Refund needed: %s for %s", rf.Amount, rf.EventName), text: text, html: html}, nil
}

type buyerData struct {
	orderdb.PaidOrder
	When, Total, PageURL string
	Tickets              []ticketData
}

type ticketData struct {
	N                    int
	ID, Label, CID, Code string
}
