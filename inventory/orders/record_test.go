package orders

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/keys"
)

// The record reserve encodes is the one the worker decodes: every field
// back, and its lines and tickets as the very bytes Encode made, which the
// order's row keeps.
func TestEncodedRecordDecodesUnchanged(t *testing.T) {
	id := NewOrderID("ev_rec")
	rec := Record{OrderID: id, EventID: "ev_rec", TenantID: "t1", ChannelID: "ch1", Source: SourceChannel,
		BuyerName: "Ada", BuyerEmail: "ada@example.com", Currency: "USD", Subtotal: 5000, Fee: 150, Total: 5150,
		Lines: []Line{{Kind: LineTicket, RefID: "tk_ga", Quantity: 2, UnitPrice: 2500, Amount: 5000}},
		Tickets: []Ticket{{TicketID: TicketID(id, 0), Label: "GA", Kind: LineTicket, RefID: "tk_ga"},
			{TicketID: TicketID(id, 1), Label: "GA", Kind: LineTicket, RefID: "tk_ga"}},
		CreatedAtMs: 1_700_000_000_000, Caller: "ch:ch1", IdempotencyKey: "k1", Fingerprint: "f1"}
	js, tix, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, left := range []string{`"orderId"`, `"eventId"`, `"tickets"`, `"discount"`} {
		if strings.Contains(string(js), left) {
			t.Errorf("the stored record holds %s: %s", left, js)
		}
	}
	got, err := DecodePaid(map[string]string{StreamOrderID: id, StreamRecord: string(js), StreamTickets: string(tix),
		StreamRef: "psp-1", StreamPaidAt: "1700000000500"})
	if err != nil {
		t.Fatal(err)
	}
	if got.TicketsJSON != string(tix) {
		t.Errorf("tickets kept as %q, want the stored %q", got.TicketsJSON, tix)
	}
	if i := strings.Index(string(js), got.LinesJSON); got.LinesJSON == "" || i < 0 || !strings.HasPrefix(got.LinesJSON, "[") {
		t.Errorf("lines kept as %q, not the stored record's own (%s)", got.LinesJSON, js)
	}
	got.LinesJSON, got.TicketsJSON = "", ""
	want := rec
	want.PartnerReference, want.PaidAtMs = "psp-1", 1_700_000_000_500
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if ev, _ := keys.OrderEvent(id); ev != got.EventID {
		t.Fatalf("event %q", got.EventID)
	}
}
