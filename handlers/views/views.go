// Package views holds the JSON shapes both selling surfaces answer with, so
// that the partner detail and the storefront event show an event's
// showings, extras and seat map alike, and both quotes are one shape.
package views

import (
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/pricing"
)

// Event is an event's detail as a buyer's surface shows it: the partner
// detail and the storefront event.
type Event struct {
	ID        string   `json:"id"`
	ShortID   string   `json:"shortId"`
	Slug      string   `json:"slug"`
	Name      string   `json:"name"`
	StartsAt  string   `json:"startsAt"`
	Status    string   `json:"status"`
	OnSaleAt  string   `json:"onSaleAt,omitempty"`
	Available bool     `json:"available"`
	Currency  string   `json:"currency"`
	Seated    bool     `json:"seated"`
	Tickets   []Ticket `json:"tickets"`
	// MaxPerOrder is the most admissions one order (registration, hold
	// token) may hold: the catalog's, or its default (catalog.CompiledEvent).
	MaxPerOrder int64 `json:"maxPerOrder"`
	Parts
	// Remaining is what the event cap leaves, when it has one and
	// remaining was read.
	Remaining *int64 `json:"remaining,omitempty"`
}

// EventOf renders ev for a buyer holding accessCode ("" for none), with
// what remains of each capacity (orders.Remaining's map; nil says nothing
// about it). It is available when on sale and its onSaleAt has come by now.
func EventOf(ev *catalog.CompiledEvent, accessCode string, remaining map[string]int64, now time.Time) Event {
	return Event{ID: ev.ID, ShortID: ev.ShortID, Slug: ev.Slug, Name: ev.Name, StartsAt: ev.StartsAt,
		Status: ev.Status, OnSaleAt: ev.OnSaleAt, Currency: "USD", Seated: ev.Seated(),
		Available: ev.Status == catalog.StatusOnSale && ev.SaleStarted(now),
		Tickets:   ticketsOf(ev, accessCode, remaining), MaxPerOrder: ev.MaxPerOrder, Parts: partsOf(ev, remaining),
		Remaining: Left(remaining, capacity.Event)}
}

// Parts are the parts of an event's detail beyond its own fields and its
// tickets.
type Parts struct {
	Showings         []Showing    `json:"showings,omitempty"`
	Extras           []Extra      `json:"extras,omitempty"`
	RefundProtection *RefundOffer `json:"refundProtection,omitempty"`
	SeatMap          *SeatSummary `json:"seatMap,omitempty"`
}

// Ticket is a ticket type as a buyer may see it. MaxPerOrder is the most
// of it one order may hold: its own maxPerOrder, else the event's.
type Ticket struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Price       money.Cents `json:"price"`
	Currency    string      `json:"currency"`
	MaxPerOrder int64       `json:"maxPerOrder"`
	// Hidden is set on a hidden ticket its access code revealed.
	Hidden bool `json:"hidden,omitempty"`
	// Remaining is what can still be bought (capacity.Ticket: the ticket
	// type's capacity left, bounded by the event's); absent when not read.
	Remaining *int64 `json:"remaining,omitempty"`
	SoldOut   *bool  `json:"soldOut,omitempty"`
}

// ticketsOf lists ev's ticket types a buyer with accessCode may see
// (hidden ones only with their code), with what remains of each when
// remaining is not nil.
func ticketsOf(ev *catalog.CompiledEvent, accessCode string, remaining map[string]int64) []Ticket {
	out := []Ticket{}
	for _, t := range ev.Event.Tickets {
		if t.Hidden && (accessCode == "" || accessCode != t.AccessCode) {
			continue
		}
		tv := Ticket{ID: t.ID, Name: t.Name, Price: t.Price, Currency: "USD", MaxPerOrder: ev.TicketMaxPerOrder(&t), Hidden: t.Hidden}
		if n, ok := capacity.Ticket(remaining, t.ID); ok {
			soldOut := n <= 0
			tv.Remaining, tv.SoldOut = &n, &soldOut
		}
		out = append(out, tv)
	}
	return out
}

// Showing is one showing with what its cap leaves.
type Showing struct {
	ID        string `json:"id"`
	StartsAt  string `json:"startsAt"`
	Remaining *int64 `json:"remaining,omitempty"`
}

// Extra is one add-on with what its cap leaves.
type Extra struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Price     money.Cents `json:"price"`
	Remaining *int64      `json:"remaining,omitempty"`
}

// RefundOffer says the event offers refund protection at a percentage.
type RefundOffer struct {
	Percent json.Number `json:"percent"`
}

// SeatSummary sums up a seat map; the seating config endpoint has it whole.
type SeatSummary struct {
	Categories []Category `json:"categories"`
	Rows       int        `json:"rows"`
	Seats      int        `json:"seats"`
	GAAreas    []string   `json:"gaAreas,omitempty"`
	Tables     []string   `json:"tables,omitempty"`
}

// Category is a seat category; Price is null for one without a price,
// whose seats cannot be sold.
type Category struct {
	ID    string       `json:"id"`
	Name  string       `json:"name"`
	Price *money.Cents `json:"price"`
}

// Left looks a capacity field up in remaining (orders.Remaining's map):
// nil when the field has no cap, or remaining is nil.
func Left(remaining map[string]int64, field string) *int64 {
	if n, ok := remaining[field]; ok {
		return &n
	}
	return nil
}

// partsOf renders ev's parts with what remains of each (remaining may be
// nil: nothing is said about what remains).
func partsOf(ev *catalog.CompiledEvent, remaining map[string]int64) Parts {
	var p Parts
	for _, s := range ev.Event.Showings {
		p.Showings = append(p.Showings, Showing{ID: s.ID, StartsAt: s.StartsAt, Remaining: Left(remaining, capacity.ShowingField(s.ID))})
	}
	for _, x := range ev.Event.Extras {
		p.Extras = append(p.Extras, Extra{ID: x.ID, Name: x.Name, Price: x.Price, Remaining: Left(remaining, capacity.ExtraField(x.ID))})
	}
	if pct := ev.Pricing.RefundProtectionPercent; pct.IsPositive() {
		p.RefundProtection = &RefundOffer{Percent: json.Number(pct.String())}
	}
	if sm := ev.SeatMap; sm != nil {
		ss := &SeatSummary{Rows: len(sm.Rows), Categories: []Category{}}
		for _, c := range sm.Categories {
			ss.Categories = append(ss.Categories, Category{ID: c.ID, Name: c.Name, Price: c.Price})
		}
		for _, r := range sm.Rows {
			ss.Seats += r.Seats
		}
		for _, ar := range sm.GAAreas {
			ss.GAAreas = append(ss.GAAreas, ar.ID)
		}
		for _, t := range sm.Tables {
			ss.Tables = append(ss.Tables, t.ID)
		}
		p.SeatMap = ss
	}
	return p
}

// Quote is a quote as both surfaces answer it: interface.md's partner
// quote, whose subtotal, discount, fee, total and currency are the
// storefront quote's.
type Quote struct {
	Subtotal         money.Cents           `json:"subtotal"`
	Discount         money.Cents           `json:"discount"`
	Fee              money.Cents           `json:"fee"`
	VAT              money.Cents           `json:"vat"`
	Total            money.Cents           `json:"total"`
	Currency         string                `json:"currency"`
	Extras           []pricing.ExtraAmount `json:"extras"`
	RefundProtection *RefundView           `json:"refundProtection"`
}

// RefundView is the refund protection of an opted-in cart.
type RefundView struct {
	Percent json.Number `json:"percent"`
	Amount  money.Cents `json:"amount"`
}

// QuoteOf renders a priced cart.
func QuoteOf(q pricing.Quote) Quote {
	v := Quote{Subtotal: q.Subtotal, Discount: q.Discount, Fee: q.Fee, VAT: q.VAT, Total: q.Total,
		Currency: "USD", Extras: q.Extras}
	if v.Extras == nil {
		v.Extras = []pricing.ExtraAmount{}
	}
	if q.RefundProtection != nil {
		v.RefundProtection = &RefundView{Percent: json.Number(q.RefundProtection.Percent.String()), Amount: q.RefundProtection.Amount}
	}
	return v
}

// OnSale refuses an event whose onSaleAt is still ahead at now, on either
// surface: its detail shows it, but nothing can be quoted, bought or held.
func OnSale(ev *catalog.CompiledEvent, now time.Time) *apierr.Error {
	if !ev.SaleStarted(now) {
		return apierr.Of("EVENT_NOT_AVAILABLE", "not on sale yet; on sale from %s", ev.OnSaleAt).With("onSaleAt", ev.OnSaleAt)
	}
	return nil
}
