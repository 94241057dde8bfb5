package mailer

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/outbox"
)

// errNotYet is a row whose data Postgres does not hold (yet): retried.
var errNotYet = errors.New("mailer: the order is not in Postgres")

// Bounds of a message's size (issue 17: a free event once mailed 2.7 MB,
// a thousand tickets and the attacker's text in one message). A message
// over them is sent in a smaller form that still gives the buyer every
// ticket, through the ticket page: none is dropped.
const (
	// DefaultInlineTickets is how many tickets a buyer's message shows
	// with their QR images inline (the default maxPerOrder); a larger
	// order lists its tickets and links the ticket page, which shows
	// every ticket's code.
	DefaultInlineTickets = 10
	// DefaultMaxBytes bounds an encoded message; a message over it drops
	// its list of tickets (the count and the ticket page link stay).
	DefaultMaxBytes = 256 << 10
	// nameRunes bounds each name a message shows (buyer, event, host),
	// so that no form of a message outgrows DefaultMaxBytes.
	nameRunes = 200
)

// clip cuts s to n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// clipNames is o with its names bounded (clip).
func clipNames(o orderdb.PaidOrder) orderdb.PaidOrder {
	o.BuyerName, o.BuyerEmail, o.BuyerPhone = clip(o.BuyerName, nameRunes), clip(o.BuyerEmail, nameRunes), clip(o.BuyerPhone, nameRunes)
	o.EventName, o.TenantName = clip(o.EventName, nameRunes), clip(o.TenantName, nameRunes)
	return o
}

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
	maxBytes := orDefault(m.MaxBytes, DefaultMaxBytes)
	date := time.Now()
	for {
		if m.TestMode {
			msg = testMode(msg)
		}
		msg.from, msg.to, msg.date = from.String(), to.String(), date
		// The same on a resend, so a mail client can tell a duplicate.
		msg.messageID = fmt.Sprintf("%d.%s@ticketd", r.id, safeName(r.orderID))
		data, err := msg.encode()
		if err != nil {
			return Message{}, fmt.Errorf("mailer: encode: %w", err)
		}
		if len(data) <= maxBytes || msg.smaller == nil {
			return Message{OrderID: r.orderID, Kind: r.kind, From: from.Address, To: to.Address, Data: data}, nil
		}
		if msg, err = msg.smaller(); err != nil {
			return Message{}, err
		}
	}
}

// amount formats cents for people: "USD 42.50", or "free".
func amount(c money.Cents, currency string) string {
	if c == 0 {
		return "free"
	}
	return strings.ToUpper(currency) + " " + c.String()
}

// buyerTickets renders the buyer's e-mail: one signed QR image per ticket,
// inline, and the link to the ticket page. An order of more than
// InlineTickets tickets lists them and links the page instead of the
// images; smaller, the message has no list, only the count and the link.
func (m *Mailer) buyerTickets(o orderdb.PaidOrder) (message, error) {
	page := o.TicketOrder()
	o = clipNames(o)
	d := buyerData{PaidOrder: o, When: tickets.FormatStart(o.StartsAt), Total: amount(o.Total, o.Currency),
		PageURL: m.Keys.PageURL(m.AppURL, o.OrderID), Count: len(o.Tickets)}
	subject := "Your tickets for " + o.EventName
	summary := func() (message, error) {
		d := d
		d.Form, d.Tickets = formSummary, nil
		text, html, err := execute("buyer", d)
		return message{subject: subject, text: text, html: html}, err
	}
	if len(o.Tickets) > orDefault(m.InlineTickets, DefaultInlineTickets) {
		d.Form = formList
		for i, t := range o.Tickets {
			d.Tickets = append(d.Tickets, ticketData{N: i + 1, ID: t.TicketID, Label: t.Label})
		}
		text, html, err := execute("buyer", d)
		return message{subject: subject, text: text, html: html, smaller: summary}, err
	}
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
	return message{subject: subject, text: text, html: html, images: images, smaller: summary}, nil
}

// hostNotify renders the host's notice of a registration: its tickets
// listed, or, when that is over the size bound, counted.
func hostNotify(o orderdb.PaidOrder) (message, error) {
	o = clipNames(o)
	d := buyerData{PaidOrder: o, When: tickets.FormatStart(o.StartsAt), Total: amount(o.Total, o.Currency), Count: len(o.Tickets), Form: formList}
	for i, t := range o.Tickets {
		d.Tickets = append(d.Tickets, ticketData{N: i + 1, ID: t.TicketID, Label: t.Label})
	}
	subject := fmt.Sprintf("New registration for %s: %s", o.EventName, o.BuyerName)
	text, html, err := execute("host", d)
	if err != nil {
		return message{}, err
	}
	summary := func() (message, error) {
		d := d
		d.Form, d.Tickets = formSummary, nil
		text, html, err := execute("host", d)
		return message{subject: subject, text: text, html: html}, err
	}
	return message{subject: subject, text: text, html: html, smaller: summary}, nil
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
	Count                int  // tickets in the order
	Form                 form // what the message shows of each ticket
}

// Ref is the order's short reference, as the buyer's pages show it.
func (d buyerData) Ref() string { return orders.Reference(d.OrderID) }

// form is how much of each ticket a message shows.
type form int

const (
	formInline  form = iota // its QR image and code (the buyer's default)
	formList                // its label and id
	formSummary             // nothing: the count, and for the buyer the ticket page
)

// Inline, List and Summary name the form in the templates.
func (d buyerData) Inline() bool  { return d.Form == formInline }
func (d buyerData) List() bool    { return d.Form == formList }
func (d buyerData) Summary() bool { return d.Form == formSummary }

type ticketData struct {
	N                    int
	ID, Label, CID, Code string
}
