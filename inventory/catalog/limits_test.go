package catalog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// rows returns n rows of seats each, labelled R0, R1, ... in category "stalls".
func rows(n, seats int) []catalog.Row {
	out := make([]catalog.Row, n)
	for i := range out {
		out[i] = catalog.Row{Label: fmt.Sprint("R", i), Seats: seats, Category: "stalls"}
	}
	return out
}

func tables(n, seats int) []catalog.Table {
	out := make([]catalog.Table, n)
	for i := range out {
		out[i] = catalog.Table{ID: fmt.Sprint("T", i), Seats: seats, Category: "stalls"}
	}
	return out
}

// The largest documents the limits allow still pass: the bench's
// 100 x 1,000-seat event among them.
func TestLimitsAllowTheLargestEvents(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *catalog.Document)
	}{
		{"100,000 seats in 100 rows of 1,000", func(d *catalog.Document) {
			sm(d).Rows, sm(d).Tables = rows(100, catalog.MaxRowSeats), nil
		}},
		{"100,000 seats in rows and tables", func(d *catalog.Document) {
			sm(d).Rows, sm(d).Tables = rows(99, 1000), tables(10, 100)
		}},
		{"10,000 rows", func(d *catalog.Document) { sm(d).Rows, sm(d).Tables = rows(catalog.MaxRows, 10), nil }},
		{"1,000 tables of 100", func(d *catalog.Document) {
			sm(d).Rows, sm(d).Tables = nil, tables(catalog.MaxTables, catalog.MaxTableSeats)
		}},
		{"100 ticket types", func(d *catalog.Document) {
			for i := len(ga(d).Tickets); i < catalog.MaxTickets; i++ {
				ga(d).Tickets = append(ga(d).Tickets, catalog.Ticket{ID: fmt.Sprint("tk", i), Name: "T", Price: 100, Capacity: 1})
			}
		}},
		{"1,000 showings", func(d *catalog.Document) {
			ga(d).Showings = nil
			for i := range catalog.MaxShowings {
				ga(d).Showings = append(ga(d).Showings, catalog.Showing{ID: fmt.Sprint("sh", i), StartsAt: "2027-07-01T18:00:00Z"})
			}
		}},
		{"100 allowlist entries", func(d *catalog.Document) {
			chB(d).IPAllowlist = nil
			for i := range catalog.MaxAllowlist {
				chB(d).IPAllowlist = append(chB(d).IPAllowlist, fmt.Sprintf("10.0.%d.0/24", i))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := decodeValid(t)
			tc.mutate(doc)
			if err := catalog.Validate(doc); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// One more than a limit is refused, naming the list (or the row or table
// that takes the event past its seats) and the limit.
func TestLimitsRefuseBeyond(t *testing.T) {
	const ev0 = "tenants[0].events[0]"
	const seat = "tenants[0].events[1].seatMap"
	cases := []struct {
		name   string
		mutate func(d *catalog.Document)
		path   string
		limit  int
	}{
		{"a 10-million-seat map", func(d *catalog.Document) { sm(d).Rows = rows(10_000, 1000) }, seat + ".rows[100].seats", catalog.MaxEventSeats},
		{"100,001 seats in rows", func(d *catalog.Document) {
			sm(d).Rows, sm(d).Tables = append(rows(100, 1000), catalog.Row{Label: "Z", Seats: 1, Category: "stalls"}), nil
		}, seat + ".rows[100].seats", catalog.MaxEventSeats},
		{"a table past 100,000 seats", func(d *catalog.Document) { sm(d).Rows = rows(100, 1000) }, seat + ".tables[0].seats", catalog.MaxEventSeats},
		{"too many rows", func(d *catalog.Document) { sm(d).Rows = rows(catalog.MaxRows+1, 1) }, seat + ".rows", catalog.MaxRows},
		{"too many tables", func(d *catalog.Document) { sm(d).Tables = tables(catalog.MaxTables+1, 1) }, seat + ".tables", catalog.MaxTables},
		{"too many GA areas", func(d *catalog.Document) {
			sm(d).GAAreas = make([]catalog.GAArea, catalog.MaxGAAreas+1)
		}, seat + ".gaAreas", catalog.MaxGAAreas},
		{"too many categories", func(d *catalog.Document) {
			sm(d).Categories = make([]catalog.Category, catalog.MaxCategories+1)
		}, seat + ".categories", catalog.MaxCategories},
		{"too many ticket types", func(d *catalog.Document) {
			ga(d).Tickets = make([]catalog.Ticket, catalog.MaxTickets+1)
		}, ev0 + ".tickets", catalog.MaxTickets},
		{"too many extras", func(d *catalog.Document) {
			ga(d).Extras = make([]catalog.Extra, catalog.MaxExtras+1)
		}, ev0 + ".extras", catalog.MaxExtras},
		{"too many showings", func(d *catalog.Document) {
			ga(d).Showings = make([]catalog.Showing, catalog.MaxShowings+1)
		}, ev0 + ".showings", catalog.MaxShowings},
		{"too many discount codes", func(d *catalog.Document) {
			ga(d).DiscountCodes = make([]catalog.DiscountCode, catalog.MaxDiscountCodes+1)
		}, ev0 + ".discountCodes", catalog.MaxDiscountCodes},
		{"too many event channels", func(d *catalog.Document) {
			ga(d).Channels = make([]string, catalog.MaxEventChannels+1)
		}, ev0 + ".channels", catalog.MaxEventChannels},
		{"too many events", func(d *catalog.Document) {
			tenB(d).Events = make([]catalog.Event, catalog.MaxEventsPerTenant+1)
		}, "tenants[1].events", catalog.MaxEventsPerTenant},
		{"too many publishable keys", func(d *catalog.Document) {
			tenA(d).PublishableKeys = make([]catalog.PublishableKey, catalog.MaxPublishableKeys+1)
		}, "tenants[0].publishableKeys", catalog.MaxPublishableKeys},
		{"too many domains", func(d *catalog.Document) {
			tenA(d).PublishableKeys[0].Domains = make([]string, catalog.MaxKeyDomains+1)
		}, "tenants[0].publishableKeys[0].domains", catalog.MaxKeyDomains},
		{"too many tenants", func(d *catalog.Document) {
			d.Tenants = make([]catalog.Tenant, catalog.MaxTenants+1)
		}, "tenants", catalog.MaxTenants},
		{"too many channels", func(d *catalog.Document) {
			d.Channels = make([]catalog.Channel, catalog.MaxChannels+1)
		}, "channels", catalog.MaxChannels},
		{"too many allowlist entries", func(d *catalog.Document) {
			chB(d).IPAllowlist = make([]string, catalog.MaxAllowlist+1)
		}, "channels[1].ipAllowlist", catalog.MaxAllowlist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := decodeValid(t)
			tc.mutate(doc)
			err := catalog.Validate(doc)
			var ve *catalog.ValidationError
			if !errors.As(err, &ve) || ve.Path != tc.path {
				t.Fatalf("got %v, want a validation error at %s", err, tc.path)
			}
			if !strings.Contains(ve.Msg, fmt.Sprint("at most ", tc.limit)) {
				t.Fatalf("message %q does not name the limit %d", ve.Msg, tc.limit)
			}
		})
	}
}

// ValidateAgainst refuses a key that an applied object the document leaves
// in place keeps, and lets keys move among the objects it replaces.
func TestValidateAgainstTheAppliedCatalog(t *testing.T) {
	sealer := catalog.NewSealer("test")
	applied := []catalog.StoredChannel{sealer.Store(catalog.Channel{ID: "ch_old", Key: "ck_old"}),
		sealer.Store(catalog.Channel{ID: "ch_partner", Key: "ck_x"})}
	tenants := []catalog.Tenant{{ID: "t_old", PublishableKeys: []catalog.PublishableKey{{Key: "pk_old"}}},
		{ID: "t_acme", PublishableKeys: []catalog.PublishableKey{{Key: "pk_y"}}}}

	doc := decodeValid(t)
	if err := catalog.ValidateAgainst(doc, tenants, applied); err != nil {
		t.Fatalf("no key taken: %v", err)
	}
	chB(doc).Key = "ck_old"
	var ve *catalog.ValidationError
	if err := catalog.ValidateAgainst(doc, tenants, applied); !errors.As(err, &ve) || ve.Path != "channels[1].key" {
		t.Fatalf("key of an applied channel: %v", err)
	}
	// ch_partner is replaced by the document: its applied key ck_x is free.
	chB(doc).Key = "ck_x"
	if err := catalog.ValidateAgainst(doc, tenants, applied); err != nil {
		t.Fatalf("key of a channel the document replaces: %v", err)
	}
	tenB(doc).PublishableKeys = []catalog.PublishableKey{{Key: "pk_old"}}
	if err := catalog.ValidateAgainst(doc, tenants, applied); !errors.As(err, &ve) || ve.Path != "tenants[1].publishableKeys[0].key" {
		t.Fatalf("publishable key of an applied tenant: %v", err)
	}
	tenB(doc).PublishableKeys = []catalog.PublishableKey{{Key: "pk_y"}}
	if err := catalog.ValidateAgainst(doc, tenants, applied); err != nil {
		t.Fatalf("publishable key of a tenant the document replaces: %v", err)
	}
}

// Every amount of a catalog may be catalog.MaxAmount and no more: with it
// no cart leaves 2^53 cents (inventory/pricing's
// TestLargestCartAtMaxAmountStaysExact); beyond it a price of 2^53 cents
// wrapped a 1,000-ticket total negative.
func TestAmountsBeyondMaxAmountRefused(t *testing.T) {
	const ev0 = "tenants[0].events[0]"
	cases := []struct {
		name   string
		amount func(d *catalog.Document) *money.Cents
		path   string
	}{
		{"ticket price", func(d *catalog.Document) *money.Cents { return &tk0(d).Price }, ev0 + ".tickets[0].price"},
		{"extra price", func(d *catalog.Document) *money.Cents { return &ga(d).Extras[0].Price }, ev0 + ".extras[0].price"},
		{"fee per ticket", func(d *catalog.Document) *money.Cents { return &ga(d).Pricing.FeePerTicket }, ev0 + ".pricing.feePerTicket"},
		{"discount amount", func(d *catalog.Document) *money.Cents { return ga(d).DiscountCodes[1].Amount }, ev0 + ".discountCodes[1].amount"},
		{"category price", func(d *catalog.Document) *money.Cents { return sm(d).Categories[0].Price }, "tenants[0].events[1].seatMap.categories[0].price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := decodeValid(t)
			*tc.amount(doc) = catalog.MaxAmount
			if err := catalog.Validate(doc); err != nil {
				t.Fatalf("MaxAmount refused: %v", err)
			}
			*tc.amount(doc) = catalog.MaxAmount + 1
			var ve *catalog.ValidationError
			if err := catalog.Validate(doc); !errors.As(err, &ve) || ve.Path != tc.path || !strings.Contains(ve.Msg, "at most 1000000.00") {
				t.Fatalf("got %v, want a validation error at %s naming the limit", err, tc.path)
			}
		})
	}
}
