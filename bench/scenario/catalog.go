package scenario

import (
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// unlimited is the per-minute rate limit of bench channels: the bench
// measures capacity, not the limiter's refusals (the limiter still runs).
const unlimited = 1_000_000_000

// Prices of the bench catalogs.
const (
	ticketPrice = money.Cents(2500)
	ticketFee   = money.Cents(150)
	seatPrice   = money.Cents(4000)
	seatFee     = money.Cents(200)
)

// channel is a bench partner channel of one run.
type channel struct {
	ID      string
	Key     api.Key
	Signing string
}

// newChannel names the channel tag of a run.
func newChannel(run, tag string) channel {
	s := run + "_" + tag
	return channel{ID: "ch_" + s, Key: api.Key{Key: "ck_" + s, Secret: "cs_" + s + "_secret"}, Signing: "sk_" + s + "_signing"}
}

// doc returns the channel's catalog entry with every limit raised.
func (c channel) doc(allow []string) catalog.Channel {
	return catalog.Channel{
		ID: c.ID, Name: "Bench " + c.ID, Key: c.Key.Key, Secret: c.Key.Secret, SigningKey: c.Signing,
		Scopes: []string{catalog.ScopeCatalogRead, catalog.ScopeOrdersWrite, catalog.ScopeOrdersConfirm,
			catalog.ScopeOrdersRead, catalog.ScopeSessionsWrite},
		IPAllowlist: allow,
		Settlement:  catalog.SettlementPartnerRemit,
		RateLimits: catalog.RateLimits{Catalog: unlimited, Status: unlimited, Checkout: unlimited,
			Confirm: unlimited, Session: unlimited},
	}
}

// tenant is the bench host of a run, holding its events.
func tenant(run string, events ...catalog.Event) catalog.Tenant {
	return catalog.Tenant{ID: "t_" + run, Name: "Bench host " + run, NotifyEmail: "host@bench.example.com",
		PublishableKeys: []catalog.PublishableKey{}, Events: events}
}

// gaEvent is an on-sale general-admission event with one ticket type of
// the given capacity, also the event's capacity.
func gaEvent(id, ticketID string, capacity int64, channels []string) catalog.Event {
	c := capacity
	return catalog.Event{
		ID: id, ShortID: id, Slug: id, Name: "Bench " + id, StartsAt: "2030-01-01T18:00:00Z",
		Status: catalog.StatusOnSale, Channels: channels, Capacity: &c,
		Pricing: &catalog.Pricing{FeePerTicket: ticketFee},
		Tickets: []catalog.Ticket{{ID: ticketID, Name: "General", Price: ticketPrice, Capacity: capacity, MaxPerOrder: 10}},
	}
}

// seatedEvent is an on-sale seated event of rows x seats, rows labelled
// R1, R2, ... and seats "R<row>-<n>", all priced.
func seatedEvent(id string, rows, seats int, channels []string) catalog.Event {
	price := seatPrice
	sm := &catalog.SeatMap{Categories: []catalog.Category{{ID: "stalls", Name: "Stalls", Price: &price}}}
	for r := 1; r <= rows; r++ {
		sm.Rows = append(sm.Rows, catalog.Row{Label: rowLabel(r), Seats: seats, Category: "stalls"})
	}
	return catalog.Event{
		ID: id, ShortID: id, Slug: id, Name: "Bench " + id, StartsAt: "2030-01-01T18:00:00Z",
		Status: catalog.StatusOnSale, Channels: channels, Tickets: []catalog.Ticket{},
		Pricing: &catalog.Pricing{FeePerTicket: seatFee, FeePercent: decimal.Zero, VATPercent: decimal.Zero}, SeatMap: sm,
	}
}

func rowLabel(r int) string { return "R" + strconv.Itoa(r) }

// seatLabel is seat n of row r.
func seatLabel(r, n int) string { return rowLabel(r) + "-" + strconv.Itoa(n) }
