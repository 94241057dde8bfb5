// Package pricing turns a cart into a quote (decisions.md section 2): it
// checks every line against the compiled event, prices it in cents and lists
// the capacity counters a sale of the cart claims. Quote and reserve both
// call Price, so the same cart always gives the same total.
package pricing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/seats"
)

// Limits of one cart. They keep a request's work (and its Lua script's
// keys) bounded; a real buyer never comes near them.
const (
	MaxQuantity = catalog.MaxOrderAdmissions
	MaxLines    = 50  // per kind of line
	MaxSeats    = 100 // seat labels per cart
)

// TicketLine is one element of `tickets`.
type TicketLine struct {
	TicketID string `json:"ticketId"`
	Quantity int64  `json:"quantity"`
}

// AreaLine is one element of `gaSelections`.
type AreaLine struct {
	AreaID   string `json:"areaId"`
	Quantity int64  `json:"quantity"`
}

// TableLine is one element of `tableSelections`.
type TableLine struct {
	TableID string `json:"tableId"`
}

// ExtraLine is one element of `extras` in a cart.
type ExtraLine struct {
	ExtraID  string `json:"extraId"`
	Quantity int64  `json:"quantity"`
}

// Cart is the cart fields of quote and reserve, both surfaces.
type Cart struct {
	Tickets               []TicketLine
	SelectedTicketID      string
	Quantity              *int64
	SeatLabels            []string
	GASelections          []AreaLine
	TableSelections       []TableLine
	Extras                []ExtraLine
	DiscountCode          string
	ShowingID             string
	AccessCode            string
	RefundProtectionOptIn bool
	// Seller is the share of the event the sale claims
	// (capacity.SellerField: the storefront's, or a channel's); set by
	// the surface, never decoded from a body.
	Seller string `json:"-"`
}

// ExtraAmount is one priced extra of a quote.
type ExtraAmount struct {
	ExtraID  string      `json:"extraId"`
	Quantity int64       `json:"quantity"`
	Amount   money.Cents `json:"amount"`
}

// RefundProtection is the refund-protection price of an opted-in cart.
type RefundProtection struct {
	Percent decimal.Decimal
	Amount  money.Cents
}

// Admission kinds: the line kinds that let people in.
const (
	AdmitTicket = orders.LineTicket
	AdmitSeat   = orders.LineSeat
	AdmitArea   = orders.LineArea
	AdmitTable  = orders.LineTable
)

// Admission is one person let in: one issued ticket.
type Admission struct {
	Kind  string
	RefID string // ticket type, seat label, area or table id
	Label string // printed on the ticket
}

// Quote is a priced cart.
type Quote struct {
	Subtotal         money.Cents
	Discount         money.Cents
	ExtrasTotal      money.Cents
	Fee              money.Cents
	VAT              money.Cents
	Total            money.Cents
	Extras           []ExtraAmount
	RefundProtection *RefundProtection
	Lines            []orders.Line
	Admissions       []Admission
	// PaidAdmissions counts admissions with a price above zero; the
	// per-ticket fee is charged on those.
	PaidAdmissions int64
	// Claims are the capacity counters a sale takes: "t:<ticket>",
	// "a:<area>", "tb:<table>", "x:<extra>", and "ev" plus "sh:<showing>"
	// with the number of admissions.
	Claims          map[string]int64
	SeatLabels      []string
	DiscountCode    string // as written in the catalog; "" when none
	DiscountMaxUses int64  // 0: unlimited
}

func quantityErr(what string, q int64) *apierr.Error {
	return apierr.Of("INVALID_QUANTITY", "%s quantity must be 1 to %d, got %d", what, MaxQuantity, q).With("quantity", q)
}

func validQuantity(q int64) bool { return q >= 1 && q <= MaxQuantity }

// Price checks and prices cart against ev.
func Price(ev *catalog.CompiledEvent, cart Cart) (Quote, *apierr.Error) {
	var q Quote
	// Bounded before anything else, so an oversized cart costs no work.
	if len(cart.Tickets) > MaxLines || len(cart.GASelections) > MaxLines || len(cart.TableSelections) > MaxLines || len(cart.Extras) > MaxLines {
		return q, apierr.Invalid("a cart has at most %d lines of each kind", MaxLines)
	}
	lines, e := ticketLines(cart)
	if e != nil {
		return q, e
	}
	if len(lines) == 0 && len(cart.SeatLabels) == 0 && len(cart.GASelections) == 0 && len(cart.TableSelections) == 0 {
		return q, apierr.Invalid("the cart is empty: send tickets, selectedTicketId, seatLabels, gaSelections or tableSelections")
	}
	if len(cart.SeatLabels) > MaxSeats {
		return q, apierr.Invalid("a cart has at most %d seats", MaxSeats)
	}
	if e := CheckShowing(ev, cart.ShowingID); e != nil {
		return q, e
	}
	if !ev.Seated() && (len(cart.SeatLabels) > 0 || len(cart.GASelections) > 0 || len(cart.TableSelections) > 0) {
		return q, seats.ErrNotSeated
	}

	for _, l := range lines {
		t := ev.Tickets[l.TicketID]
		if t == nil || (t.Hidden && (cart.AccessCode == "" || cart.AccessCode != t.AccessCode)) {
			return q, apierr.Of("TICKET_NOT_FOUND", "ticket %q is not on sale for this event", l.TicketID)
		}
		if limit := ev.TicketMaxPerOrder(t); l.Quantity > limit {
			return q, apierr.MaxPerOrder(limit, fmt.Sprintf("at most %d of ticket %q per order", limit, t.ID))
		}
		if e := q.fits(ev, l.Quantity); e != nil {
			return q, e
		}
		amount := t.Price * money.Cents(l.Quantity)
		q.Subtotal += amount
		q.Lines = append(q.Lines, orders.Line{Kind: orders.LineTicket, RefID: t.ID, Quantity: l.Quantity, UnitPrice: t.Price, Amount: amount})
		for range l.Quantity {
			q.admit(AdmitTicket, t.ID, t.Name, t.Price)
		}
	}
	if e := q.seats(ev, cart.SeatLabels); e != nil {
		return q, e
	}
	if e := q.areas(ev, cart.GASelections); e != nil {
		return q, e
	}
	if e := q.tables(ev, cart.TableSelections); e != nil {
		return q, e
	}
	if e := q.extras(ev, cart.Extras); e != nil {
		return q, e
	}
	if e := q.discount(ev, cart.DiscountCode); e != nil {
		return q, e
	}

	admissions := int64(len(q.Admissions))
	if admissions > MaxQuantity {
		return q, apierr.Of("INVALID_QUANTITY", "a cart admits at most %d people, this one %d", MaxQuantity, admissions).With("quantity", admissions)
	}
	q.Claims = orders.ClaimsOf(q.Lines, cart.ShowingID, cart.Seller)

	p := ev.Pricing
	net := q.Subtotal - q.Discount
	if net > 0 {
		q.Fee = p.FeePerTicket*money.Cents(q.PaidAdmissions) + net.Percent(p.FeePercent)
	}
	q.VAT = (net + q.ExtrasTotal + q.Fee).Percent(p.VATPercent)
	q.Total = net + q.ExtrasTotal + q.Fee + q.VAT
	if cart.RefundProtectionOptIn && p.RefundProtectionPercent.IsPositive() {
		rp := &RefundProtection{Percent: p.RefundProtectionPercent, Amount: (net + q.ExtrasTotal).Percent(p.RefundProtectionPercent)}
		q.RefundProtection = rp
		q.Total += rp.Amount
	}
	return q, nil
}

// ticketLines normalises `tickets` and the selectedTicketId shorthand into
// one line per ticket type, in the order first named.
func ticketLines(cart Cart) ([]TicketLine, *apierr.Error) {
	if cart.SelectedTicketID != "" {
		if len(cart.Tickets) > 0 {
			return nil, apierr.Invalid("send either tickets or selectedTicketId, not both")
		}
		n := int64(1)
		if cart.Quantity != nil {
			n = *cart.Quantity
		}
		if !validQuantity(n) {
			return nil, quantityErr("ticket", n)
		}
		return []TicketLine{{TicketID: cart.SelectedTicketID, Quantity: n}}, nil
	}
	if cart.Quantity != nil {
		return nil, apierr.Invalid("quantity goes with selectedTicketId; in tickets each line has its own quantity")
	}
	var out []TicketLine
	at := map[string]int{}
	for i, l := range cart.Tickets {
		if l.TicketID == "" {
			return nil, apierr.Invalid("tickets[%d].ticketId is required", i)
		}
		if !validQuantity(l.Quantity) {
			return nil, quantityErr("ticket", l.Quantity)
		}
		if j, ok := at[l.TicketID]; ok {
			out[j].Quantity += l.Quantity
			if out[j].Quantity > MaxQuantity {
				return nil, quantityErr("ticket", out[j].Quantity)
			}
			continue
		}
		at[l.TicketID] = len(out)
		out = append(out, l)
	}
	return out, nil
}

// maxPerOrderError is the 400 of a cart, or a hold token, beyond the
// event's maxPerOrder admissions.
func maxPerOrderError(limit int64) *apierr.Error {
	return apierr.MaxPerOrder(limit, fmt.Sprintf(
		"an order holds at most %d admissions for this event (tickets, seats, area places and table seats together)", limit))
}

// fits refuses more admissions beyond the event's maxPerOrder, before
// they are built.
func (q *Quote) fits(ev *catalog.CompiledEvent, more int64) *apierr.Error {
	if int64(len(q.Admissions))+more > ev.MaxPerOrder {
		return maxPerOrderError(ev.MaxPerOrder)
	}
	return nil
}

func (q *Quote) admit(kind, ref, label string, price money.Cents) {
	q.Admissions = append(q.Admissions, Admission{Kind: kind, RefID: ref, Label: label})
	if price > 0 {
		q.PaidAdmissions++
	}
}

func (q *Quote) seats(ev *catalog.CompiledEvent, labels []string) *apierr.Error {
	seen := map[string]bool{}
	var unpriced []string
	var prices []money.Cents // of q.SeatLabels
	for _, label := range labels {
		if seen[label] {
			continue
		}
		seen[label] = true
		cat, ok := ev.SeatCategory(label)
		if !ok {
			return apierr.SeatNotFound([]string{label})
		}
		if cat == nil || cat.Price == nil {
			unpriced = append(unpriced, label)
			continue
		}
		q.SeatLabels = append(q.SeatLabels, label)
		prices = append(prices, *cat.Price)
	}
	if len(unpriced) > 0 {
		return apierr.SeatNotPriced(unpriced)
	}
	if e := q.fits(ev, int64(len(q.SeatLabels))); e != nil {
		return e
	}
	for i, label := range q.SeatLabels {
		price := prices[i]
		q.Subtotal += price
		q.Lines = append(q.Lines, orders.Line{Kind: orders.LineSeat, RefID: label, Quantity: 1, UnitPrice: price, Amount: price})
		q.admit(AdmitSeat, label, label, price)
	}
	return nil
}

func (q *Quote) areas(ev *catalog.CompiledEvent, sel []AreaLine) *apierr.Error {
	qty := map[string]int64{}
	var ids, unpriced []string
	for _, l := range sel {
		a := ev.Areas[l.AreaID]
		if a == nil {
			return apierr.Of("AREA_NOT_FOUND", "area %q is not on this event's seat map", l.AreaID)
		}
		if !validQuantity(l.Quantity) || qty[a.ID]+l.Quantity > MaxQuantity {
			return quantityErr("area", l.Quantity)
		}
		if _, ok := qty[a.ID]; !ok {
			ids = append(ids, a.ID)
			if c := ev.Categories[a.Category]; c == nil || c.Price == nil {
				unpriced = append(unpriced, a.ID)
			}
		}
		qty[a.ID] += l.Quantity
	}
	if len(unpriced) > 0 {
		return apierr.SeatNotPriced(unpriced)
	}
	var n int64
	for _, id := range ids {
		n += qty[id]
	}
	if e := q.fits(ev, n); e != nil {
		return e
	}
	for _, id := range ids {
		a := ev.Areas[id]
		price := *ev.Categories[a.Category].Price
		n := qty[id]
		amount := price * money.Cents(n)
		q.Subtotal += amount
		q.Lines = append(q.Lines, orders.Line{Kind: orders.LineArea, RefID: id, Quantity: n, UnitPrice: price, Amount: amount})
		for range n {
			q.admit(AdmitArea, id, a.Name, price)
		}
	}
	return nil
}

func (q *Quote) tables(ev *catalog.CompiledEvent, sel []TableLine) *apierr.Error {
	seen := map[string]bool{}
	var ids, unpriced []string
	for _, l := range sel {
		t := ev.Tables[l.TableID]
		if t == nil {
			return apierr.Of("TABLE_NOT_FOUND", "table %q is not on this event's seat map", l.TableID)
		}
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		ids = append(ids, t.ID)
		if c := ev.Categories[t.Category]; c == nil || c.Price == nil {
			unpriced = append(unpriced, t.ID)
		}
	}
	if len(unpriced) > 0 {
		return apierr.SeatNotPriced(unpriced)
	}
	var n int64
	for _, id := range ids {
		n += int64(ev.Tables[id].Seats)
	}
	if e := q.fits(ev, n); e != nil {
		return e
	}
	for _, id := range ids {
		t := ev.Tables[id]
		price := *ev.Categories[t.Category].Price
		amount := price * money.Cents(t.Seats)
		q.Subtotal += amount
		q.Lines = append(q.Lines, orders.Line{Kind: orders.LineTable, RefID: id, Quantity: int64(t.Seats), UnitPrice: price, Amount: amount})
		for n := 1; n <= t.Seats; n++ {
			q.admit(AdmitTable, id, id+" seat "+strconv.Itoa(n), price)
		}
	}
	return nil
}

func (q *Quote) extras(ev *catalog.CompiledEvent, sel []ExtraLine) *apierr.Error {
	qty := map[string]int64{}
	var ids []string
	for _, l := range sel {
		x := ev.Extras[l.ExtraID]
		if x == nil {
			return apierr.Of("EXTRA_NOT_FOUND", "extra %q is not offered for this event", l.ExtraID)
		}
		if !validQuantity(l.Quantity) || qty[x.ID]+l.Quantity > MaxQuantity {
			return quantityErr("extra", l.Quantity)
		}
		if _, ok := qty[x.ID]; !ok {
			ids = append(ids, x.ID)
		}
		qty[x.ID] += l.Quantity
	}
	for _, id := range ids {
		x := ev.Extras[id]
		n := qty[id]
		amount := x.Price * money.Cents(n)
		q.ExtrasTotal += amount
		q.Extras = append(q.Extras, ExtraAmount{ExtraID: id, Quantity: n, Amount: amount})
		q.Lines = append(q.Lines, orders.Line{Kind: orders.LineExtra, RefID: id, Quantity: n, UnitPrice: x.Price, Amount: amount})
	}
	return nil
}

// discount applies a code: to the whole subtotal, or to the lines of the
// tickets it names (one line per ticket type: ticketLines merged them).
func (q *Quote) discount(ev *catalog.CompiledEvent, code string) *apierr.Error {
	code = strings.TrimSpace(code)
	if code == "" {
		return nil
	}
	dc := ev.Discounts[strings.ToUpper(code)]
	if dc == nil {
		return apierr.Of("INVALID_DISCOUNT_CODE", "discount code %q is not valid for this event", code)
	}
	base := q.Subtotal
	if len(dc.TicketIDs) > 0 {
		base = 0
		for _, l := range q.Lines {
			if l.Kind == orders.LineTicket && slices.Contains(dc.TicketIDs, l.RefID) {
				base += l.Amount
			}
		}
	}
	switch {
	case dc.Percent != nil:
		q.Discount = base.Percent(*dc.Percent)
	case dc.Amount != nil:
		q.Discount = *dc.Amount
	}
	q.Discount = min(q.Discount, base)
	q.DiscountCode = dc.Code
	if dc.MaxUses != nil {
		q.DiscountMaxUses = *dc.MaxUses
	}
	return nil
}

// CheckShowing checks a request's showingId against the event: required
// on an event with showings and one of them, absent on one without.
func CheckShowing(ev *catalog.CompiledEvent, showingID string) *apierr.Error {
	if len(ev.Event.Showings) > 0 {
		if showingID == "" {
			return apierr.Of("SHOWING_REQUIRED", "this event has several showings: send showingId")
		}
		if ev.Showings[showingID] == nil {
			return apierr.Of("SHOWING_NOT_FOUND", "showing %q is not a showing of this event", showingID)
		}
	} else if showingID != "" {
		return apierr.Of("SHOWING_NOT_FOUND", "this event has no showings; omit showingId")
	}
	return nil
}
