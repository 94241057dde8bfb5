package pricing

import (
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// FuzzPrice prices fuzzed carts (as quote, reserve and register-guest
// decode them) against a GA event, a seated one and one at
// catalog.MaxAmount with every percent at 100: no panic; a refusal is a
// coded client error; a quote's lines are unit price times quantity, its
// total the sum of its parts, positive or zero and within 2^53 cents, and
// it admits at most MaxQuantity people.
func FuzzPrice(f *testing.F) {
	max := catalog.MaxAmount.String()
	events := []*catalog.CompiledEvent{
		event(f, gaEvent),
		event(f, seatedEvent),
		event(f, `{"id":"ev_max","status":"on_sale","capacity":100000,
		  "pricing":{"feePerTicket":`+max+`,"feePercent":100,"vatPercent":100,"refundProtectionPercent":100},
		  "tickets":[{"id":"tk_ga","name":"T","price":`+max+`,"capacity":100000},{"id":"tk_vip","name":"V","price":`+max+`,"capacity":100000}],
		  "extras":[{"id":"ex_parking","name":"X","price":`+max+`,"capacity":100000}],
		  "discountCodes":[{"code":"FIVE","amount":`+max+`},{"code":"Early10","percent":100}]}`),
	}
	for _, c := range []string{
		`{"selectedTicketId":"tk_ga","quantity":2,"extras":[{"extraId":"ex_parking","quantity":1}],"discountCode":"Early10","refundProtectionOptIn":true}`,
		`{"tickets":[{"ticketId":"tk_ga","quantity":10},{"ticketId":"tk_vip","quantity":990}],"extras":[{"extraId":"ex_parking","quantity":1000}],"refundProtectionOptIn":true}`,
		`{"seatLabels":["A-1","A-2"],"gaSelections":[{"areaId":"floor","quantity":3}],"tableSelections":[{"tableId":"T1"}]}`,
		`{"tickets":[{"ticketId":"tk_ga","quantity":1},{"ticketId":"tk_ga","quantity":1000}]}`,
		`{"tickets":[{"ticketId":"tk_free","quantity":1}],"discountCode":"FIVE"}`,
		`{"selectedTicketId":"tk_hidden","accessCode":"CREW"}`,
		`{"showingId":"x","tickets":[]}`,
	} {
		for i := range events {
			f.Add(uint8(i), []byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		var cart Cart
		if json.Unmarshal(body, &cart) != nil {
			return // the decoders refuse it (httpx.Decode's target)
		}
		ev := events[int(which)%len(events)]
		q, e := Price(ev, cart)
		if e != nil {
			if !apierr.Known(e.Code) || e.Status < 400 || e.Status >= 500 || e.Message == "" {
				t.Fatalf("refusal is not a coded client error: %+v", e)
			}
			return
		}
		if len(q.Admissions) > MaxQuantity {
			t.Fatalf("admits %d", len(q.Admissions))
		}
		for _, l := range q.Lines {
			if l.Quantity < 1 || l.UnitPrice < 0 || l.Amount != l.UnitPrice*money.Cents(l.Quantity) {
				t.Fatalf("line %+v", l)
			}
		}
		sum := q.Subtotal - q.Discount + q.ExtrasTotal + q.Fee + q.VAT
		if q.RefundProtection != nil {
			sum += q.RefundProtection.Amount
		}
		if q.Total < 0 || q.Total > 1<<53 || q.Total != sum || q.Discount < 0 || q.Discount > q.Subtotal {
			t.Fatalf("quote %s = %s? subtotal %s discount %s extras %s fee %s vat %s", q.Total, sum, q.Subtotal, q.Discount, q.ExtrasTotal, q.Fee, q.VAT)
		}
	})
}
