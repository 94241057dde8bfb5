// Package catalog holds the operator's catalog document (decisions.md
// section 1): its JSON shape, its validation, and the compiled, indexed form
// every node keeps in memory to price carts and authenticate callers.
package catalog

import (
	"github.com/shopspring/decimal"

	"github.com/ticketd/ticketd/inventory/money"
)

// Document is what PUT /v1/admin/catalog and `ticketctl apply -f` take.
type Document struct {
	Tenants  []Tenant  `json:"tenants"`
	Channels []Channel `json:"channels"`
}

// Tenant is an event host.
type Tenant struct {
	ID              string           `json:"id"`
	Name            string           `json:"name"`
	NotifyEmail     string           `json:"notifyEmail"`
	PublishableKeys []PublishableKey `json:"publishableKeys"`
	Events          []Event          `json:"events"`
}

// PublishableKey is a storefront key with its Origin allowlist.
type PublishableKey struct {
	Key     string   `json:"key"`
	Domains []string `json:"domains"`
	Enabled bool     `json:"enabled"`
}

// Event statuses.
const (
	StatusDraft     = "draft"
	StatusOnSale    = "on_sale"
	StatusCancelled = "cancelled"
)

// Event is one event of a tenant. TenantID is filled in on load; it is not
// part of the document.
type Event struct {
	ID            string         `json:"id"`
	TenantID      string         `json:"tenantId,omitempty"`
	ShortID       string         `json:"shortId"`
	Slug          string         `json:"slug"`
	Name          string         `json:"name"`
	StartsAt      string         `json:"startsAt"`
	Status        string         `json:"status"`
	OnSaleAt      string         `json:"onSaleAt,omitempty"`
	Storefront    bool           `json:"storefront"`
	Channels      []string       `json:"channels"`
	Capacity      *int64         `json:"capacity,omitempty"`
	Showings      []Showing      `json:"showings,omitempty"`
	Pricing       *Pricing       `json:"pricing,omitempty"`
	Tickets       []Ticket       `json:"tickets"`
	Extras        []Extra        `json:"extras,omitempty"`
	DiscountCodes []DiscountCode `json:"discountCodes,omitempty"`
	SeatMap       *SeatMap       `json:"seatMap,omitempty"`
	// MaxTicketsPerBuyer caps the admissions one buyer (normalised e-mail)
	// gets over the event's storefront registrations and paid partner
	// orders (decisions.md section 7); nil: no limit.
	MaxTicketsPerBuyer *int64 `json:"maxTicketsPerBuyer,omitempty"`
	// MaxPerOrder caps the admissions of one order, registration or hold
	// token (tickets, seats, GA area places and tables' seats together);
	// nil: DefaultMaxPerOrder, raised to what the event's own ticket
	// types and tables need (CompiledEvent.MaxPerOrder).
	MaxPerOrder *int64 `json:"maxPerOrder,omitempty"`
	// WaitingRoom queues the event's buyers before admission; nil: no
	// room. Not with showings yet; on a seated event, seat rows alone and
	// no partner allocation (validate.go seatedRoom).
	// Compiled into CompiledEvent.Room.
	WaitingRoom *WaitingRoom `json:"waitingRoom,omitempty"`
}

// Values of WaitingRoom.Mode.
const (
	RoomModeFair = "fair"
	RoomModeFIFO = "fifo"
)

// WaitingRoom is an event's waiting room: buyers queue from OpensAt and are
// admitted from SalesStartAt (T0). An admitted buyer has PassTTL seconds
// to take a hold; one identity (e-mail or device) has one place, for at
// most PerBuyer tickets.
// Mode RoomModeFair (also when empty) shuffles everyone who joined before
// T0 at T0 and queues later arrivals in order of arrival; RoomModeFIFO
// queues everyone in order of arrival. Nil PassTTL and PerBuyer take
// DefaultRoomPassTTL and DefaultRoomPerBuyer.
type WaitingRoom struct {
	OpensAt      string `json:"opensAt"`
	SalesStartAt string `json:"salesStartAt"`
	PassTTL      *int64 `json:"passTtl,omitempty"`
	PerBuyer     *int64 `json:"perBuyer,omitempty"`
	Mode         string `json:"mode,omitempty"`
	// ProofOfWork, when set, makes every join carry a solved challenge
	// (inventory/room): a bot pays for each identity it queues.
	ProofOfWork *ProofOfWork `json:"proofOfWork,omitempty"`
	// Allocations are the admissions each partner channel of the event
	// (Event.Channels, every one of them) sells outside the room: channel
	// id -> units. The room admits buyers to the stock they leave, so a
	// partner never sells a ticket an admitted buyer was promised.
	Allocations map[string]int64 `json:"allocations,omitempty"`
}

// ProofOfWork is a waiting room's proof of work: the difficulty, in
// leading zero bits of a SHA-256, starts at minBits and rises by one each
// time the joins a node sees a second double past a base rate, up to
// maxBits.
type ProofOfWork struct {
	MinBits *int64 `json:"minBits,omitempty"`
	MaxBits *int64 `json:"maxBits,omitempty"`
}

// Showing is one performance of a multi-showing event.
type Showing struct {
	ID       string `json:"id"`
	StartsAt string `json:"startsAt"`
	Capacity *int64 `json:"capacity,omitempty"`
}

// Pricing holds the fee, VAT and refund-protection settings of an event.
type Pricing struct {
	FeePerTicket            money.Cents     `json:"feePerTicket"`
	FeePercent              decimal.Decimal `json:"feePercent"`
	VATPercent              decimal.Decimal `json:"vatPercent"`
	RefundProtectionPercent decimal.Decimal `json:"refundProtectionPercent"`
}

// Ticket is a GA ticket type. MaxPerOrder caps it in one order; 0
// (absent) leaves it to the event's (CompiledEvent.TicketMaxPerOrder).
type Ticket struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Price       money.Cents `json:"price"`
	Capacity    int64       `json:"capacity"`
	Hidden      bool        `json:"hidden,omitempty"`
	AccessCode  string      `json:"accessCode,omitempty"`
	MaxPerOrder int64       `json:"maxPerOrder,omitempty"`
}

// Extra is a priced add-on.
type Extra struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Price    money.Cents `json:"price"`
	Capacity *int64      `json:"capacity,omitempty"`
}

// DiscountCode is a promo code: Percent or Amount, optionally limited to
// some tickets and to MaxUses paid orders.
type DiscountCode struct {
	Code      string           `json:"code"`
	Percent   *decimal.Decimal `json:"percent,omitempty"`
	Amount    *money.Cents     `json:"amount,omitempty"`
	MaxUses   *int64           `json:"maxUses,omitempty"`
	TicketIDs []string         `json:"ticketIds,omitempty"`
}

// SeatMap is the reserved-seating layout of an event.
type SeatMap struct {
	Categories []Category `json:"categories"`
	Rows       []Row      `json:"rows"`
	GAAreas    []GAArea   `json:"gaAreas,omitempty"`
	Tables     []Table    `json:"tables,omitempty"`
	// SingleSeatRule refuses holds that strand a free seat (decisions.md
	// §7): SeatRuleOff (also when empty), SeatRuleLenient or SeatRuleStrict.
	SingleSeatRule string `json:"singleSeatRule,omitempty"`
}

// Values of SeatMap.SingleSeatRule. Lenient refuses a hold that leaves one
// free seat alone between two taken seats of a row; strict also one alone
// at a row's end.
const (
	SeatRuleOff     = "off"
	SeatRuleLenient = "lenient"
	SeatRuleStrict  = "strict"
)

// Rule is the map's single-seat rule, SeatRuleOff when none is set.
func (sm *SeatMap) Rule() string {
	if sm == nil || sm.SingleSeatRule == "" {
		return SeatRuleOff
	}
	return sm.SingleSeatRule
}

// Category prices the seats, areas and tables that name it. A nil Price
// makes them unsellable (SEAT_NOT_PRICED).
type Category struct {
	ID    string       `json:"id"`
	Name  string       `json:"name"`
	Price *money.Cents `json:"price,omitempty"`
}

// Row is a row of numbered seats: labels "<Label>-1" … "<Label>-<Seats>".
type Row struct {
	Label    string `json:"label"`
	Seats    int    `json:"seats"`
	Category string `json:"category"`
}

// GAArea is a standing area inside a seated event.
type GAArea struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	Category string `json:"category"`
}

// Table is booked whole; each of its seats is an admission.
type Table struct {
	ID       string `json:"id"`
	Seats    int    `json:"seats"`
	Category string `json:"category"`
}

// Settlement values of a channel.
const SettlementPartnerRemit = "partner_remit"

// Channel is a partner (reseller, app) selling server to server.
type Channel struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Key         string     `json:"key"`
	Secret      string     `json:"secret,omitempty"`
	SigningKey  string     `json:"signingKey,omitempty"`
	Scopes      []string   `json:"scopes"`
	IPAllowlist []string   `json:"ipAllowlist"`
	Settlement  string     `json:"settlement"`
	RateLimits  RateLimits `json:"rateLimits,omitempty"`
}

// RateLimits are per-minute overrides; zero means interface.md's default.
type RateLimits struct {
	Catalog  int64 `json:"catalog,omitempty"`
	Status   int64 `json:"status,omitempty"`
	Checkout int64 `json:"checkout,omitempty"`
	Confirm  int64 `json:"confirm,omitempty"`
	Session  int64 `json:"session,omitempty"`
}

// Scopes a channel key may hold.
const (
	ScopeCatalogRead   = "catalog:read"
	ScopeOrdersWrite   = "orders:write"
	ScopeOrdersConfirm = "orders:confirm"
	ScopeOrdersRead    = "orders:read"
	ScopeSessionsWrite = "sessions:write"
)

// BuyerLimit is the event's maxTicketsPerBuyer, 0 when it sets none.
func (e *Event) BuyerLimit() int64 {
	if e.MaxTicketsPerBuyer == nil {
		return 0
	}
	return *e.MaxTicketsPerBuyer
}
