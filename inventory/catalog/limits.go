package catalog

import "github.com/ticketd/ticketd/inventory/money"

// Limits of a catalog document, all in one place (README, Provisioning;
// docs/decisions.md). A document beyond one is refused as INVALID_CATALOG
// naming the list or field. They are generous for real venues and sales and
// keep every endpoint fast on the largest event they allow: the seat
// availability of a 100,000-seat event with every seat held is one 1 MB
// answer read and encoded in 50-200 ms on a busy 2-core machine, and that
// event decodes, validates and compiles in a few milliseconds
// (limits_bench_test.go).
const (
	// Per document.
	MaxTenants  = 1000
	MaxChannels = 1000

	// Per tenant.
	MaxEventsPerTenant = 1000
	MaxPublishableKeys = 100
	MaxKeyDomains      = 100 // Origin domains of one publishable key

	// Per event.
	MaxEventChannels = 1000 // channels the event is sold through
	MaxTickets       = 100  // ticket types
	MaxExtras        = 100
	MaxShowings      = 1000
	MaxDiscountCodes = 1000

	// Per seat map (one per event). Seats are rows x seats plus table
	// seats: each seat is a Redis key the availability endpoint reads.
	MaxEventSeats = 100_000
	MaxRows       = 10_000
	MaxRowSeats   = 1000
	MaxTables     = 1000
	MaxTableSeats = 100
	MaxGAAreas    = 100
	MaxCategories = 100

	// Per name (tenant, event, ticket, extra, category, GA area, channel),
	// in characters. Names are printed into QR admissions, e-mail subjects
	// and ticket pages: the longest admission label still makes a QR code
	// a phone screen shows (inventory/tickets tests it).
	MaxName = 200

	// Per order: the most admissions one order, registration or hold
	// token may hold, and what an event's maxPerOrder is when the catalog
	// sets none (decisions.md, Storefront surface: a buyer, or a bot, holds
	// at most this many places with one request).
	MaxOrderAdmissions = 1000
	DefaultMaxPerOrder = 10

	// Per waiting room (Event.WaitingRoom): the seconds an admitted buyer
	// has to take a hold, and the places one identity may have in the queue.
	MinRoomPassTTL      = 10
	MaxRoomPassTTL      = 3600
	DefaultRoomPassTTL  = 120
	MaxRoomPerBuyer     = 10
	DefaultRoomPerBuyer = 1
	// A room's proof of work, in leading zero bits: each bit doubles a
	// joiner's work (12 bits: 4,096 hashes on average, a blink in a
	// browser; 22: about 4 million, seconds).
	MaxRoomWorkBits    = 26
	DefaultRoomMinBits = 12
	DefaultRoomMaxBits = 22

	// Per channel. The allowlist is scanned on every partner call.
	MaxAllowlist = 100
	minSecretLen = 8
)

// MaxAmount is the largest amount a catalog may set (a ticket, category,
// extra or discount amount, a fee per ticket): $1,000,000.00. Carts are
// bounded (1,000 admissions, 50 lines of 1,000 extras), so with it no
// quote, fee, VAT or refund protection can leave 2^53 cents, the range
// money.Parse and JSON clients read exactly; without it a cart of 1,000
// tickets at the largest amount wrapped int64 into a negative total
// (FuzzValidate's bound, inventory/pricing).
const MaxAmount money.Cents = 100_000_000
