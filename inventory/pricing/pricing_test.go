package pricing

import (
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// event compiles one event from its catalog JSON.
func event(t testing.TB, evJSON string) *catalog.CompiledEvent {
	t.Helper()
	var ev catalog.Event
	if err := json.Unmarshal([]byte(evJSON), &ev); err != nil {
		t.Fatalf("event JSON: %v", err)
	}
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: "t", Events: []catalog.Event{ev}}}, nil, catalog.NewSealer("k"))
	if err != nil {
		t.Fatal(err)
	}
	return snap.Events[ev.ID]
}

const gaEvent = `{"id":"ev","status":"on_sale","capacity":100,
  "pricing":{"feePerTicket":1.5,"refundProtectionPercent":8},
  "tickets":[{"id":"tk_ga","name":"General","price":25,"capacity":80,"maxPerOrder":10},
             {"id":"tk_vip","name":"VIP","price":99.99,"capacity":10},
             {"id":"tk_free","name":"Free","price":0,"capacity":10},
             {"id":"tk_hidden","name":"Crew","price":5,"capacity":5,"hidden":true,"accessCode":"CREW"}],
  "extras":[{"id":"ex_parking","name":"Parking","price":10,"capacity":20}],
  "discountCodes":[{"code":"Early10","percent":10,"maxUses":3},
                   {"code":"FIVE","amount":5},
                   {"code":"BIG","amount":500},
                   {"code":"VIPHALF","percent":50,"ticketIds":["tk_vip"]},
                   {"code":"THIRD","percent":33.333}]}`

const seatedEvent = `{"id":"ev_s","status":"on_sale",
  "pricing":{"feePerTicket":2},
  "tickets":[],
  "seatMap":{"categories":[{"id":"stalls","name":"Stalls","price":40},{"id":"box","name":"Box"}],
    "rows":[{"label":"A","seats":10,"category":"stalls"},{"label":"B","seats":4,"category":"box"}],
    "gaAreas":[{"id":"floor","name":"Floor","capacity":50,"category":"stalls"},{"id":"pit","name":"Pit","capacity":5,"category":"box"}],
    "tables":[{"id":"T1","seats":4,"category":"stalls"},{"id":"T2","seats":2,"category":"box"}]}}`

func n(v int64) *int64 { return &v }

func TestPriceTotals(t *testing.T) {
	ga := event(t, gaEvent)
	seated := event(t, seatedEvent)
	pctFee := event(t, `{"id":"ev_p","status":"on_sale",
	  "pricing":{"feePerTicket":0.99,"feePercent":2.5,"vatPercent":20},
	  "tickets":[{"id":"a","name":"A","price":33.33,"capacity":100}],
	  "extras":[{"id":"x","name":"X","price":1.01}]}`)
	cases := []struct {
		name string
		ev   *catalog.CompiledEvent
		cart Cart
		// subtotal, discount, extras, fee, vat, rp, total in cents
		want [7]money.Cents
	}{
		{"two GA, parking, fee per ticket, refund protection", ga,
			Cart{SelectedTicketID: "tk_ga", Quantity: n(2), Extras: []ExtraLine{{ExtraID: "ex_parking", Quantity: 1}}, RefundProtectionOptIn: true},
			[7]money.Cents{5000, 0, 1000, 300, 0, 480, 6780}},
		{"refund protection not opted in", ga,
			Cart{SelectedTicketID: "tk_ga"},
			[7]money.Cents{2500, 0, 0, 150, 0, 0, 2650}},
		{"percent code, case-insensitive", ga,
			Cart{Tickets: []TicketLine{{TicketID: "tk_vip", Quantity: 1}}, DiscountCode: " early10 "},
			[7]money.Cents{9999, 1000, 0, 150, 0, 0, 9149}}, // 999.9 rounds to 1000
		{"amount code", ga,
			Cart{SelectedTicketID: "tk_ga", DiscountCode: "FIVE"},
			[7]money.Cents{2500, 500, 0, 150, 0, 0, 2150}},
		{"amount code capped at the subtotal: no fee on a free cart", ga,
			Cart{SelectedTicketID: "tk_ga", Quantity: n(3), DiscountCode: "BIG", Extras: []ExtraLine{{ExtraID: "ex_parking", Quantity: 1}}},
			[7]money.Cents{7500, 7500, 1000, 0, 0, 0, 1000}},
		{"code limited to one ticket type", ga,
			Cart{Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 2}, {TicketID: "tk_vip", Quantity: 1}}, DiscountCode: "viphalf"},
			[7]money.Cents{14999, 5000, 0, 450, 0, 0, 10449}}, // 4999.5 -> 5000
		{"fractional percent rounds half away from zero", ga,
			Cart{SelectedTicketID: "tk_ga", DiscountCode: "THIRD"},
			[7]money.Cents{2500, 833, 0, 150, 0, 0, 1817}}, // 833.325 -> 833
		{"free tickets carry no per-ticket fee", ga,
			Cart{Tickets: []TicketLine{{TicketID: "tk_free", Quantity: 2}}},
			[7]money.Cents{0, 0, 0, 0, 0, 0, 0}},
		{"free and paid: fee only on the paid ones", ga,
			Cart{Tickets: []TicketLine{{TicketID: "tk_free", Quantity: 2}, {TicketID: "tk_ga", Quantity: 1}}},
			[7]money.Cents{2500, 0, 0, 150, 0, 0, 2650}},
		{"duplicate lines merge", ga,
			Cart{Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 1}, {TicketID: "tk_ga", Quantity: 2}}},
			[7]money.Cents{7500, 0, 0, 450, 0, 0, 7950}},
		{"hidden ticket with its access code", ga,
			Cart{SelectedTicketID: "tk_hidden", AccessCode: "CREW"},
			[7]money.Cents{500, 0, 0, 150, 0, 0, 650}},
		// 3 x 33.33 = 99.99; fee 3 x 0.99 + 2.5% of 99.99 (2.49975 -> 2.50) = 5.47;
		// vat 20% of (99.99 + 2.02 + 5.47 = 107.48) = 21.496 -> 21.50.
		{"fee percent and VAT", pctFee,
			Cart{SelectedTicketID: "a", Quantity: n(3), Extras: []ExtraLine{{ExtraID: "x", Quantity: 2}}},
			[7]money.Cents{9999, 0, 202, 547, 2150, 0, 12898}},
		{"one seat", seated,
			Cart{SeatLabels: []string{"A-1"}},
			[7]money.Cents{4000, 0, 0, 200, 0, 0, 4200}},
		{"seats deduplicated, area and table", seated,
			Cart{SeatLabels: []string{"A-1", "A-2", "A-1"}, GASelections: []AreaLine{{AreaID: "floor", Quantity: 2}}, TableSelections: []TableLine{{TableID: "T1"}}},
			// 2 seats + 2 floor + 4 table seats = 8 admissions at 40
			[7]money.Cents{32000, 0, 0, 1600, 0, 0, 33600}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, e := Price(c.ev, c.cart)
			if e != nil {
				t.Fatalf("Price: %v", e)
			}
			var rp money.Cents
			if q.RefundProtection != nil {
				rp = q.RefundProtection.Amount
			}
			got := [7]money.Cents{q.Subtotal, q.Discount, q.ExtrasTotal, q.Fee, q.VAT, rp, q.Total}
			if got != c.want {
				t.Fatalf("subtotal, discount, extras, fee, vat, rp, total = %v, want %v", got, c.want)
			}
		})
	}
}

func TestPriceClaimsAndAdmissions(t *testing.T) {
	seated := event(t, seatedEvent)
	q, e := Price(seated, Cart{SeatLabels: []string{"A-3"}, GASelections: []AreaLine{{AreaID: "floor", Quantity: 2}}, TableSelections: []TableLine{{TableID: "T1"}, {TableID: "T1"}}})
	if e != nil {
		t.Fatal(e)
	}
	want := map[string]int64{"ev": 7, "a:floor": 2, "tb:T1": 1}
	if len(q.Claims) != len(want) {
		t.Fatalf("claims %v, want %v", q.Claims, want)
	}
	for k, v := range want {
		if q.Claims[k] != v {
			t.Fatalf("claims %v, want %v", q.Claims, want)
		}
	}
	if len(q.Admissions) != 7 || q.PaidAdmissions != 7 {
		t.Fatalf("admissions %d (paid %d), want 7", len(q.Admissions), q.PaidAdmissions)
	}
	if len(q.SeatLabels) != 1 || q.SeatLabels[0] != "A-3" {
		t.Fatalf("seat labels %v", q.SeatLabels)
	}

	shows := event(t, `{"id":"ev_sh","status":"on_sale","showings":[{"id":"s1","startsAt":"2027-01-01T00:00:00Z","capacity":5}],
	  "tickets":[{"id":"a","name":"A","price":1,"capacity":10}],"extras":[{"id":"x","name":"X","price":1}],
	  "discountCodes":[{"code":"ONCE","amount":1,"maxUses":1}]}`)
	q, e = Price(shows, Cart{SelectedTicketID: "a", Quantity: n(3), ShowingID: "s1", Extras: []ExtraLine{{ExtraID: "x", Quantity: 2}}, DiscountCode: "once"})
	if e != nil {
		t.Fatal(e)
	}
	if q.Claims["t:a"] != 3 || q.Claims["sh:s1"] != 3 || q.Claims["ev"] != 3 || q.Claims["x:x"] != 2 || len(q.Claims) != 4 {
		t.Fatalf("claims %v", q.Claims)
	}
	if q.DiscountCode != "ONCE" || q.DiscountMaxUses != 1 {
		t.Fatalf("discount %q max %d, want canonical ONCE max 1", q.DiscountCode, q.DiscountMaxUses)
	}
}

func TestPriceErrors(t *testing.T) {
	ga := event(t, gaEvent)
	seated := event(t, seatedEvent)
	shows := event(t, `{"id":"ev_sh","status":"on_sale","showings":[{"id":"s1","startsAt":"2027-01-01T00:00:00Z"}],
	  "tickets":[{"id":"a","name":"A","price":1,"capacity":10}]}`)
	big := event(t, `{"id":"ev_big","status":"on_sale","maxPerOrder":1000,
	  "tickets":[{"id":"a","name":"A","price":1,"capacity":1000},{"id":"b","name":"B","price":1,"capacity":1000}]}`)
	many := make([]AreaLine, MaxLines+1)
	for i := range many {
		many[i] = AreaLine{AreaID: "floor", Quantity: 1}
	}
	cases := []struct {
		name string
		ev   *catalog.CompiledEvent
		cart Cart
		code string
	}{
		{"empty cart", ga, Cart{}, "INVALID_REQUEST"},
		{"extras alone", ga, Cart{Extras: []ExtraLine{{ExtraID: "ex_parking", Quantity: 1}}}, "INVALID_REQUEST"},
		{"both ticket shapes", ga, Cart{SelectedTicketID: "tk_ga", Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 1}}}, "INVALID_REQUEST"},
		{"quantity without selectedTicketId", ga, Cart{Quantity: n(2), Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 1}}}, "INVALID_REQUEST"},
		{"line without ticketId", ga, Cart{Tickets: []TicketLine{{Quantity: 1}}}, "INVALID_REQUEST"},
		{"zero quantity", ga, Cart{SelectedTicketID: "tk_ga", Quantity: n(0)}, "INVALID_QUANTITY"},
		{"negative line quantity", ga, Cart{Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: -1}}}, "INVALID_QUANTITY"},
		{"huge quantity", ga, Cart{SelectedTicketID: "tk_vip", Quantity: n(1 << 40)}, "INVALID_QUANTITY"},
		{"merged lines over the limit", ga, Cart{Tickets: []TicketLine{{TicketID: "tk_vip", Quantity: 600}, {TicketID: "tk_vip", Quantity: 600}}}, "INVALID_QUANTITY"},
		{"too many admissions in all", big, Cart{Tickets: []TicketLine{{TicketID: "a", Quantity: 600}, {TicketID: "b", Quantity: 600}}}, "MAX_PER_ORDER_EXCEEDED"},
		{"unknown ticket", ga, Cart{SelectedTicketID: "nope"}, "TICKET_NOT_FOUND"},
		{"hidden ticket without code", ga, Cart{SelectedTicketID: "tk_hidden"}, "TICKET_NOT_FOUND"},
		{"hidden ticket with wrong code", ga, Cart{SelectedTicketID: "tk_hidden", AccessCode: "crew"}, "TICKET_NOT_FOUND"},
		{"over max per order", ga, Cart{SelectedTicketID: "tk_ga", Quantity: n(11)}, "MAX_PER_ORDER_EXCEEDED"},
		{"max per order across merged lines", ga, Cart{Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 6}, {TicketID: "tk_ga", Quantity: 5}}}, "MAX_PER_ORDER_EXCEEDED"},
		{"showing required", shows, Cart{SelectedTicketID: "a"}, "SHOWING_REQUIRED"},
		{"unknown showing", shows, Cart{SelectedTicketID: "a", ShowingID: "s9"}, "SHOWING_NOT_FOUND"},
		{"showing on an event without showings", ga, Cart{SelectedTicketID: "tk_ga", ShowingID: "s1"}, "SHOWING_NOT_FOUND"},
		{"seats on a GA event", ga, Cart{SeatLabels: []string{"A-1"}}, "NOT_SEATED"},
		{"areas on a GA event", ga, Cart{GASelections: []AreaLine{{AreaID: "floor", Quantity: 1}}}, "NOT_SEATED"},
		{"unknown seat", seated, Cart{SeatLabels: []string{"A-11"}}, "SEAT_NOT_FOUND"},
		{"seat label with leading zero", seated, Cart{SeatLabels: []string{"A-01"}}, "SEAT_NOT_FOUND"},
		{"unpriced seat", seated, Cart{SeatLabels: []string{"A-1", "B-1"}}, "SEAT_NOT_PRICED"},
		{"unpriced area", seated, Cart{GASelections: []AreaLine{{AreaID: "pit", Quantity: 1}}}, "SEAT_NOT_PRICED"},
		{"unpriced table", seated, Cart{TableSelections: []TableLine{{TableID: "T2"}}}, "SEAT_NOT_PRICED"},
		{"unknown area", seated, Cart{GASelections: []AreaLine{{AreaID: "roof", Quantity: 1}}}, "AREA_NOT_FOUND"},
		{"area quantity zero", seated, Cart{GASelections: []AreaLine{{AreaID: "floor"}}}, "INVALID_QUANTITY"},
		{"too many area lines", seated, Cart{GASelections: many}, "INVALID_REQUEST"},
		{"unknown table", seated, Cart{TableSelections: []TableLine{{TableID: "T9"}}}, "TABLE_NOT_FOUND"},
		{"unknown extra", ga, Cart{SelectedTicketID: "tk_ga", Extras: []ExtraLine{{ExtraID: "ex_no", Quantity: 1}}}, "EXTRA_NOT_FOUND"},
		{"extra quantity zero", ga, Cart{SelectedTicketID: "tk_ga", Extras: []ExtraLine{{ExtraID: "ex_parking"}}}, "INVALID_QUANTITY"},
		{"unknown discount code", ga, Cart{SelectedTicketID: "tk_ga", DiscountCode: "NOPE"}, "INVALID_DISCOUNT_CODE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, e := Price(c.ev, c.cart)
			if e == nil {
				t.Fatalf("Price succeeded, want %s", c.code)
			}
			if e.Code != c.code || e.Status != 400 {
				t.Fatalf("got %d %s (%s), want 400 %s", e.Status, e.Code, e.Message, c.code)
			}
		})
	}
}

func TestSeatNotPricedNamesEverySeat(t *testing.T) {
	seated := event(t, seatedEvent)
	_, e := Price(seated, Cart{SeatLabels: []string{"B-1", "A-1", "B-2"}})
	if e == nil || e.Code != "SEAT_NOT_PRICED" {
		t.Fatalf("got %v, want SEAT_NOT_PRICED", e)
	}
	data, _ := e.Data.(map[string]any)
	seats, _ := data["seats"].([]string)
	if len(seats) != 2 || seats[0] != "B-1" || seats[1] != "B-2" {
		t.Fatalf("data.seats = %v, want [B-1 B-2]", seats)
	}
}

// Without maxPerOrder an event takes 10 admissions an order (its ticket
// types the event's limit): the probe's quantity 1,000 is refused with the
// cart's code on quote, reserve and register alike, as they all price
// through Price. An event-level maxPerOrder bounds tickets, seats, area
// places and tables' seats together.
func TestMaxPerOrderDefaultAndEventLimit(t *testing.T) {
	ga := event(t, gaEvent)
	if ga.MaxPerOrder != catalog.DefaultMaxPerOrder {
		t.Fatalf("event without maxPerOrder: %d, want the default %d", ga.MaxPerOrder, catalog.DefaultMaxPerOrder)
	}
	seated := event(t, `{"id":"ev_s4","status":"on_sale","maxPerOrder":4,"tickets":[],
	  "seatMap":{"categories":[{"id":"c","name":"C","price":10}],
	    "rows":[{"label":"A","seats":10,"category":"c"}],
	    "gaAreas":[{"id":"floor","name":"Floor","capacity":50,"category":"c"}],
	    "tables":[{"id":"T1","seats":3,"category":"c"}]}}`)
	refused := []struct {
		name  string
		ev    *catalog.CompiledEvent
		cart  Cart
		limit int64
	}{
		{"the probe: 1,000 of a ticket without maxPerOrder", ga, Cart{SelectedTicketID: "tk_vip", Quantity: n(1000)}, 10},
		{"11 of a ticket without maxPerOrder", ga, Cart{SelectedTicketID: "tk_vip", Quantity: n(11)}, 10},
		{"11 admissions over two ticket types", ga, Cart{Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 6}, {TicketID: "tk_vip", Quantity: 5}}}, 10},
		{"5 seats of an event of 4", seated, Cart{SeatLabels: []string{"A-1", "A-2", "A-3", "A-4", "A-5"}}, 4},
		{"5 area places", seated, Cart{GASelections: []AreaLine{{AreaID: "floor", Quantity: 5}}}, 4},
		{"a table of 3 and 2 seats", seated, Cart{SeatLabels: []string{"A-1", "A-2"}, TableSelections: []TableLine{{TableID: "T1"}}}, 4},
		{"a seat, 2 area places and a table of 3", seated,
			Cart{SeatLabels: []string{"A-1"}, GASelections: []AreaLine{{AreaID: "floor", Quantity: 1}}, TableSelections: []TableLine{{TableID: "T1"}}}, 4},
	}
	for _, c := range refused {
		_, e := Price(c.ev, c.cart)
		if e == nil || e.Code != "MAX_PER_ORDER_EXCEEDED" || e.Status != 400 || e.Fields["maxPerOrder"] != c.limit {
			t.Errorf("%s: %+v, want 400 MAX_PER_ORDER_EXCEEDED with maxPerOrder %d", c.name, e, c.limit)
		}
	}
	fits := []struct {
		name string
		ev   *catalog.CompiledEvent
		cart Cart
	}{
		{"10 of a ticket without maxPerOrder", ga, Cart{SelectedTicketID: "tk_vip", Quantity: n(10)}},
		{"10 over two ticket types", ga, Cart{Tickets: []TicketLine{{TicketID: "tk_ga", Quantity: 5}, {TicketID: "tk_vip", Quantity: 5}}}},
		{"a table of 3 and a seat", seated, Cart{SeatLabels: []string{"A-1"}, TableSelections: []TableLine{{TableID: "T1"}}}},
		{"4 area places", seated, Cart{GASelections: []AreaLine{{AreaID: "floor", Quantity: 4}}}},
	}
	for _, c := range fits {
		if q, e := Price(c.ev, c.cart); e != nil || int64(len(q.Admissions)) > c.ev.MaxPerOrder {
			t.Errorf("%s: %v", c.name, e)
		}
	}
}
