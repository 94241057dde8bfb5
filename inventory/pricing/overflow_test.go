package pricing

import (
	"fmt"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// The largest cart the limits allow, at catalog.MaxAmount everywhere and
// every percent at 100, prices to a positive total within 2^53 cents (what
// money.Parse and a JSON client read exactly). Before MaxAmount a catalog
// could set a price of 2^53 cents and 1,000 tickets with refund
// protection wrapped int64 into a negative total.
func TestLargestCartAtMaxAmountStaysExact(t *testing.T) {
	max := catalog.MaxAmount.String()
	var tickets, extras []string
	var cartTickets, cartExtras []string
	for i := range MaxLines {
		tickets = append(tickets, fmt.Sprintf(`{"id":"tk%d","name":"T","price":%s,"capacity":100000}`, i, max))
		extras = append(extras, fmt.Sprintf(`{"id":"ex%d","name":"X","price":%s,"capacity":100000}`, i, max))
		cartTickets = append(cartTickets, fmt.Sprintf(`{"ticketId":"tk%d","quantity":20}`, i))
		cartExtras = append(cartExtras, fmt.Sprintf(`{"extraId":"ex%d","quantity":%d}`, i, MaxQuantity))
	}
	ev := event(t, `{"id":"ev_max","status":"on_sale","capacity":100000,"maxPerOrder":`+fmt.Sprint(MaxQuantity)+`,
	  "pricing":{"feePerTicket":`+max+`,"feePercent":100,"vatPercent":100,"refundProtectionPercent":100},
	  "tickets":[`+strings.Join(tickets, ",")+`],"extras":[`+strings.Join(extras, ",")+`]}`)
	var cart Cart
	if err := json.Unmarshal([]byte(`{"tickets":[`+strings.Join(cartTickets, ",")+`],"extras":[`+strings.Join(cartExtras, ",")+`],"refundProtectionOptIn":true}`), &cart); err != nil {
		t.Fatal(err)
	}
	q, e := Price(ev, cart)
	if e != nil {
		t.Fatalf("the largest cart is refused: %v", e)
	}
	if len(q.Admissions) != MaxQuantity {
		t.Fatalf("cart admits %d, want the limit %d", len(q.Admissions), MaxQuantity)
	}
	sum := q.Subtotal - q.Discount + q.ExtrasTotal + q.Fee + q.VAT + q.RefundProtection.Amount
	if q.Total <= 0 || q.Total > 1<<53 || q.Total != sum {
		t.Fatalf("total %s (parts %s): not a positive exact amount within 2^53 cents", q.Total, sum)
	}
	if back, err := money.Parse(q.Total.String()); err != nil || back != q.Total {
		t.Fatalf("total %s does not read back: %v", q.Total, err)
	}
}
