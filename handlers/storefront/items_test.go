package storefront_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/payments"
)

// recordingCard is the test card that keeps the last checkout request.
type recordingCard struct {
	*payments.Hosted
	mu   sync.Mutex
	last payments.CheckoutRequest
}

func (c *recordingCard) CreateSession(ctx context.Context, req payments.CheckoutRequest) (payments.Session, error) {
	c.mu.Lock()
	c.last = req
	c.mu.Unlock()
	return c.Hosted.CreateSession(ctx, req)
}

func (c *recordingCard) request() payments.CheckoutRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// hostedPage is the body of the hosted page at url.
func hostedPage(t *testing.T, s *servertest.Server, url string) string {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	if err := s.Client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("hosted page %s: %d %v", url, resp.StatusCode(), err)
	}
	return string(resp.Body())
}

// The hosted card page shows what the buyer pays for by name, and every
// charge: 2 Adult tickets at $25 and the $1.50 fee on each make $53.00,
// and the page says where the $3 came from.
func TestCardPageListsTicketsByNameAndTheFee(t *testing.T) {
	t.Parallel()
	s := start(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	sess := cardSession(t, s, cardBody(reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50}))
	body := hostedPage(t, s, sess.URL)
	for _, want := range []string{"<h1>Summer Night</h1>", "Adult<br>", "2 × $25.00", "$50.00", "Service fee", "$3.00", "<td>Total</td><td class=\"num\">$53.00</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "tk_adult") {
		t.Error("page names the ticket by its catalog id")
	}
}

// A discount code shows as its own negative line named with the code,
// beside the extra and refund protection; the lines add up to the total.
func TestCardPageListsTheDiscountAndEveryCharge(t *testing.T) {
	t.Parallel()
	s := start(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2,
		"extras": []map[string]any{{"extraId": "ex_parking", "quantity": 1}}, "discountCode": "SAVE10", "refundProtectionOptIn": true}))
	// 50.00 - 5.00 (SAVE10) + 10.00 parking + 3.00 fee + 4.40 (8% of 55.00 refund protection) = 62.40
	if reg.Amount != 6240 {
		t.Fatalf("registration amount %v, want 62.40", reg.Amount)
	}
	sess := cardSession(t, s, cardBody(reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50}))
	body := hostedPage(t, s, sess.URL)
	for _, want := range []string{"Adult<br>", "Discount (SAVE10)", "-$5.00", "Parking", "$10.00", "Service fee", "$3.00",
		"Refund protection", "$4.40", "<td>Total</td><td class=\"num\">$62.40</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Whatever the cart, the checkout's items are named from the catalog and
// sum to the amount charged, which is the registration's total.
func TestCheckoutItemsSumToTheAmount(t *testing.T) {
	t.Parallel()
	rec := &recordingCard{}
	s := servertest.StartStorefront(t, servertest.Options{StorefrontCard: func(h *payments.Hosted) payments.Processor {
		rec.Hosted = h
		return rec
	}})
	tok := holdToken(t, s, "hall")
	expect(t, hold(t, s, "hall", tok, "A-12"), 200, "")
	cases := []struct {
		name   string
		cart   map[string]any
		pay    map[string]any
		names  []string
		amount float64
	}{
		{"tickets", map[string]any{"selectedTicketId": "tk_child", "quantity": 3},
			map[string]any{"selectedTicketId": "tk_child", "quantity": 3, "selectedTicketAmount": 30},
			[]string{"Child", "Service fee"}, 34.5},
		{"several types, extra, discount, refund protection", map[string]any{
			"tickets": []map[string]any{{"ticketId": "tk_adult", "quantity": 1}, {"ticketId": "tk_child", "quantity": 2}},
			"extras":  []map[string]any{{"extraId": "ex_parking", "quantity": 2}}, "discountCode": "SAVE10", "refundProtectionOptIn": true},
			map[string]any{"selectedTicketAmount": 45},
			[]string{"Adult", "Child", "Parking", "Discount (SAVE10)", "Service fee", "Refund protection"}, 0},
		{"a seat", map[string]any{"seatLabels": []string{"A-12"}, "seatHoldToken": tok},
			map[string]any{"seatLabels": []string{"A-12"}, "seatHoldToken": tok, "selectedTicketAmount": 40},
			[]string{"Seat A-12 (Stalls)", "Service fee"}, 42},
		{"a standing area", map[string]any{"gaSelections": []map[string]any{{"areaId": "floor", "quantity": 2}}},
			map[string]any{"selectedTicketAmount": 80},
			[]string{"Floor", "Service fee"}, 84},
	}
	for _, c := range cases {
		event := "sf_ga"
		if strings.HasPrefix(c.names[0], "Seat") || c.names[0] == "Floor" {
			event = "hall"
		}
		reg := s.MustRegister(t, servertest.Guest(event, c.cart))
		cardSession(t, s, cardBody(reg, c.pay))
		req := rec.request()
		if req.RegistrationID != reg.RegistrationID || req.Amount != reg.Amount || req.Items.Sum() != req.Amount {
			t.Errorf("%s: items %+v sum to %v, amount %v, registration total %v", c.name, req.Items, req.Items.Sum(), req.Amount, reg.Amount)
		}
		if c.amount != 0 && float64(req.Amount) != c.amount*100 {
			t.Errorf("%s: amount %v, want %v", c.name, req.Amount, c.amount)
		}
		var got []string
		for _, it := range req.Items {
			got = append(got, it.Name)
			if it.Quantity < 1 || it.UnitPrice*money.Cents(it.Quantity) != it.Amount {
				t.Errorf("%s: item %+v: quantity times unit price is not its amount", c.name, it)
			}
		}
		if strings.Join(got, "|") != strings.Join(c.names, "|") {
			t.Errorf("%s: items %q, want %q", c.name, got, c.names)
		}
	}
}
