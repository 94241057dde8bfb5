package channel_test

import (
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// paidOrders reads ticketd_paid_orders_total off the server's registry.
func paidOrders(t *testing.T, s *servertest.Server) float64 {
	t.Helper()
	mfs, err := s.Metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "ticketd_paid_orders_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("ticketd_paid_orders_total is not registered")
	return 0
}

// TestPaidOrdersAreCountedOnce: a confirm that pays an order counts it in
// ticketd_paid_orders_total; its replay, a second charge (already_paid) and a reserve
// do not.
func TestPaidOrdersAreCountedOnce(t *testing.T) {
	t.Parallel()
	s := start(t, servertest.Options{})
	o := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "quantity": 1})
	if n := paidOrders(t, s); n != 0 {
		t.Fatalf("%v paid orders after a reserve", n)
	}
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "psp-1"), 200, "")
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "psp-1"), 200, "")
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "psp-2"), 409, "CONFIRM_FAILED") // already_paid
	if n := paidOrders(t, s); n != 1 {
		t.Fatalf("%v paid orders after one confirm and its replay, want 1", n)
	}
}
