package storefront_test

import (
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/tickets"
)

type ticket struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Price       money.Cents `json:"price"`
	Remaining   int64       `json:"remaining"`
	SoldOut     *bool       `json:"soldOut"`
	MaxPerOrder int64       `json:"maxPerOrder"`
}

type event struct {
	ID       string   `json:"id"`
	Currency string   `json:"currency"`
	Seated   bool     `json:"seated"`
	Tickets  []ticket `json:"tickets"`
	SeatMap  *struct {
		Seats      int `json:"seats"`
		Categories []struct {
			ID    string       `json:"id"`
			Price *money.Cents `json:"price"`
		} `json:"categories"`
	} `json:"seatMap"`
}

func getEvent(t *testing.T, s *servertest.Server, path string) event {
	t.Helper()
	r := s.Front(t, "GET", path, nil)
	expect(t, r, 200, "")
	var ev event
	r.Decode(t, &ev)
	return ev
}

func ids(ts []ticket) []string {
	out := make([]string, len(ts))
	for i, x := range ts {
		out[i] = x.ID
	}
	return out
}

func TestHiddenTicketsListedOnlyWithTheirAccessCode(t *testing.T) {
	t.Parallel()
	s := start(t)
	ev := getEvent(t, s, "/events/sf_ga")
	if got := ids(ev.Tickets); len(got) != 2 || got[0] != "tk_adult" || got[1] != "tk_child" {
		t.Fatalf("tickets %v, want tk_adult and tk_child only", got)
	}
	a := ev.Tickets[0]
	if a.Name != "Adult" || a.Price != 2500 || a.Remaining != 50 || a.SoldOut == nil || *a.SoldOut || a.MaxPerOrder != 10 || ev.Currency != "USD" {
		t.Fatalf("tk_adult = %+v", a)
	}
	if got := ids(getEvent(t, s, "/events/sf_ga?accessCode=WRONG").Tickets); len(got) != 2 {
		t.Fatalf("a wrong access code reveals %v", got)
	}
	if got := ids(getEvent(t, s, "/events/sf_ga?accessCode=CREW").Tickets); len(got) != 3 || got[2] != "tk_crew" {
		t.Fatalf("with its access code: %v, want tk_crew too", got)
	}
	// Nor can a hidden ticket be quoted without its code.
	expect(t, s.Front(t, "POST", "/quote", map[string]any{"eventId": "sf_ga", "selectedTicketId": "tk_crew"}), 400, "TICKET_NOT_FOUND")
}

func TestSeatedEventShowsItsSeatMapSummary(t *testing.T) {
	t.Parallel()
	s := start(t)
	ev := getEvent(t, s, "/events/hall")
	if !ev.Seated || ev.SeatMap == nil || ev.SeatMap.Seats != 25 || len(ev.SeatMap.Categories) != 2 {
		t.Fatalf("seated event = %+v", ev)
	}
	if c := ev.SeatMap.Categories[1]; c.ID != "box" || c.Price != nil {
		t.Fatalf("unpriced category shown as %+v", c)
	}
}

func TestSeatWithoutPriceIsRefused(t *testing.T) {
	t.Parallel()
	s := start(t)
	r := s.Front(t, "POST", "/quote", map[string]any{"eventId": "sf_seated", "seatLabels": []string{"A-1", "B-2"}})
	expect(t, r, 400, "SEAT_NOT_PRICED")
	var d struct{ Seats []string }
	r.Decode(t, &d)
	if len(d.Seats) != 1 || d.Seats[0] != "B-2" {
		t.Fatalf("SEAT_NOT_PRICED names %v, want [B-2]", d.Seats)
	}
}

// The storefront quote is the partner quote of the same cart: one Price.
func TestQuoteEqualsThePartnerQuote(t *testing.T) {
	t.Parallel()
	s := start(t)
	carts := []map[string]any{
		{"selectedTicketId": "tk_adult"},
		{"selectedTicketId": "tk_adult", "quantity": 3},
		{"tickets": []map[string]any{{"ticketId": "tk_adult", "quantity": 2}, {"ticketId": "tk_child", "quantity": 1}},
			"extras": []map[string]any{{"extraId": "ex_parking", "quantity": 1}}, "discountCode": "SAVE10", "refundProtectionOptIn": true},
		{"selectedTicketId": "tk_crew", "quantity": 2, "accessCode": "CREW"},
	}
	type quote struct {
		Subtotal, Discount, Fee, VAT, Total money.Cents
		Currency                            string
	}
	for i, c := range carts {
		partner := s.Do(t, "POST", "/v1/channel/events/sf_ga/quote", servertest.Keyed("front"), c)
		expect(t, partner, 200, "")
		c["eventId"] = "summer"
		front := s.Front(t, "POST", "/quote", c)
		expect(t, front, 200, "")
		var p, f quote
		partner.Decode(t, &p)
		front.Decode(t, &f)
		if p != f || f.Total == 0 || f.Currency != "USD" {
			t.Fatalf("cart %d: storefront %+v, partner %+v", i, f, p)
		}
		var raw map[string]json.RawMessage
		front.Decode(t, &raw)
		for _, k := range []string{"subtotal", "discount", "fee", "total", "currency"} {
			if _, ok := raw[k]; !ok {
				t.Fatalf("cart %d: quote lacks %s: %s", i, k, front.Data)
			}
		}
	}
	// 2 x 25 + 10 - 10% of 60... spelled out once: subtotal 60, discount 6,
	// fee 3 x 1.50, parking 10, refund protection 8% of 64.
	var q struct{ Subtotal, Discount, Fee, Total money.Cents }
	s.Front(t, "POST", "/quote", carts[2]).Decode(t, &q)
	if q.Subtotal != 6000 || q.Discount != 600 || q.Fee != 450 || q.Total != 6000-600+1000+450+512 {
		t.Fatalf("quote %+v", q)
	}
}

func TestQuoteRefusesBadCarts(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"selectedTicketId": "tk_adult"}, 400, "INVALID_REQUEST"}, // no eventId
		{map[string]any{"eventId": "sf_ga"}, 400, "INVALID_REQUEST"},             // empty cart
		{map[string]any{"eventId": "sf_ga", "selectedTicketId": "tk_adult", "quantity": 11}, 400, "MAX_PER_ORDER_EXCEEDED"},
		{map[string]any{"eventId": "sf_ga", "selectedTicketId": "tk_adult", "quantity": "two"}, 400, "INVALID_REQUEST"},
		{map[string]any{"eventId": "sf_ga", "selectedTicketId": "tk_adult", "discountCode": "NOPE"}, 400, "INVALID_DISCOUNT_CODE"},
	} {
		expect(t, s.Front(t, "POST", "/quote", c.body), c.status, c.code)
	}
}

// Door scanners get the event's public key; a QR signed for the event
// verifies with it (docs/tickets.md).
func TestTicketKeyIsTheEventsPublicKey(t *testing.T) {
	t.Parallel()
	s := start(t)
	r := s.Front(t, "GET", "/events/summer/ticket-key", nil)
	expect(t, r, 200, "")
	var k struct{ EventID, PublicKey, Algorithm string }
	r.Decode(t, &k)
	if k.EventID != "sf_ga" || k.Algorithm != "Ed25519" || k.PublicKey != s.Tickets.PublicKey("sf_ga") {
		t.Fatalf("ticket key %+v, want sf_ga's %s", k, s.Tickets.PublicKey("sf_ga"))
	}
	pub, err := tickets.ParsePublicKey(k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	qr := s.Tickets.Sign(tickets.Ticket{ID: "o1.sf_ga-1", EventID: "sf_ga", Admission: "Adult"})
	if _, err := tickets.Verify(qr, pub); err != nil {
		t.Fatalf("a ticket of sf_ga does not verify with the published key: %v", err)
	}
	unknown := s.Front(t, "GET", "/events/nope/ticket-key", nil)
	foreign := s.Front(t, "GET", "/events/ot_ga/ticket-key", nil)
	expect(t, foreign, 404, "EVENT_NOT_FOUND")
	if string(foreign.Body) != string(unknown.Body) {
		t.Fatal("another tenant's event key answers unlike an unknown event")
	}
}
