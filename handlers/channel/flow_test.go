package channel_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
)

// TestPartnerFlow walks interface.md's partner flow: catalog, quote,
// reserve, confirm (twice), status, and the paid order in Postgres.
func TestPartnerFlow(t *testing.T) {
	s := start(t, servertest.Options{})
	a := keyed("a")

	list := s.Do(t, "GET", "/v1/channel/events", a, nil)
	expect(t, list, 200, "")
	for _, want := range []string{`"ev_ga"`, `"ev_seated"`, `"ev_embargo"`} {
		if !strings.Contains(string(list.Data), want) {
			t.Fatalf("catalog lacks %s: %s", want, list.Data)
		}
	}
	for _, hidden := range []string{"ev_draft", "ev_other", "ev_cancelled", "tk_hidden"} {
		if strings.Contains(string(list.Data), hidden) {
			t.Fatalf("catalog shows %s: %s", hidden, list.Data)
		}
	}
	detail := s.Do(t, "GET", "/v1/channel/events/ev_ga?accessCode=SECRET", a, nil)
	expect(t, detail, 200, "")
	if !strings.Contains(string(detail.Data), "tk_hidden") || !strings.Contains(string(detail.Data), `"remaining":5`) {
		t.Fatalf("detail with access code: %s", detail.Data)
	}

	// 2 x 25.00 + parking 10.00, fee 2 x 1.50, refund protection 8% of 60.00.
	cart := map[string]any{"selectedTicketId": "tk_a", "quantity": 2, "extras": []map[string]any{{"extraId": "ex_parking", "quantity": 1}},
		"refundProtectionOptIn": true}
	q := s.Do(t, "POST", "/v1/channel/events/ev_ga/quote", a, cart)
	expect(t, q, 200, "")
	var quote struct {
		Subtotal, Discount, Fee, VAT, Total money.Cents
		Currency                            string
		RefundProtection                    struct {
			Percent float64 // a plain JSON number, as every other figure
			Amount  money.Cents
		}
	}
	q.Decode(t, &quote)
	if quote.Subtotal != 5000 || quote.Fee != 300 || quote.RefundProtection.Amount != 480 || quote.RefundProtection.Percent != 8 ||
		quote.Total != 6780 || quote.Currency != "USD" {
		t.Fatalf("quote: %s", q.Data)
	}

	h := with(a, "Idempotency-Key", "flow-1")
	r := s.Do(t, "POST", "/v1/channel/events/ev_ga/checkout", h, buyer(cart))
	expect(t, r, 200, "")
	var o reserved
	r.Decode(t, &o)
	if o.Amount != quote.Total || o.Currency != "USD" || o.Duplicate {
		t.Fatalf("reserve: %s (quote total %s)", r.Data, quote.Total)
	}
	// Retrying the same attempt returns the same order.
	r2 := s.Do(t, "POST", "/v1/channel/events/ev_ga/checkout", h, buyer(cart))
	var o2 reserved
	r2.Decode(t, &o2)
	if o2.OrderID != o.OrderID || !o2.Duplicate || o2.Amount != o.Amount {
		t.Fatalf("replay: %s, first %s", r2.Data, r.Data)
	}
	st := s.Do(t, "POST", "/v1/channel/orders/status", a, map[string]any{"orderId": o.OrderID})
	if !strings.Contains(string(st.Data), `"status":"pending"`) {
		t.Fatalf("status before confirm: %s", st)
	}
	// Reserve claims nothing.
	if d := s.Do(t, "GET", "/v1/channel/events/ev_ga", a, nil); !strings.Contains(string(d.Data), `"remaining":10`) {
		t.Fatalf("reserve changed remaining: %s", d.Data)
	}

	c := confirm(t, s, "a", o.OrderID, o.Amount, "pay-123")
	expect(t, c, 200, "")
	var conf struct {
		OrderID   string
		Status    string
		Duplicate bool
		Tickets   []struct{ TicketID, Label string }
	}
	c.Decode(t, &conf)
	if conf.Status != "paid" || len(conf.Tickets) != 2 || conf.Duplicate {
		t.Fatalf("confirm: %s", c.Data)
	}
	c2 := confirm(t, s, "a", o.OrderID, o.Amount, "pay-123")
	expect(t, c2, 200, "")
	if !strings.Contains(string(c2.Data), `"duplicate":true`) || !strings.Contains(string(c2.Data), conf.Tickets[0].TicketID) {
		t.Fatalf("second confirm: %s", c2.Data)
	}
	st = s.Do(t, "POST", "/v1/channel/orders/status", a, map[string]any{"orderId": o.OrderID})
	if !strings.Contains(string(st.Data), `"status":"paid"`) {
		t.Fatalf("status after confirm: %s", st)
	}
	// Another channel cannot read it.
	expect(t, s.Do(t, "POST", "/v1/channel/orders/status", keyed("slow"), map[string]any{"orderId": o.OrderID}), 404, "NOT_FOUND")

	if n := s.Drain(t); n != 1 {
		t.Fatalf("drained %d entries, want 1", n)
	}
	if n := s.Count(t, `SELECT count(*) FROM tickets WHERE order_id = $1`, o.OrderID); n != 2 {
		t.Fatalf("%d tickets in Postgres, want 2", n)
	}
	if n := s.Count(t, `SELECT count(*) FROM orders WHERE id = $1 AND total_cents = $2 AND partner_reference = 'pay-123'`, o.OrderID, int64(o.Amount)); n != 1 {
		t.Fatalf("order not in Postgres as paid")
	}
	// A second charge of a paid order (another reference) is refunded, not
	// hidden behind a duplicate.
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "pay-456"), 409, "CONFIRM_FAILED")

	// Once Redis forgets the order, Postgres answers the status and confirm
	// replays.
	okey, _ := s.Space.Order(o.OrderID)
	s.Redis.Do(t.Context(), s.Redis.B().Del().Key(okey).Build())
	st = s.Do(t, "POST", "/v1/channel/orders/status", a, map[string]any{"orderId": o.OrderID})
	if st.Status != 200 || !strings.Contains(string(st.Data), `"status":"paid"`) {
		t.Fatalf("status from Postgres: %s", st)
	}
	c3 := confirm(t, s, "a", o.OrderID, o.Amount, "pay-123")
	expect(t, c3, 200, "")
	var conf3 struct {
		Duplicate bool
		Tickets   []struct{ TicketID, Label string }
	}
	c3.Decode(t, &conf3)
	if !conf3.Duplicate || len(conf3.Tickets) != 2 || conf3.Tickets[0] != conf.Tickets[0] || conf3.Tickets[1] != conf.Tickets[1] {
		t.Fatalf("confirm replay from Postgres: %s, first answer %s", c3.Data, c.Data)
	}
	r4 := confirm(t, s, "a", o.OrderID, o.Amount, "pay-789")
	expect(t, r4, 409, "CONFIRM_FAILED")
	if r4.Raw["reason"] != "already_paid" || r4.Raw["refundRequired"] != true {
		t.Fatalf("second charge after Redis forgot: %s", r4)
	}
	expect(t, confirm(t, s, "slow", o.OrderID, o.Amount, "pay-123"), 404, "NOT_FOUND")
}

// TestConfirmOfCancelledEventFails: an order pending when the organiser
// cancels is refunded, never paid.
func TestConfirmOfCancelledEventFails(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(contentionCatalog))
	o := mustReserve(t, s, "hot", "ev_hot", map[string]any{"selectedTicketId": "tk_x"})
	s.Apply(t, []byte(strings.Replace(contentionCatalog, `"status": "on_sale"`, `"status": "cancelled"`, 1)))
	r := confirm(t, s, "hot", o.OrderID, o.Amount, "p")
	expect(t, r, 409, "CONFIRM_FAILED")
	if r.Raw["reason"] != "cancelled" || r.Raw["refundRequired"] != true {
		t.Fatalf("confirm after cancellation: %s", r)
	}
	st := s.Do(t, "POST", "/v1/channel/orders/status", keyed("hot"), map[string]any{"orderId": o.OrderID})
	if !strings.Contains(string(st.Data), `"status":"failed"`) {
		t.Fatalf("status after cancellation: %s", st)
	}
}

// TestPendingOrderExpires checks that an unconfirmed order becomes failed
// after TICKETD_ORDER_TTL and that confirming it then asks for a refund.
func TestPendingOrderExpires(t *testing.T) {
	s := start(t, servertest.Options{OrderTTL: 300 * time.Millisecond})
	o := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b"})
	waitFor(t, func() bool {
		st := s.Do(t, "POST", "/v1/channel/orders/status", keyed("a"), map[string]any{"orderId": o.OrderID})
		return strings.Contains(string(st.Data), `"status":"failed"`)
	})
	// Expired is a refund whatever amount was charged (not a re-quote).
	wrong := confirm(t, s, "a", o.OrderID, o.Amount+500, "late")
	expect(t, wrong, 409, "CONFIRM_FAILED")
	if wrong.Raw["reason"] != "expired" {
		t.Fatalf("expired order with another amount: %s", wrong)
	}
	r := confirm(t, s, "a", o.OrderID, o.Amount, "late")
	expect(t, r, 409, "CONFIRM_FAILED")
	if r.Raw["refundRequired"] != true {
		t.Fatalf("no refundRequired: %s", r)
	}
}

// TestContentionSellsExactlyCapacity: 500 buyers race for an event capped at
// 50 over two ticket types; exactly 50 admissions are confirmed, every other
// confirm is CONFIRM_FAILED, and Postgres ends with exactly 50 tickets.
func TestContentionSellsExactlyCapacity(t *testing.T) {
	for round := 0; round < 3; round++ {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) {
			s := servertest.Start(t, servertest.Options{})
			s.Apply(t, []byte(contentionCatalog))
			var wg sync.WaitGroup
			var mu sync.Mutex
			codes := map[string]int{}
			for i := 0; i < 500; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					tk := []string{"tk_x", "tk_y"}[i%2]
					r := s.Do(t, "POST", "/v1/channel/events/ev_hot/checkout",
						with(keyed("hot"), "Idempotency-Key", fmt.Sprintf("buyer-%d", i)),
						buyer(map[string]any{"selectedTicketId": tk}))
					code := r.Code
					if r.Status == 200 {
						var o reserved
						r.Decode(t, &o)
						c := s.Do(t, "POST", "/v1/channel/orders/confirm",
							with(keyed("hot"), "x-service-signature", sig("sk_hot", o.OrderID, o.Amount, "p")),
							fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":"p"}`, o.OrderID, o.Amount))
						code = c.Code
						if c.Status == 200 {
							code = "PAID"
						}
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
				}(i)
			}
			wg.Wait()
			if codes["PAID"] != 50 {
				t.Fatalf("paid %d, want exactly 50 (codes %v)", codes["PAID"], codes)
			}
			for code, n := range codes {
				switch code {
				case "PAID", "CONFIRM_FAILED", "EVENT_SOLD_OUT", "TICKET_SOLD_OUT":
				default:
					t.Fatalf("unexpected outcome %s x%d (codes %v)", code, n, codes)
				}
			}
			// Both ticket types still have capacity of their own, but the
			// event's cap is reached: neither can be bought.
			d := s.Do(t, "GET", "/v1/channel/events/ev_hot", keyed("hot"), nil)
			if strings.Count(string(d.Data), `"remaining":0,"soldOut":true`) != 2 {
				t.Fatalf("detail after sell-out: %s", d.Data)
			}
			s.Drain(t)
			if n := s.Count(t, `SELECT count(*) FROM tickets WHERE event_id = 'ev_hot'`); n != 50 {
				t.Fatalf("Postgres holds %d tickets, want 50", n)
			}
			if n := s.Count(t, `SELECT count(*) FROM orders WHERE event_id = 'ev_hot' AND status = 'paid'`); n != 50 {
				t.Fatalf("Postgres holds %d paid orders, want 50", n)
			}
		})
	}
}

// TestIdempotentReserveUnderConcurrency: 20 simultaneous reserves with one
// key create one order.
func TestIdempotentReserveUnderConcurrency(t *testing.T) {
	s := start(t, servertest.Options{})
	ids, codes := concurrently(t, 20, func() *servertest.Response {
		return s.Do(t, "POST", "/v1/channel/events/ev_ga/checkout", with(keyed("a"), "Idempotency-Key", "same-key"),
			buyer(map[string]any{"selectedTicketId": "tk_b"}))
	})
	if len(ids) != 1 {
		t.Fatalf("%d distinct orders for one key: %v", len(ids), ids)
	}
	for code := range codes {
		if code != "DUPLICATE_IN_PROGRESS" {
			t.Fatalf("unexpected %s", code)
		}
	}
	if keys := orderKeys(t, s); keys != 1 {
		t.Fatalf("%d order keys in Redis, want 1", keys)
	}
}

const contentionCatalog = `{
 "tenants": [{"id": "t_hot", "name": "Hot", "notifyEmail": "hot@test.example", "publishableKeys": [],
  "events": [{"id": "ev_hot", "shortId": "hot", "slug": "hot", "name": "Hot", "startsAt": "2027-01-01T00:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_hot"], "capacity": 50,
   "tickets": [{"id": "tk_x", "name": "X", "price": 10, "capacity": 40}, {"id": "tk_y", "name": "Y", "price": 20, "capacity": 40}]}]}],
 "channels": [{"id": "ch_hot", "name": "Hot", "key": "ck_hot", "secret": "cs_hot_secret", "signingKey": "sk_hot",
  "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
  "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit",
  "rateLimits": {"checkout": 100000, "confirm": 100000, "status": 100000, "session": 100000, "catalog": 100000}}]}`

// TestRaisedCapacitySellsAtOnceAfterASellOut: after a sell-out, sold-out
// answers may come from this node's memory; an apply that raises the
// capacity moves the catalog version, and the very next reserve sells.
func TestRaisedCapacitySellsAtOnceAfterASellOut(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	small := strings.Replace(contentionCatalog, `"capacity": 50`, `"capacity": 1`, 1)
	s.Apply(t, []byte(small))
	body := buyer(map[string]any{"selectedTicketId": "tk_x"})
	o := mustReserve(t, s, "hot", "ev_hot", body)
	if r := confirm(t, s, "hot", o.OrderID, o.Amount, "p1"); r.Status != 200 {
		t.Fatalf("confirm the last admission: %d %s", r.Status, r.Code)
	}
	for range 3 { // the first learns from Redis, the others may not ask it
		expect(t, reserve(t, s, "hot", "ev_hot", body), 409, "EVENT_SOLD_OUT")
	}
	s.Apply(t, []byte(strings.Replace(contentionCatalog, `"capacity": 50`, `"capacity": 2`, 1)))
	o = mustReserve(t, s, "hot", "ev_hot", body)
	if r := confirm(t, s, "hot", o.OrderID, o.Amount, "p2"); r.Status != 200 {
		t.Fatalf("confirm after the capacity was raised: %d %s", r.Status, r.Code)
	}
}
