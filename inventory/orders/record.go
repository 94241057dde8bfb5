// Package orders runs the order state machine of both surfaces in Redis:
// reserve (pending), confirm (paid, claims inventory), status. Every state
// change is one Lua script; a paid order is queued on its partition's paid
// stream by the same script that marks it paid.
package orders

import (
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/money"
)

// Record is everything the sync worker writes to Postgres for a paid order:
// one record, built once where the sale is made (a surface's checkout,
// then reserve or register give it its ids) and encoded once (Encode),
// stored with the pending order as JSON ("rec") without its Tickets (those
// are kept once, as the order's "tix") nor its order and event ids (the
// order id carries both); zero amounts are left out too, as every byte goes
// to a durable Redis' append-only file. The confirm script queues a
// paid-stream entry that names the order ("order", "ref", "paidAt"); the
// sync worker reads "rec" and "tix" from the order hash (FillRecords) and
// decodes them with the entry (DecodePaid) into the row it writes: its
// lines and tickets, the bytes Encode made (LinesJSON, TicketsJSON), are
// what the order's Postgres row keeps (orders.lines and orders.tickets,
// jsonb: sync/schema migration 008), never encoded again.
type Record struct {
	OrderID    string `json:"orderId,omitempty"`
	EventID    string `json:"eventId,omitempty"`
	TenantID   string `json:"tenantId"`
	ChannelID  string `json:"channelId,omitempty"` // "" for storefront orders
	Source     string `json:"source"`              // "channel" or "storefront"
	BuyerName  string `json:"buyerName"`
	BuyerEmail string `json:"buyerEmail"`
	BuyerPhone string `json:"buyerPhone,omitempty"`
	ShowingID  string `json:"showingId,omitempty"`
	// SuccessCallbackURL is where the embedded checkout sends the buyer
	// after a successful purchase.
	SuccessCallbackURL string      `json:"successCallbackUrl,omitempty"`
	DiscountCode       string      `json:"discountCode,omitempty"`
	Currency           string      `json:"currency"`
	Subtotal           money.Cents `json:"subtotal"`
	Discount           money.Cents `json:"discount,omitempty"`
	Extras             money.Cents `json:"extras,omitempty"`
	Fee                money.Cents `json:"fee,omitempty"`
	VAT                money.Cents `json:"vat,omitempty"`
	RefundProtection   money.Cents `json:"refundProtection,omitempty"`
	Total              money.Cents `json:"total"`
	Lines              []Line      `json:"lines"`
	Tickets            []Ticket    `json:"tickets,omitempty"`
	CreatedAtMs        int64       `json:"createdAtMs"`
	// Caller, IdempotencyKey and Fingerprint are the reserve's idempotency
	// record: kept with the paid order so that a rebuild of Redis restores
	// it, and a retried reserve replays the paid order instead of making a
	// second one.
	Caller         string `json:"caller,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Fingerprint    string `json:"fingerprint,omitempty"`
	// Set from the stream entry, not stored at reserve.
	PartnerReference string `json:"partnerReference,omitempty"`
	PaidAtMs         int64  `json:"paidAtMs,omitempty"`
	// LinesJSON and TicketsJSON are Lines and Tickets as the stored record
	// spells them, set by DecodePaid: the row's jsonb columns take them as
	// they are ("" when the entry did not carry them apart).
	LinesJSON   string `json:"-"`
	TicketsJSON string `json:"-"`
}

// Encode is the record's stored form, made once when the sale is made
// (reserve, register): rec, the record without its Tickets, OrderID and
// EventID, and tix, its Tickets, which confirm answers and the order's row
// keeps as they are.
func (r Record) Encode() (rec, tix []byte, err error) {
	if tix, err = json.Marshal(r.Tickets); err != nil {
		return nil, nil, fmt.Errorf("encode tickets: %w", err)
	}
	r.Tickets, r.OrderID, r.EventID = nil, "", ""
	if rec, err = json.Marshal(r); err != nil {
		return nil, nil, fmt.Errorf("encode record: %w", err)
	}
	return rec, tix, nil
}

// Line kinds.
const (
	LineTicket = "ticket"
	LineSeat   = "seat"
	LineArea   = "area"
	LineTable  = "table"
	LineExtra  = "extra"
)

// Line is one priced line of an order.
type Line struct {
	Kind      string      `json:"kind"`
	RefID     string      `json:"refId"` // ticket, area, table or extra id; seat label
	Quantity  int64       `json:"quantity"`
	UnitPrice money.Cents `json:"unitPrice"`
	Amount    money.Cents `json:"amount"`
}

// Ticket is one admission issued when the order is paid.
type Ticket struct {
	TicketID string `json:"ticketId"`
	Label    string `json:"label"`
	Kind     string `json:"kind,omitempty"`  // a Line kind: ticket, seat, area or table
	RefID    string `json:"refId,omitempty"` // ticket type, seat label, area or table id
}

// Stream entry fields of the paid stream (and, for the record and the
// tickets, of the order hash).
const (
	StreamRecord  = "rec"
	StreamTickets = "tix"
	StreamRef     = "ref"
	StreamPaidAt  = "paidAt"
	StreamOrderID = "order"
)

// Order sources (orders.source in Postgres).
const (
	SourceChannel    = "channel"
	SourceStorefront = "storefront"
)

// StorefrontOwner is the owner (the order hash's "ch", the minting owner
// of its id) of a tenant's storefront registrations: no channel id holds a
// ':', so no partner can confirm one. A rebuild gives restored copies of
// storefront orders this owner again.
func StorefrontOwner(tenantID string) string { return "sf:" + tenantID }
