package catalog_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// validDoc uses every part of the document; each case below breaks one rule.
const validDoc = `{
 "tenants": [
  {"id": "t_acme", "name": "Acme Live", "notifyEmail": "host@acme.test",
   "publishableKeys": [{"key": "pk_acme_1", "domains": ["shop.acme.test", "*.acme.test", "localhost"], "enabled": true}],
   "events": [
    {"id": "ev_ga", "shortId": "gA1", "slug": "summer-fest", "name": "Summer Fest", "startsAt": "2027-07-01T18:00:00Z",
     "status": "on_sale", "onSaleAt": "2026-01-01T00:00:00Z", "storefront": true,
     "channels": ["ch_partner", "ch_applied_earlier"], "capacity": 1000,
     "showings": [{"id": "sh_1", "startsAt": "2027-07-01T18:00:00Z", "capacity": 500}, {"id": "sh_2", "startsAt": "2027-07-02T18:00:00+02:00"}],
     "pricing": {"feePerTicket": 1.5, "feePercent": 2.5, "vatPercent": 20, "refundProtectionPercent": 8},
     "tickets": [
      {"id": "tk_ga", "name": "General", "price": 25, "capacity": 800, "maxPerOrder": 10},
      {"id": "tk_crew", "name": "Crew", "price": 0, "capacity": 20, "hidden": true, "accessCode": "CREW2027"}
     ],
     "extras": [{"id": "ex_parking", "name": "Parking", "price": 10, "capacity": 100}],
     "discountCodes": [{"code": "EARLY10", "percent": 10, "maxUses": 100, "ticketIds": ["tk_ga"]}, {"code": "FIVE", "amount": 5}]},
    {"id": "ev_hall", "shortId": "hA2", "slug": "hall", "name": "Hall", "startsAt": "2027-08-01T19:30:00Z",
     "status": "draft", "storefront": false, "channels": [], "tickets": [],
     "seatMap": {
      "categories": [{"id": "stalls", "name": "Stalls", "price": 40}, {"id": "box", "name": "Box"}],
      "rows": [{"label": "A", "seats": 20, "category": "stalls"}, {"label": "B", "seats": 4, "category": "box"}],
      "gaAreas": [{"id": "floor", "name": "Floor", "capacity": 300, "category": "stalls"}],
      "tables": [{"id": "T1", "seats": 8, "category": "stalls"}]}}
   ]},
  {"id": "t_other", "name": "Other Host", "notifyEmail": "", "publishableKeys": [],
   "events": [
    {"id": "ev_other", "shortId": "oT3", "slug": "other", "name": "Other", "startsAt": "2027-09-01T19:30:00Z",
     "status": "cancelled", "storefront": false, "channels": [],
     "tickets": [{"id": "tk_ga", "name": "General", "price": 12.5, "capacity": 10}],
     "waitingRoom": {"opensAt": "2027-08-01T09:00:00Z", "salesStartAt": "2027-08-01T12:00:00+02:00", "passTtl": 300, "perBuyer": 2, "mode": "fifo"}}
   ]}
 ],
 "channels": [
  {"id": "ch_partner", "name": "Partner One", "key": "ck_partner", "secret": "cs_partner_secret", "signingKey": "sk1",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128", "203.0.113.7"], "settlement": "partner_remit",
   "rateLimits": {"catalog": 600, "status": 300, "checkout": 60, "confirm": 60, "session": 60}},
  {"id": "ch_invoice", "name": "Invoiced", "key": "ck_invoice", "secret": "cs_invoice_secret",
   "scopes": ["catalog:read"], "ipAllowlist": ["10.0.0.0/8"], "settlement": "invoice"}
 ]
}`

func decodeValid(t *testing.T) *catalog.Document {
	t.Helper()
	doc, err := catalog.Decode([]byte(validDoc))
	if err != nil {
		t.Fatalf("Decode(validDoc): %v", err)
	}
	return doc
}

func ptr[T any](v T) *T { return &v }

func pct(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// Shorthands into the valid document.
func ga(d *catalog.Document) *catalog.Event    { return &d.Tenants[0].Events[0] }
func hall(d *catalog.Document) *catalog.Event  { return &d.Tenants[0].Events[1] }
func other(d *catalog.Document) *catalog.Event { return &d.Tenants[1].Events[0] }
func sm(d *catalog.Document) *catalog.SeatMap  { return hall(d).SeatMap }
func chA(d *catalog.Document) *catalog.Channel { return &d.Channels[0] }
func chB(d *catalog.Document) *catalog.Channel { return &d.Channels[1] }
func tenA(d *catalog.Document) *catalog.Tenant { return &d.Tenants[0] }
func tenB(d *catalog.Document) *catalog.Tenant { return &d.Tenants[1] }
func tk0(d *catalog.Document) *catalog.Ticket  { return &ga(d).Tickets[0] }
func dc(d *catalog.Document, i int) *catalog.DiscountCode {
	return &ga(d).DiscountCodes[i]
}

// room is the waiting room of the GA event without showings.
func room(d *catalog.Document) *catalog.WaitingRoom { return other(d).WaitingRoom }

func TestValidDocumentPasses(t *testing.T) {
	doc := decodeValid(t)
	if err := catalog.Validate(doc); err != nil {
		t.Fatalf("valid document refused: %v", err)
	}
	// Amounts are read as cents, percentages exactly.
	if tk0(doc).Price != 2500 || ga(doc).Pricing.FeePerTicket != 150 || other(doc).Tickets[0].Price != 1250 {
		t.Fatalf("amounts decoded as %d, %d, %d cents", tk0(doc).Price, ga(doc).Pricing.FeePerTicket, other(doc).Tickets[0].Price)
	}
	if !ga(doc).Pricing.FeePercent.Equal(pct("2.5")) {
		t.Fatalf("feePercent decoded as %s", ga(doc).Pricing.FeePercent)
	}
}

// TestValidEdges are documents at the edge of a rule that must still pass.
func TestValidEdges(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *catalog.Document)
	}{
		{"empty document", func(d *catalog.Document) { *d = catalog.Document{} }},
		{"id of 64 characters", func(d *catalog.Document) { ga(d).ID = strings.Repeat("a", 64) }},
		{"names of 200 characters, non-ASCII", func(d *catalog.Document) {
			name := strings.Repeat("🎟", catalog.MaxName)
			ga(d).Name, tk0(d).Name, sm(d).GAAreas[0].Name, tenA(d).Name = name, name, name, name
		}},
		{"tenantId equal to its tenant", func(d *catalog.Document) { ga(d).TenantID = "t_acme" }},
		{"channel applied earlier", func(d *catalog.Document) { ga(d).Channels = []string{"ch_not_in_this_document"} }},
		{"event capacity 0", func(d *catalog.Document) { ga(d).Capacity = ptr[int64](0) }},
		{"maxPerOrder unset", func(d *catalog.Document) { tk0(d).MaxPerOrder = 0 }},
		{"maxPerOrder 1", func(d *catalog.Document) { tk0(d).MaxPerOrder = 1 }},
		{"maxTicketsPerBuyer 1", func(d *catalog.Document) { ga(d).MaxTicketsPerBuyer = ptr[int64](1) }},
		{"ticket maxPerOrder 1000", func(d *catalog.Document) { tk0(d).MaxPerOrder = 1000 }},
		{"event maxPerOrder 1 and 1000", func(d *catalog.Document) {
			ga(d).MaxPerOrder, tk0(d).MaxPerOrder = ptr[int64](1), 0
			hall(d).MaxPerOrder = ptr[int64](1000)
		}},
		{"event maxPerOrder equal to a ticket's and a table's", func(d *catalog.Document) {
			ga(d).MaxPerOrder, hall(d).MaxPerOrder = ptr[int64](10), ptr[int64](8)
		}},
		{"percents 0 and 100", func(d *catalog.Document) {
			ga(d).Pricing.FeePercent, ga(d).Pricing.VATPercent = pct("0"), pct("100")
			dc(d, 0).Percent = ptr(pct("100"))
		}},
		{"discount amount 0", func(d *catalog.Document) { dc(d, 1).Amount = ptr[money.Cents](0) }},
		{"no onSaleAt", func(d *catalog.Document) { ga(d).OnSaleAt = "" }},
		{"seat map without tickets", func(d *catalog.Document) { hall(d).Tickets = nil }},
		{"event with tickets and a seat map", func(d *catalog.Document) { hall(d).Tickets = other(d).Tickets }},
		{"row of 1000 seats, 8-character label", func(d *catalog.Document) {
			sm(d).Rows[0] = catalog.Row{Label: "AB12cd34", Seats: 1000, Category: "box"}
		}},
		{"table of 100 seats", func(d *catalog.Document) { sm(d).Tables[0].Seats = 100 }},
		{"singleSeatRule off", func(d *catalog.Document) { sm(d).SingleSeatRule = "off" }},
		{"singleSeatRule lenient", func(d *catalog.Document) { sm(d).SingleSeatRule = "lenient" }},
		{"singleSeatRule strict", func(d *catalog.Document) { sm(d).SingleSeatRule = "strict" }},
		{"table id like a seat beyond the row", func(d *catalog.Document) { sm(d).Tables[0].ID = "B-5" }},
		{"GA area capacity 1", func(d *catalog.Document) { sm(d).GAAreas[0].Capacity = 1 }},
		{"waiting room with its defaults", func(d *catalog.Document) {
			*room(d) = catalog.WaitingRoom{OpensAt: "2027-08-01T09:00:00Z", SalesStartAt: "2027-08-01T09:00:01Z"}
		}},
		{"waiting room mode fair", func(d *catalog.Document) { room(d).Mode = "fair" }},
		{"waiting room passTtl 10 and perBuyer 1", func(d *catalog.Document) {
			room(d).PassTTL, room(d).PerBuyer = ptr[int64](10), ptr[int64](1)
		}},
		{"waiting room proof of work with its defaults", func(d *catalog.Document) { room(d).ProofOfWork = &catalog.ProofOfWork{} }},
		{"waiting room proof of work 1 to 26 bits", func(d *catalog.Document) {
			room(d).ProofOfWork = &catalog.ProofOfWork{MinBits: ptr[int64](1), MaxBits: ptr[int64](26)}
		}},
		{"waiting room proof of work minBits above the default most", func(d *catalog.Document) {
			room(d).ProofOfWork = &catalog.ProofOfWork{MinBits: ptr[int64](24)}
		}},
		{"waiting room passTtl 3600 and perBuyer 10", func(d *catalog.Document) {
			room(d).PassTTL, room(d).PerBuyer = ptr[int64](3600), ptr[int64](10)
		}},
		{"waiting room on a GA event without showings or channels", func(d *catalog.Document) {
			ga(d).Showings = nil
			ga(d).Channels = nil
			ga(d).WaitingRoom = &catalog.WaitingRoom{OpensAt: "2027-06-01T09:00:00Z", SalesStartAt: "2027-06-01T10:00:00Z"}
		}},
		{"secret of 8 characters", func(d *catalog.Document) { chA(d).Secret = "12345678" }},
		{"no signing key", func(d *catalog.Document) { chA(d).SigningKey = "" }},
		{"any settlement", func(d *catalog.Document) { chA(d).Settlement = "invoice" }},
		{"IPv4-mapped allowlist entry", func(d *catalog.Document) { chB(d).IPAllowlist = []string{"::ffff:10.0.0.1"} }},
		{"no scopes", func(d *catalog.Document) { chB(d).Scopes = nil }},
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

func TestValidateNamesFirstBadField(t *testing.T) {
	const ev0 = "tenants[0].events[0]"
	const ev1 = "tenants[1].events[0]" // the GA event with a waiting room
	const seat = "tenants[0].events[1].seatMap"
	cases := []struct {
		name   string
		mutate func(d *catalog.Document)
		path   string
	}{
		// Tenants.
		{"tenant id missing", func(d *catalog.Document) { tenA(d).ID = "" }, "tenants[0].id"},
		{"tenant id with a space", func(d *catalog.Document) { tenA(d).ID = "t acme" }, "tenants[0].id"},
		{"tenant id with a colon", func(d *catalog.Document) { tenA(d).ID = "t:acme" }, "tenants[0].id"},
		{"tenant id of 65 characters", func(d *catalog.Document) { tenA(d).ID = strings.Repeat("a", 65) }, "tenants[0].id"},
		{"duplicate tenant id", func(d *catalog.Document) { tenB(d).ID = "t_acme" }, "tenants[1].id"},
		{"tenant name missing", func(d *catalog.Document) { tenA(d).Name = " " }, "tenants[0].name"},
		{"tenant name of 201 characters", func(d *catalog.Document) { tenA(d).Name = strings.Repeat("a", 201) }, "tenants[0].name"},
		{"tenant name with DEL", func(d *catalog.Document) { tenA(d).Name = "Acme\x7f" }, "tenants[0].name"},
		{"notifyEmail not an address", func(d *catalog.Document) { tenA(d).NotifyEmail = "host.acme.test" }, "tenants[0].notifyEmail"},
		{"publishable key missing", func(d *catalog.Document) { tenA(d).PublishableKeys[0].Key = "" }, "tenants[0].publishableKeys[0].key"},
		{"publishable key used by two tenants", func(d *catalog.Document) {
			tenB(d).PublishableKeys = []catalog.PublishableKey{{Key: "pk_acme_1", Domains: []string{"other.test"}}}
		}, "tenants[1].publishableKeys[0].key"},
		{"domain with a scheme", func(d *catalog.Document) {
			tenA(d).PublishableKeys[0].Domains[1] = "https://shop.acme.test"
		}, "tenants[0].publishableKeys[0].domains[1]"},
		{"domain empty", func(d *catalog.Document) { tenA(d).PublishableKeys[0].Domains[0] = "" }, "tenants[0].publishableKeys[0].domains[0]"},

		// Events.
		{"event id invalid", func(d *catalog.Document) { ga(d).ID = "ev/ga" }, ev0 + ".id"},
		{"event id used by two tenants", func(d *catalog.Document) { other(d).ID = "ev_ga" }, "tenants[1].events[0].id"},
		{"tenantId of another tenant", func(d *catalog.Document) { ga(d).TenantID = "t_other" }, ev0 + ".tenantId"},
		{"shortId missing", func(d *catalog.Document) { ga(d).ShortID = "" }, ev0 + ".shortId"},
		{"duplicate shortId", func(d *catalog.Document) { other(d).ShortID = "gA1" }, "tenants[1].events[0].shortId"},
		{"slug with a space", func(d *catalog.Document) { ga(d).Slug = "summer fest" }, ev0 + ".slug"},
		{"event name missing", func(d *catalog.Document) { ga(d).Name = "" }, ev0 + ".name"},
		{"event name of 201 characters", func(d *catalog.Document) { ga(d).Name = strings.Repeat("é", 201) }, ev0 + ".name"},
		{"event name with a line break", func(d *catalog.Document) { ga(d).Name = "Summer\r\nBcc: x@y.test" }, ev0 + ".name"},
		{"startsAt missing", func(d *catalog.Document) { ga(d).StartsAt = "" }, ev0 + ".startsAt"},
		{"startsAt not RFC 3339", func(d *catalog.Document) { ga(d).StartsAt = "2027-07-01 18:00" }, ev0 + ".startsAt"},
		{"status unknown", func(d *catalog.Document) { ga(d).Status = "bogus" }, ev0 + ".status"},
		{"status missing", func(d *catalog.Document) { ga(d).Status = "" }, ev0 + ".status"},
		{"status in another case", func(d *catalog.Document) { ga(d).Status = "On_Sale" }, ev0 + ".status"},
		{"onSaleAt not RFC 3339", func(d *catalog.Document) { ga(d).OnSaleAt = "tomorrow" }, ev0 + ".onSaleAt"},
		{"onSaleAt after startsAt", func(d *catalog.Document) { ga(d).OnSaleAt = "2027-07-01T18:00:01Z" }, ev0 + ".onSaleAt"},
		{"channel listed twice", func(d *catalog.Document) { ga(d).Channels[1] = "ch_partner" }, ev0 + ".channels[1]"},
		{"channel ref invalid", func(d *catalog.Document) { ga(d).Channels[0] = "ch partner" }, ev0 + ".channels[0]"},
		{"event capacity negative", func(d *catalog.Document) { ga(d).Capacity = ptr[int64](-1) }, ev0 + ".capacity"},
		{"maxTicketsPerBuyer zero", func(d *catalog.Document) { ga(d).MaxTicketsPerBuyer = ptr[int64](0) }, ev0 + ".maxTicketsPerBuyer"},
		{"maxTicketsPerBuyer negative", func(d *catalog.Document) { ga(d).MaxTicketsPerBuyer = ptr[int64](-2) }, ev0 + ".maxTicketsPerBuyer"},
		{"showings and a seat map", func(d *catalog.Document) {
			hall(d).Showings = []catalog.Showing{{ID: "sh_1", StartsAt: "2027-08-01T19:30:00Z"}}
		}, "tenants[0].events[1].showings"},
		{"showing id invalid", func(d *catalog.Document) { ga(d).Showings[0].ID = "" }, ev0 + ".showings[0].id"},
		{"duplicate showing id", func(d *catalog.Document) { ga(d).Showings[1].ID = "sh_1" }, ev0 + ".showings[1].id"},
		{"showing startsAt missing", func(d *catalog.Document) { ga(d).Showings[1].StartsAt = "" }, ev0 + ".showings[1].startsAt"},
		{"showing capacity negative", func(d *catalog.Document) { ga(d).Showings[0].Capacity = ptr[int64](-5) }, ev0 + ".showings[0].capacity"},
		{"feePerTicket negative", func(d *catalog.Document) { ga(d).Pricing.FeePerTicket = -1 }, ev0 + ".pricing.feePerTicket"},
		{"feePercent above 100", func(d *catalog.Document) { ga(d).Pricing.FeePercent = pct("100.01") }, ev0 + ".pricing.feePercent"},
		{"vatPercent negative", func(d *catalog.Document) { ga(d).Pricing.VATPercent = pct("-1") }, ev0 + ".pricing.vatPercent"},
		{"refundProtectionPercent above 100", func(d *catalog.Document) {
			ga(d).Pricing.RefundProtectionPercent = pct("101")
		}, ev0 + ".pricing.refundProtectionPercent"},
		{"no tickets and no seat map", func(d *catalog.Document) { other(d).Tickets = nil }, "tenants[1].events[0].tickets"},

		// Waiting room.
		{"waiting room opensAt missing", func(d *catalog.Document) { room(d).OpensAt = "" }, ev1 + ".waitingRoom.opensAt"},
		{"waiting room opensAt not RFC 3339", func(d *catalog.Document) { room(d).OpensAt = "2027-08-01 09:00" }, ev1 + ".waitingRoom.opensAt"},
		{"waiting room salesStartAt missing", func(d *catalog.Document) { room(d).SalesStartAt = "" }, ev1 + ".waitingRoom.salesStartAt"},
		{"waiting room salesStartAt not RFC 3339", func(d *catalog.Document) { room(d).SalesStartAt = "at ten" }, ev1 + ".waitingRoom.salesStartAt"},
		{"waiting room salesStartAt equal to opensAt", func(d *catalog.Document) {
			room(d).SalesStartAt = "2027-08-01T11:00:00+02:00" // 09:00Z
		}, ev1 + ".waitingRoom.salesStartAt"},
		{"waiting room salesStartAt before opensAt", func(d *catalog.Document) {
			room(d).SalesStartAt = "2027-08-01T08:59:59Z"
		}, ev1 + ".waitingRoom.salesStartAt"},
		{"waiting room salesStartAt at startsAt", func(d *catalog.Document) {
			room(d).SalesStartAt = other(d).StartsAt
		}, ev1 + ".waitingRoom.salesStartAt"},
		{"waiting room passTtl 9", func(d *catalog.Document) { room(d).PassTTL = ptr[int64](9) }, ev1 + ".waitingRoom.passTtl"},
		{"waiting room passTtl 0", func(d *catalog.Document) { room(d).PassTTL = ptr[int64](0) }, ev1 + ".waitingRoom.passTtl"},
		{"waiting room passTtl 3601", func(d *catalog.Document) { room(d).PassTTL = ptr[int64](3601) }, ev1 + ".waitingRoom.passTtl"},
		{"waiting room perBuyer 0", func(d *catalog.Document) { room(d).PerBuyer = ptr[int64](0) }, ev1 + ".waitingRoom.perBuyer"},
		{"waiting room perBuyer 11", func(d *catalog.Document) { room(d).PerBuyer = ptr[int64](11) }, ev1 + ".waitingRoom.perBuyer"},
		{"waiting room proof of work 0 bits", func(d *catalog.Document) {
			room(d).ProofOfWork = &catalog.ProofOfWork{MinBits: ptr[int64](0)}
		}, ev1 + ".waitingRoom.proofOfWork.minBits"},
		{"waiting room proof of work 27 bits", func(d *catalog.Document) {
			room(d).ProofOfWork = &catalog.ProofOfWork{MaxBits: ptr[int64](27)}
		}, ev1 + ".waitingRoom.proofOfWork.maxBits"},
		{"waiting room proof of work maxBits below minBits", func(d *catalog.Document) {
			room(d).ProofOfWork = &catalog.ProofOfWork{MinBits: ptr[int64](12), MaxBits: ptr[int64](10)}
		}, ev1 + ".waitingRoom.proofOfWork.maxBits"},
		{"waiting room mode unknown", func(d *catalog.Document) { room(d).Mode = "lottery" }, ev1 + ".waitingRoom.mode"},
		{"waiting room mode in another case", func(d *catalog.Document) { room(d).Mode = "FIFO" }, ev1 + ".waitingRoom.mode"},
		{"waiting room with a seat map", func(d *catalog.Document) { hall(d).WaitingRoom = room(d) }, "tenants[0].events[1].waitingRoom"},
		{"waiting room with showings, one uncapped", func(d *catalog.Document) { ga(d).WaitingRoom = room(d); ga(d).Channels = nil }, ev0 + ".showings[1].capacity"},

		// Tickets and extras.
		{"ticket id invalid", func(d *catalog.Document) { tk0(d).ID = "tk ga" }, ev0 + ".tickets[0].id"},
		{"duplicate ticket id", func(d *catalog.Document) { ga(d).Tickets[1].ID = "tk_ga" }, ev0 + ".tickets[1].id"},
		{"ticket name missing", func(d *catalog.Document) { tk0(d).Name = "" }, ev0 + ".tickets[0].name"},
		{"ticket name of 201 characters", func(d *catalog.Document) { tk0(d).Name = strings.Repeat("a", 201) }, ev0 + ".tickets[0].name"},
		{"ticket name with a tab", func(d *catalog.Document) { tk0(d).Name = "VIP\tpass" }, ev0 + ".tickets[0].name"},
		{"ticket price negative", func(d *catalog.Document) { tk0(d).Price = -1 }, ev0 + ".tickets[0].price"},
		{"ticket capacity negative", func(d *catalog.Document) { tk0(d).Capacity = -1 }, ev0 + ".tickets[0].capacity"},
		{"maxPerOrder negative", func(d *catalog.Document) { tk0(d).MaxPerOrder = -1 }, ev0 + ".tickets[0].maxPerOrder"},
		{"maxPerOrder over 1000", func(d *catalog.Document) { tk0(d).MaxPerOrder = 1001 }, ev0 + ".tickets[0].maxPerOrder"},
		{"event maxPerOrder zero", func(d *catalog.Document) { ga(d).MaxPerOrder = ptr[int64](0) }, ev0 + ".maxPerOrder"},
		{"event maxPerOrder over 1000", func(d *catalog.Document) { ga(d).MaxPerOrder = ptr[int64](1001) }, ev0 + ".maxPerOrder"},
		{"ticket maxPerOrder above the event's", func(d *catalog.Document) { ga(d).MaxPerOrder = ptr[int64](9) }, ev0 + ".tickets[0].maxPerOrder"},
		{"table above the event's maxPerOrder", func(d *catalog.Document) { hall(d).MaxPerOrder = ptr[int64](7) },
			"tenants[0].events[1].seatMap.tables[0].seats"},
		{"extra id invalid", func(d *catalog.Document) { ga(d).Extras[0].ID = "" }, ev0 + ".extras[0].id"},
		{"duplicate extra id", func(d *catalog.Document) {
			ga(d).Extras = append(ga(d).Extras, catalog.Extra{ID: "ex_parking", Name: "P2"})
		}, ev0 + ".extras[1].id"},
		{"extra name missing", func(d *catalog.Document) { ga(d).Extras[0].Name = "" }, ev0 + ".extras[0].name"},
		{"extra name of 201 characters", func(d *catalog.Document) { ga(d).Extras[0].Name = strings.Repeat("a", 201) }, ev0 + ".extras[0].name"},
		{"extra price negative", func(d *catalog.Document) { ga(d).Extras[0].Price = -100 }, ev0 + ".extras[0].price"},
		{"extra capacity negative", func(d *catalog.Document) { ga(d).Extras[0].Capacity = ptr[int64](-1) }, ev0 + ".extras[0].capacity"},

		// Discount codes.
		{"discount code missing", func(d *catalog.Document) { dc(d, 0).Code = "" }, ev0 + ".discountCodes[0].code"},
		{"discount code differing only in case", func(d *catalog.Document) { dc(d, 1).Code = "early10" }, ev0 + ".discountCodes[1].code"},
		{"discount without percent or amount", func(d *catalog.Document) { dc(d, 1).Amount = nil }, ev0 + ".discountCodes[1]"},
		{"discount with percent and amount", func(d *catalog.Document) { dc(d, 0).Amount = ptr[money.Cents](100) }, ev0 + ".discountCodes[0]"},
		{"discount percent above 100", func(d *catalog.Document) { dc(d, 0).Percent = ptr(pct("150")) }, ev0 + ".discountCodes[0].percent"},
		{"discount percent negative", func(d *catalog.Document) { dc(d, 0).Percent = ptr(pct("-10")) }, ev0 + ".discountCodes[0].percent"},
		{"discount amount negative", func(d *catalog.Document) { dc(d, 1).Amount = ptr[money.Cents](-5) }, ev0 + ".discountCodes[1].amount"},
		{"discount maxUses negative", func(d *catalog.Document) { dc(d, 0).MaxUses = ptr[int64](-1) }, ev0 + ".discountCodes[0].maxUses"},
		// 0 would mean "unlimited" to pricing and the order scripts; unlimited is an omitted maxUses.
		{"discount maxUses 0", func(d *catalog.Document) { dc(d, 0).MaxUses = ptr[int64](0) }, ev0 + ".discountCodes[0].maxUses"},
		{"discount for an unknown ticket", func(d *catalog.Document) {
			dc(d, 0).TicketIDs = []string{"tk_ga", "tk_nope"}
		}, ev0 + ".discountCodes[0].ticketIds[1]"},
		// Pricing scans the list for each ticket line of every quote and
		// reserve: a ticket named again and again (an 8 MB document holds a
		// million) would make them slow. Each ticket once bounds the list.
		{"discount naming a ticket twice", func(d *catalog.Document) {
			dc(d, 0).TicketIDs = []string{"tk_ga", "tk_ga"}
		}, ev0 + ".discountCodes[0].ticketIds[1]"},

		// Seat map.
		{"seat map with nothing to sell", func(d *catalog.Document) {
			sm(d).Rows, sm(d).GAAreas, sm(d).Tables = nil, nil, nil
		}, seat},
		{"singleSeatRule unknown", func(d *catalog.Document) { sm(d).SingleSeatRule = "sometimes" }, seat + ".singleSeatRule"},
		{"singleSeatRule in another case", func(d *catalog.Document) { sm(d).SingleSeatRule = "Strict" }, seat + ".singleSeatRule"},
		{"category id invalid", func(d *catalog.Document) { sm(d).Categories[0].ID = "" }, seat + ".categories[0].id"},
		{"duplicate category id", func(d *catalog.Document) { sm(d).Categories[1].ID = "stalls" }, seat + ".categories[1].id"},
		{"category name missing", func(d *catalog.Document) { sm(d).Categories[1].Name = "" }, seat + ".categories[1].name"},
		{"category name with a NUL", func(d *catalog.Document) { sm(d).Categories[1].Name = "Box\x00" }, seat + ".categories[1].name"},
		{"category price negative", func(d *catalog.Document) { sm(d).Categories[0].Price = ptr[money.Cents](-1) }, seat + ".categories[0].price"},
		{"row label with a dash", func(d *catalog.Document) { sm(d).Rows[0].Label = "A-1" }, seat + ".rows[0].label"},
		{"row label of 9 characters", func(d *catalog.Document) { sm(d).Rows[0].Label = "ABCDEFGHI" }, seat + ".rows[0].label"},
		{"row label empty", func(d *catalog.Document) { sm(d).Rows[1].Label = "" }, seat + ".rows[1].label"},
		{"duplicate row label", func(d *catalog.Document) { sm(d).Rows[1].Label = "A" }, seat + ".rows[1].label"},
		{"row of 0 seats", func(d *catalog.Document) { sm(d).Rows[0].Seats = 0 }, seat + ".rows[0].seats"},
		{"row of 1001 seats", func(d *catalog.Document) { sm(d).Rows[1].Seats = 1001 }, seat + ".rows[1].seats"},
		{"row in an unknown category", func(d *catalog.Document) { sm(d).Rows[1].Category = "gallery" }, seat + ".rows[1].category"},
		{"GA area id invalid", func(d *catalog.Document) { sm(d).GAAreas[0].ID = "fl oor" }, seat + ".gaAreas[0].id"},
		{"GA area name missing", func(d *catalog.Document) { sm(d).GAAreas[0].Name = "" }, seat + ".gaAreas[0].name"},
		{"GA area name of 201 characters", func(d *catalog.Document) { sm(d).GAAreas[0].Name = strings.Repeat("界", 201) }, seat + ".gaAreas[0].name"},
		{"GA area name with a line separator", func(d *catalog.Document) { sm(d).GAAreas[0].Name = "Floor\u2028A" }, seat + ".gaAreas[0].name"},
		{"GA area capacity 0", func(d *catalog.Document) { sm(d).GAAreas[0].Capacity = 0 }, seat + ".gaAreas[0].capacity"},
		{"GA area in an unknown category", func(d *catalog.Document) { sm(d).GAAreas[0].Category = "" }, seat + ".gaAreas[0].category"},
		{"duplicate GA area id", func(d *catalog.Document) {
			sm(d).GAAreas = append(sm(d).GAAreas, sm(d).GAAreas[0])
		}, seat + ".gaAreas[1].id"},
		{"table id invalid", func(d *catalog.Document) { sm(d).Tables[0].ID = "" }, seat + ".tables[0].id"},
		{"table id that is a seat label", func(d *catalog.Document) { sm(d).Tables[0].ID = "B-4" }, seat + ".tables[0].id"},
		{"duplicate table id", func(d *catalog.Document) {
			sm(d).Tables = append(sm(d).Tables, sm(d).Tables[0])
		}, seat + ".tables[1].id"},
		{"table of 0 seats", func(d *catalog.Document) { sm(d).Tables[0].Seats = 0 }, seat + ".tables[0].seats"},
		{"table of 101 seats", func(d *catalog.Document) { sm(d).Tables[0].Seats = 101 }, seat + ".tables[0].seats"},
		{"table in an unknown category", func(d *catalog.Document) { sm(d).Tables[0].Category = "vip" }, seat + ".tables[0].category"},

		// Channels.
		{"channel id invalid", func(d *catalog.Document) { chA(d).ID = "ch:partner" }, "channels[0].id"},
		{"duplicate channel id", func(d *catalog.Document) { chB(d).ID = "ch_partner" }, "channels[1].id"},
		{"channel name missing", func(d *catalog.Document) { chA(d).Name = "" }, "channels[0].name"},
		{"channel key missing", func(d *catalog.Document) { chA(d).Key = "" }, "channels[0].key"},
		{"duplicate channel key", func(d *catalog.Document) { chB(d).Key = "ck_partner" }, "channels[1].key"},
		{"channel secret missing", func(d *catalog.Document) { chB(d).Secret = "" }, "channels[1].secret"},
		{"channel secret of 7 characters", func(d *catalog.Document) { chA(d).Secret = "1234567" }, "channels[0].secret"},
		{"scope unknown", func(d *catalog.Document) { chA(d).Scopes[3] = "orders:delete" }, "channels[0].scopes[3]"},
		{"allowlist empty", func(d *catalog.Document) { chB(d).IPAllowlist = nil }, "channels[1].ipAllowlist"},
		{"allowlist entry not an address", func(d *catalog.Document) { chA(d).IPAllowlist[2] = "203.0.113.300" }, "channels[0].ipAllowlist[2]"},
		{"allowlist entry a host name", func(d *catalog.Document) { chB(d).IPAllowlist[0] = "partner.example.com" }, "channels[1].ipAllowlist[0]"},
		{"allowlist prefix too long", func(d *catalog.Document) { chB(d).IPAllowlist[0] = "10.0.0.0/33" }, "channels[1].ipAllowlist[0]"},
		{"allowlist entry with an IPv6 zone", func(d *catalog.Document) { chB(d).IPAllowlist[0] = "fe80::1%eth0" }, "channels[1].ipAllowlist[0]"},
		{"rate limit negative", func(d *catalog.Document) { chA(d).RateLimits.Checkout = -1 }, "channels[0].rateLimits.checkout"},

		// The first problem in document order is the one named.
		{"two problems", func(d *catalog.Document) {
			chA(d).Secret = ""
			sm(d).Rows[0].Seats = 0
			other(d).Status = "live"
		}, seat + ".rows[0].seats"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := decodeValid(t)
			tc.mutate(doc)
			err := catalog.Validate(doc)
			var ve *catalog.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a *ValidationError at %s, got %v", tc.path, err)
			}
			if ve.Path != tc.path {
				t.Fatalf("path %q, want %q (%v)", ve.Path, tc.path, err)
			}
			if ve.Msg == "" || err.Error() != tc.path+": "+ve.Msg {
				t.Fatalf("Error() = %q, Msg %q", err.Error(), ve.Msg)
			}
		})
	}
}

func TestValidateNeverEchoesTheSecret(t *testing.T) {
	doc := decodeValid(t)
	chA(doc).Secret = "s3cr3t!"
	err := catalog.Validate(doc)
	if err == nil || strings.Contains(err.Error(), "s3cr3t!") {
		t.Fatalf("got %v", err)
	}
}

func TestValidateShowingsWithSeatMapSaysWhy(t *testing.T) {
	doc := decodeValid(t)
	hall(doc).Showings = []catalog.Showing{{ID: "sh_1", StartsAt: "2027-08-01T19:30:00Z"}}
	err := catalog.Validate(doc)
	if err == nil || !strings.Contains(err.Error(), "seat map") || !strings.Contains(err.Error(), "showing") {
		t.Fatalf("got %v", err)
	}
}

// A waiting room is refused on a multi-showing event whose showings are
// not each capped within the event's stock or that gives a partner an
// allocation, and on a seated event that sells more than seat rows or
// gives a partner an allocation, each saying why.
func TestValidateWaitingRoomSaysWhatItDoesNotCover(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(d *catalog.Document)
		want   string
	}{
		"seat map with areas and tables": {func(d *catalog.Document) { hall(d).WaitingRoom = room(d) },
			"covers its seat rows alone, and this event also sells standing areas (gaAreas) and tables"},
		"a partner's allocation on a seated event": {func(d *catalog.Document) {
			sm(d).GAAreas, sm(d).Tables = nil, nil
			hall(d).Channels = []string{"ch_partner"}
			r := *room(d) // a copy: the other event keeps its own
			r.Allocations = map[string]int64{"ch_partner": 2}
			hall(d).WaitingRoom = &r
		}, "partners' seat holds are not counted against an allocation, so give channel ch_partner 0"},
		"a showing without a capacity": {func(d *catalog.Document) { ga(d).WaitingRoom = room(d); ga(d).Channels = nil },
			"events[0].showings[1].capacity: is required with a waiting room: each showing has a line of its own"},
		"showings beyond the event's stock": {func(d *catalog.Document) {
			ga(d).Showings[1].Capacity = ptr[int64](321)
			ga(d).WaitingRoom, ga(d).Channels = room(d), nil
		}, "the showings' capacities add up to 821, more than the event's 820 admissions"},
		"a partner's allocation on a multi-showing event": {func(d *catalog.Document) {
			ga(d).Showings[1].Capacity = ptr[int64](300)
			r := *room(d)
			r.Allocations = map[string]int64{"ch_partner": 1, "ch_applied_earlier": 0}
			ga(d).WaitingRoom = &r
		}, "waitingRoom.allocations.ch_partner: a multi-showing event's waiting room sells every showing's stock: give channel ch_partner 0"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := decodeValid(t)
			c.mutate(doc)
			err := catalog.Validate(doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A multi-showing event takes a waiting room with a line per showing, each
// with its own id and its showing's capacity as its stock, counted in the
// showing's sold field and bounded by the event's stock.
func TestAMultiShowingEventTakesALinePerShowing(t *testing.T) {
	doc := decodeValid(t)
	ga(doc).Showings[1].Capacity = ptr[int64](320) // 500 + 320 = the event's 820 (its ticket types')
	r := *room(doc)
	r.Allocations = map[string]int64{"ch_partner": 0, "ch_applied_earlier": 0}
	r.OpensAt, r.SalesStartAt = "2027-06-01T09:00:00Z", "2027-06-01T10:00:00Z"
	ga(doc).WaitingRoom = &r
	if err := catalog.Validate(doc); err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := snap.Events[ga(doc).ID]
	lines := ev.Room.Lines()
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per showing", len(lines))
	}
	for i, want := range []struct{ id, showing, spec string }{
		{ga(doc).ID + "@sh_1", "sh_1", "500/sh:sh_1 820"},
		{ga(doc).ID + "@sh_2", "sh_2", "320/sh:sh_2 820"},
	} {
		l := lines[i]
		if l.ID != want.id || l.Showing != want.showing || l.Spec() != want.spec || l.PassTTL != ev.Room.PassTTL {
			t.Errorf("line %d: %s %s %q ttl %v, want %s %s %q and the event's settings", i, l.ID, l.Showing, l.Spec(), l.PassTTL,
				want.id, want.showing, want.spec)
		}
		if got, ok := ev.Room.Line(want.showing); !ok || got != l {
			t.Errorf("Line(%s) = %v %v, want line %d", want.showing, got, ok, i)
		}
	}
	for _, sh := range []string{"", "sh_3"} {
		if _, ok := ev.Room.Line(sh); ok {
			t.Errorf("Line(%q) found a line on a multi-showing event", sh)
		}
	}
	one := snap.Events[other(doc).ID].Room
	if l, ok := one.Line(""); !ok || l != one || len(one.Lines()) != 1 || l.ID != other(doc).ID {
		t.Errorf("an event without showings: Line(\"\") = %v %v, Lines %d, want the event's room", l, ok, len(one.Lines()))
	}
	if _, ok := one.Line("sh_1"); ok {
		t.Error("an event without showings found a showing's line")
	}
}

// A seated event whose rows are all it sells takes a waiting room: its
// stock is its priced seats (an unpriced row is not for sale), which caps
// the storefront's share; a partner with allocation 0 sells none of it.
func TestASeatedEventTakesAWaitingRoomOfItsPricedSeats(t *testing.T) {
	doc := decodeValid(t)
	sm(doc).GAAreas, sm(doc).Tables = nil, nil
	hall(doc).Channels = []string{"ch_partner"}
	r := *room(doc) // a copy: the other event keeps its own
	r.Allocations = map[string]int64{"ch_partner": 0}
	hall(doc).WaitingRoom = &r
	if err := catalog.Validate(doc); err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := snap.Events[hall(doc).ID]
	if ev.Room == nil || ev.Room.Stock != 20 {
		t.Fatalf("room %+v, want a stock of row A's 20 priced seats (row B is not for sale)", ev.Room)
	}
	if caps := ev.Caps(); caps["sf"] != 20 || caps["ch:ch_partner"] != 0 {
		t.Fatalf("caps %v, want sf 20 and ch:ch_partner 0", caps)
	}
}

// A room that admits before the event is on sale is refused: its first
// passes could not buy.
func TestValidateWaitingRoomNotBeforeOnSale(t *testing.T) {
	doc := decodeValid(t)
	other(doc).OnSaleAt = "2027-08-01T11:00:00Z" // T0 is 10:00Z
	err := catalog.Validate(doc)
	if err == nil || !strings.Contains(err.Error(), "waitingRoom.salesStartAt") || !strings.Contains(err.Error(), "onSaleAt") {
		t.Fatalf("got %v", err)
	}
	other(doc).OnSaleAt = "2027-08-01T10:00:00Z"
	if err := catalog.Validate(doc); err != nil {
		t.Fatalf("T0 at onSaleAt refused: %v", err)
	}
}

// Partners beside a waiting room sell each within an allocation the
// room's stock leaves out: a channel without one is refused (it would race
// the queue for the room's tickets), as are an allocation for a channel the
// event does not list and allocations that leave the room nothing.
func TestValidateWaitingRoomAllocations(t *testing.T) {
	for _, c := range []struct {
		name     string
		channels []string
		alloc    map[string]int64
		want     string // "" accepted
	}{
		{"a channel without an allocation", []string{"ch_partner"}, nil, "ch_partner sells this event beside its waiting room and needs an allocation"},
		{"an allocation of a channel not listed", []string{"ch_partner"}, map[string]int64{"ch_partner": 2, "ch_invoice": 1}, "allocations.ch_invoice: ch_invoice is not one of the event's channels"},
		{"a negative allocation", []string{"ch_partner"}, map[string]int64{"ch_partner": -1}, "allocations.ch_partner: must be at least 0"},
		{"allocations leaving the room nothing", []string{"ch_partner", "ch_invoice"}, map[string]int64{"ch_partner": 6, "ch_invoice": 4}, "leave the room none of the event's 10 admissions"},
		{"allocations", []string{"ch_partner", "ch_invoice"}, map[string]int64{"ch_partner": 6, "ch_invoice": 0}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := decodeValid(t)
			other(doc).Channels = c.channels
			room(doc).Allocations = c.alloc
			err := catalog.Validate(doc)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "waitingRoom.allocations") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a refusal saying %q", err, c.want)
			}
		})
	}
}

// The room's stock is what the allocations leave of the event's, and the
// event's capacities cap the storefront's share at it and each channel's
// at its allocation; an event without a room caps neither.
func TestCompiledRoomLeavesTheAllocationsOut(t *testing.T) {
	doc := decodeValid(t)
	other(doc).Channels = []string{"ch_partner", "ch_invoice"}
	room(doc).Allocations = map[string]int64{"ch_partner": 3, "ch_invoice": 0}
	if err := catalog.Validate(doc); err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := snap.Events["ev_other"]
	if ev.Room.Stock != 7 {
		t.Fatalf("room stock %d, want 10 less the allocations, 7", ev.Room.Stock)
	}
	caps := ev.Caps()
	for f, want := range map[string]int64{"sf": 7, "ch:ch_partner": 3, "ch:ch_invoice": 0} {
		if got, ok := caps[f]; !ok || got != want {
			t.Errorf("caps[%s] = %d (%v), want %d", f, got, ok, want)
		}
	}
	for f := range snap.Events["ev_ga"].Caps() {
		if f == "sf" || strings.HasPrefix(f, "ch:") {
			t.Errorf("an event without a room caps %s", f)
		}
	}
}

// A compiled event carries its waiting room parsed, with the document's
// values or, where it sets none, the defaults; no room, no Room.
func TestCompiledRoom(t *testing.T) {
	doc := decodeValid(t)
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := snap.Events["ev_ga"].Room; r != nil {
		t.Fatalf("event without a waitingRoom: Room %+v", r)
	}
	want := catalog.Room{
		OpensAt:      time.Date(2027, 8, 1, 9, 0, 0, 0, time.UTC),
		SalesStartAt: time.Date(2027, 8, 1, 10, 0, 0, 0, time.UTC), // 12:00+02:00
		PassTTL:      300 * time.Second,
		PerBuyer:     2,
		Fair:         false,
	}
	r := snap.Events["ev_other"].Room
	if r == nil || !r.OpensAt.Equal(want.OpensAt) || !r.SalesStartAt.Equal(want.SalesStartAt) ||
		r.PassTTL != want.PassTTL || r.PerBuyer != want.PerBuyer || r.Fair != want.Fair {
		t.Fatalf("Room %+v, want %+v", r, want)
	}
}

func TestCompiledRoomDefaults(t *testing.T) {
	body := strings.Replace(validDoc, `"passTtl": 300, "perBuyer": 2, "mode": "fifo"`, `"mode": null`, 1)
	doc, err := catalog.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.Validate(doc); err != nil {
		t.Fatalf("waiting room with its defaults refused: %v", err)
	}
	wr := room(doc)
	if wr.PassTTL != nil || wr.PerBuyer != nil || wr.Mode != "" {
		t.Fatalf("decoded room %+v: passTtl, perBuyer or mode set", wr)
	}
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := snap.Events["ev_other"].Room
	if r == nil || r.PassTTL != 120*time.Second || r.PerBuyer != 1 || !r.Fair {
		t.Fatalf("Room %+v, want passTtl 2m0s, perBuyer 1, fair", r)
	}
	if r.PassTTL != catalog.DefaultRoomPassTTL*time.Second || r.PerBuyer != catalog.DefaultRoomPerBuyer {
		t.Fatalf("defaults are not DefaultRoomPassTTL and DefaultRoomPerBuyer")
	}
	if r.Work != nil {
		t.Fatalf("a room without proofOfWork asks for work: %+v", r.Work)
	}
	for _, c := range []struct {
		pw       catalog.ProofOfWork
		min, max int
	}{
		{catalog.ProofOfWork{}, catalog.DefaultRoomMinBits, catalog.DefaultRoomMaxBits},
		{catalog.ProofOfWork{MinBits: ptr[int64](24)}, 24, 24},
		{catalog.ProofOfWork{MinBits: ptr[int64](8), MaxBits: ptr[int64](9)}, 8, 9},
	} {
		room(doc).ProofOfWork = &c.pw
		snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := snap.Events["ev_other"].Room.Work; w == nil || w.MinBits != c.min || w.MaxBits != c.max {
			t.Errorf("proofOfWork %+v compiles to %+v, want %d to %d bits", c.pw, w, c.min, c.max)
		}
	}
}

func TestValidateNil(t *testing.T) {
	var ve *catalog.ValidationError
	if err := catalog.Validate(nil); !errors.As(err, &ve) {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeRefusesWithPath(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		path    string
		msgPart string
	}{
		{"empty body", "", "", "empty"},
		{"blank body", " \n\t", "", "empty"},
		{"unknown top-level field", `{"tenants": [], "extra": 1}`, "", `unknown field "extra"`},
		{"unknown nested field",
			strings.Replace(validDoc, `"slug": "hall",`, `"slug": "hall", "colour": "red",`, 1),
			"tenants[0].events[1]", `unknown field "colour"`},
		{"unknown field in a seat row",
			strings.Replace(validDoc, `{"label": "B", "seats": 4,`, `{"label": "B", "seat": 4,`, 1),
			"tenants[0].events[1].seatMap.rows[1]", `unknown field "seat"`},
		{"unknown field in a waiting room",
			strings.Replace(validDoc, `"mode": "fifo"`, `"mode": "fifo", "capacity": 100`, 1),
			"tenants[1].events[0].waitingRoom", `unknown field "capacity"`},
		{"string for passTtl",
			strings.Replace(validDoc, `"passTtl": 300`, `"passTtl": "300"`, 1),
			"tenants[1].events[0].waitingRoom.passTtl", "whole number"},
		{"fraction for perBuyer",
			strings.Replace(validDoc, `"perBuyer": 2`, `"perBuyer": 1.5`, 1),
			"tenants[1].events[0].waitingRoom.perBuyer", "whole number"},
		{"array for a waiting room",
			strings.NewReplacer(`"waitingRoom": {`, `"waitingRoom": [{`, `"mode": "fifo"}`, `"mode": "fifo"}]`).Replace(validDoc),
			"tenants[1].events[0].waitingRoom", "must be an object"},
		{"string for an integer",
			strings.Replace(validDoc, `"capacity": 1000,`, `"capacity": "1000",`, 1),
			"tenants[0].events[0].capacity", "whole number"},
		{"fraction for an integer",
			strings.Replace(validDoc, `"seats": 20,`, `"seats": 20.5,`, 1),
			"tenants[0].events[1].seatMap.rows[0].seats", "whole number"},
		{"number for a string",
			strings.Replace(validDoc, `"status": "draft"`, `"status": 3`, 1),
			"tenants[0].events[1].status", "must be a string"},
		{"object for an array",
			strings.Replace(validDoc, `"channels": [],`, `"channels": {},`, 1),
			"tenants[0].events[1].channels", "must be an array"},
		{"string for a bool",
			strings.Replace(validDoc, `"storefront": true,`, `"storefront": "yes",`, 1),
			"tenants[0].events[0].storefront", "true or false"},
		{"amount with three decimals",
			strings.Replace(validDoc, `"price": 12.5`, `"price": 12.505`, 1),
			"tenants[1].events[0].tickets[0].price", "at most two decimals"},
		{"negative amount",
			strings.Replace(validDoc, `"feePerTicket": 1.5`, `"feePerTicket": -1.5`, 1),
			"tenants[0].events[0].pricing.feePerTicket", "non-negative"},
		{"percent not a number",
			strings.Replace(validDoc, `"vatPercent": 20`, `"vatPercent": "twenty"`, 1),
			"tenants[0].events[0].pricing.vatPercent", "must be a number"},
		{"trailing garbage", validDoc + "\n xx", "", fmt.Sprintf("line %d, column 2", strings.Count(validDoc, "\n")+2)},
		{"second document", `{"tenants": []} {"channels": []}`, "", "after top-level value"},
		{"malformed", "{\n  \"tenants\": [,]\n}", "", "line 2, column 15"},
		{"truncated", `{"tenants": [`, "", "invalid JSON: the document ends at line 1 before its value is complete"},
		{"truncated on a later line", "{\n  \"tenants\": [\n\n", "", "ends at line 2 before"},
		{"array", `[]`, "", "JSON object"},
		{"null", `null`, "", "JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := catalog.Decode([]byte(tc.body))
			var ve *catalog.ValidationError
			if !errors.As(err, &ve) || doc != nil {
				t.Fatalf("want a *ValidationError, got %v (doc %v)", err, doc)
			}
			if ve.Path != tc.path || !strings.Contains(ve.Msg, tc.msgPart) {
				t.Fatalf("got path %q msg %q; want path %q, msg containing %q", ve.Path, ve.Msg, tc.path, tc.msgPart)
			}
		})
	}
}

func TestValidationErrorWithoutPath(t *testing.T) {
	if got := (&catalog.ValidationError{Msg: "bad"}).Error(); got != "bad" {
		t.Fatalf("got %q", got)
	}
	if got := (&catalog.ValidationError{Path: "channels[1].ipAllowlist[0]", Msg: "bad"}).Error(); got != "channels[1].ipAllowlist[0]: bad" {
		t.Fatalf("got %q", got)
	}
}

// TestMappedAllowlistRangeAdmitsItsIPv4Clients: clients are matched by
// their unmapped address, so ::ffff:10.0.0.0/104 must admit 10.1.2.3. It
// used to compile to a prefix that matched nobody.
func TestMappedAllowlistRangeAdmitsItsIPv4Clients(t *testing.T) {
	ch := catalog.Channel{ID: "ch_m", Key: "ck_m", Secret: "cs_m_secret_long_enough", Scopes: []string{catalog.ScopeCatalogRead},
		IPAllowlist: []string{"::ffff:10.0.0.0/104"}, Settlement: "invoice"}
	sealer := catalog.NewSealer("test")
	snap, err := catalog.Compile(1, nil, []catalog.StoredChannel{sealer.Store(ch)}, sealer)
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Channels["ch_m"]
	if !c.Allowed(netip.MustParseAddr("10.1.2.3")) || c.Allowed(netip.MustParseAddr("11.1.2.3")) {
		t.Fatalf("allowlist %v: 10.1.2.3 allowed %v, 11.1.2.3 allowed %v", c.Allow,
			c.Allowed(netip.MustParseAddr("10.1.2.3")), c.Allowed(netip.MustParseAddr("11.1.2.3")))
	}
}

// An event without maxPerOrder takes DefaultMaxPerOrder, raised to what
// its own catalog sets: a ticket type's larger maxPerOrder, or a table
// (sold whole) of more seats, so the default never makes them
// unsellable. A ticket type without one takes the event's.
func TestCompiledMaxPerOrder(t *testing.T) {
	doc := decodeValid(t)
	tk0(doc).MaxPerOrder = 0
	sm(doc).Tables[0].Seats = 12
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	evGA, evHall := snap.Events["ev_ga"], snap.Events["ev_hall"]
	if evGA.MaxPerOrder != catalog.DefaultMaxPerOrder || evGA.TicketMaxPerOrder(evGA.Tickets["tk_ga"]) != catalog.DefaultMaxPerOrder {
		t.Fatalf("no maxPerOrder anywhere: event %d, ticket %d, want %d", evGA.MaxPerOrder,
			evGA.TicketMaxPerOrder(evGA.Tickets["tk_ga"]), catalog.DefaultMaxPerOrder)
	}
	if evHall.MaxPerOrder != 12 {
		t.Fatalf("a table of 12 seats: event maxPerOrder %d, want 12", evHall.MaxPerOrder)
	}

	doc = decodeValid(t)
	tk0(doc).MaxPerOrder = 25
	ga(doc).Tickets[1].MaxPerOrder = 4
	snap, _ = catalog.Compile(1, doc.Tenants, nil, nil)
	ev := snap.Events["ev_ga"]
	if ev.MaxPerOrder != 25 || ev.TicketMaxPerOrder(ev.Tickets["tk_crew"]) != 4 {
		t.Fatalf("ticket maxPerOrder 25 and 4: event %d, crew %d", ev.MaxPerOrder, ev.TicketMaxPerOrder(ev.Tickets["tk_crew"]))
	}

	doc = decodeValid(t)
	ga(doc).MaxPerOrder, tk0(doc).MaxPerOrder = ptr[int64](30), 0
	snap, _ = catalog.Compile(1, doc.Tenants, nil, nil)
	ev = snap.Events["ev_ga"]
	if ev.MaxPerOrder != 30 || ev.TicketMaxPerOrder(ev.Tickets["tk_ga"]) != 30 {
		t.Fatalf("event maxPerOrder 30: event %d, ticket %d", ev.MaxPerOrder, ev.TicketMaxPerOrder(ev.Tickets["tk_ga"]))
	}
}
