package storefront_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
)

const goodCard = "4242424242424242"

type session struct{ URL, SessionID, RegistrationID string }

func cardSession(t *testing.T, s *servertest.Server, body map[string]any) session {
	t.Helper()
	r := s.Front(t, "POST", "/card/create-checkout-session", body)
	expect(t, r, 200, "")
	var out session
	r.Decode(t, &out)
	if !strings.HasPrefix(out.URL, s.URL+"/pay/card/") {
		t.Fatalf("checkout url %q is not the hosted card page", out.URL)
	}
	return out
}

func cardBody(reg servertest.Registered, extra map[string]any) map[string]any {
	m := map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID,
		"successUrl": "https://shop.example.com/thanks?reg={REGISTRATION_ID}&cs={CHECKOUT_SESSION_ID}",
		"cancelUrl":  "https://shop.example.com/cart"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// A free registration is confirmed at once, its tickets issued, and the
// worker writes it with the buyer's e-mail queued.
func TestFreeRegistrationIsConfirmedAtOnce(t *testing.T) {
	t.Parallel()
	s := start(t)
	reg := s.MustRegister(t, servertest.Guest("open-day", map[string]any{"selectedTicketId": "tk_free", "quantity": 2}))
	if reg.Status != registrations.StatusConfirmed || reg.Payment.PaymentStatus != registrations.PaymentNotRequired ||
		reg.Total != 0 || len(reg.Tickets) != 2 || reg.EventID != "sf_free" {
		t.Fatalf("free registration = %+v", reg)
	}
	if got := s.Registration(t, reg.RegistrationID); got.Status != registrations.StatusConfirmed || len(got.Tickets) != 2 {
		t.Fatalf("read back = %+v", got)
	}
	// Registration ids travel in URLs (success pages, session ids): the
	// read by id never hands out the ticket page's link, which the buyer's
	// e-mail carries.
	for _, r := range []*servertest.Response{
		s.Front(t, "GET", "/registration/"+reg.RegistrationID, nil),
		s.Front(t, "POST", "/register-guest", servertest.Guest("open-day", map[string]any{"selectedTicketId": "tk_free"})),
	} {
		expect(t, r, 200, "")
		if b := string(r.Body); strings.Contains(b, "ticketsUrl") || strings.Contains(b, "/tickets/") || strings.Contains(b, "?k=") {
			t.Fatalf("a confirmed registration's answer links the ticket page: %s", b)
		}
	}
	s.Drain(t)
	if n := s.Count(t, `SELECT count(*) FROM orders WHERE id = $1 AND source = 'storefront'`, reg.RegistrationID); n != 1 {
		t.Fatalf("%d storefront orders in Postgres, want 1", n)
	}
	if n := s.Count(t, `SELECT count(*) FROM outbox WHERE order_id = $1 AND kind = 'buyer_tickets'`, reg.RegistrationID); n != 1 {
		t.Fatalf("%d buyer e-mails queued, want 1", n)
	}
	// Nothing left to pay.
	r := s.Front(t, "POST", "/card/create-checkout-session", cardBody(reg, map[string]any{"selectedTicketId": "tk_free", "quantity": 2, "selectedTicketAmount": 0}))
	expect(t, r, 409, "REGISTRATION_NOT_PAYABLE")
	if r.Reason != "paid" {
		t.Fatalf("reason %q, want paid", r.Reason)
	}
}

// The whole paid flow: register, open a card session, pay on the hosted
// page (the processor's signed webhook), and the registration is confirmed
// and written to Postgres once.
func TestPaidRegistrationConfirmedByTheCardWebhook(t *testing.T) {
	t.Parallel()
	s := start(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	if reg.Status != registrations.StatusAwaitingPayment || reg.Amount != 5300 || reg.ExpiresAt == "" || len(reg.Tickets) != 0 {
		t.Fatalf("paid registration = %+v, want awaiting payment of 53.00", reg)
	}
	// The claim is at once: capacity left dropped by two.
	var ev event
	s.Front(t, "GET", "/events/sf_ga", nil).Decode(t, &ev)
	if ev.Tickets[0].Remaining != 48 {
		t.Fatalf("tk_adult remaining %d after a hold of 2, want 48", ev.Tickets[0].Remaining)
	}
	sess := cardSession(t, s, cardBody(reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50}))
	status, loc := s.PayOnPage(t, sess.URL, goodCard)
	if status != 303 || !strings.HasPrefix(loc, "https://shop.example.com/thanks?reg="+reg.RegistrationID+"&cs=") || strings.Contains(loc, "{") {
		t.Fatalf("paying on the page: %d to %q", status, loc)
	}
	got := s.Registration(t, reg.RegistrationID)
	if got.Status != registrations.StatusConfirmed || got.Payment.PaymentStatus != registrations.PaymentPaid ||
		got.Payment.Amount != 5300 || len(got.Tickets) != 2 {
		t.Fatalf("after the webhook: %+v, want confirmed, paid 53.00, 2 tickets", got)
	}
	s.Drain(t)
	if n := s.Count(t, `SELECT count(*) FROM orders WHERE id = $1 AND source = 'storefront'`, reg.RegistrationID); n != 1 {
		t.Fatalf("%d orders in Postgres, want 1", n)
	}
	if n := s.Count(t, `SELECT count(*) FROM tickets WHERE order_id = $1`, reg.RegistrationID); n != 2 {
		t.Fatalf("%d tickets in Postgres, want 2", n)
	}
	// A paid registration takes no second session.
	r := s.Front(t, "POST", "/card/create-checkout-session", cardBody(reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50}))
	expect(t, r, 409, "REGISTRATION_NOT_PAYABLE")
}

func TestWalletPaymentConfirmsTheRegistration(t *testing.T) {
	t.Parallel()
	s := start(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child"}))
	quoted := s.Front(t, "POST", "/wallet/create-payment", map[string]any{"registrationId": reg.RegistrationID, "amount": "11.50", "selectedTicketId": "tk_child", "quantity": 1})
	expect(t, quoted, 400, "INVALID_REQUEST") // amounts are JSON numbers
	bad := s.Front(t, "POST", "/wallet/create-payment", map[string]any{"registrationId": reg.RegistrationID, "amount": 10, "selectedTicketId": "tk_child", "quantity": 1})
	expect(t, bad, 400, "AMOUNT_MISMATCH") // 10 + 1.50 fee
	if bad.Raw["serverTotal"] != 11.5 {
		t.Fatalf("serverTotal %v, want 11.5", bad.Raw["serverTotal"])
	}
	r := s.Front(t, "POST", "/wallet/create-payment", map[string]any{"registrationId": reg.RegistrationID, "amount": 11.5, "selectedTicketId": "tk_child", "quantity": 1})
	expect(t, r, 200, "")
	var w session
	r.Decode(t, &w)
	if !strings.HasPrefix(w.URL, s.URL+"/pay/wallet/") {
		t.Fatalf("wallet url %q", w.URL)
	}
	if status, _ := s.PayOnPage(t, w.URL, ""); status != 303 && status != 200 {
		t.Fatalf("paying on the wallet page: %d", status)
	}
	if got := s.Registration(t, reg.RegistrationID); got.Status != registrations.StatusConfirmed || got.Payment.Amount != 1150 {
		t.Fatalf("after the wallet callback: %+v", got)
	}
}

func TestPaymentCallsCheckAmountCartAndURLs(t *testing.T) {
	t.Parallel()
	s := start(t)
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	for _, c := range []struct {
		name   string
		extra  map[string]any
		status int
		code   string
	}{
		{"tampered amount", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 25}, 400, "AMOUNT_MISMATCH"},
		{"quantity omitted charges one ticket: not this registration", map[string]any{"selectedTicketId": "tk_adult", "selectedTicketAmount": 25}, 400, "CART_MISMATCH"},
		{"another ticket", map[string]any{"selectedTicketId": "tk_child", "quantity": 2, "selectedTicketAmount": 20}, 400, "CART_MISMATCH"},
		{"no amount", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}, 400, "INVALID_REQUEST"},
		{"the amount as a string", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": "50"}, 400, "INVALID_REQUEST"},
		{"a fraction of a cent", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50.001}, 400, "INVALID_REQUEST"},
		{"success url off the key's domains", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50,
			"successUrl": "https://evil.test/steal"}, 400, "INVALID_REQUEST"},
		{"another event", map[string]any{"eventId": "sf_free", "selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50}, 404, "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.Front(t, "POST", "/card/create-checkout-session", cardBody(reg, c.extra))
			expect(t, r, c.status, c.code)
			if c.code == "AMOUNT_MISMATCH" && r.Raw["serverAmount"] != 50.0 {
				t.Fatalf("serverAmount %v, want 50", r.Raw["serverAmount"])
			}
		})
	}
}

// Another tenant's registration answers exactly as one that does not
// exist, however it is asked for.
func TestForeignRegistrationIsNotFound(t *testing.T) {
	t.Parallel()
	s := start(t)
	other := s.Do(t, "POST", "/v1/storefront/register-guest", headers("x-service-key", "pk_other", "Origin", "https://other.example.net"),
		servertest.Guest("ot_ga", map[string]any{"selectedTicketId": "tk_o"}))
	expect(t, other, 200, "")
	var foreign servertest.Registered
	other.Decode(t, &foreign)
	mine := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child"}))
	// A well-formed id ticketd never made, in the same event as the foreign one.
	unknownID := "o" + strings.Repeat("a", 24) + ".ot_ga"
	unknown := s.Front(t, "GET", "/registration/"+unknownID, nil)
	expect(t, unknown, 404, "NOT_FOUND")
	for _, path := range []string{"/registration/" + foreign.RegistrationID, "/registration/not-an-id", "/registration/" + mine.RegistrationID + "x"} {
		r := s.Front(t, "GET", path, nil)
		if r.Status != 404 || !bytes.Equal(r.Body, unknown.Body) {
			t.Fatalf("GET %s: %s, want the unknown registration's %s", path, r, unknown.Body)
		}
	}
	w := s.Front(t, "POST", "/wallet/create-payment", map[string]any{"registrationId": foreign.RegistrationID, "amount": 20})
	if w.Status != 404 || !bytes.Equal(w.Body, unknown.Body) {
		t.Fatalf("paying another tenant's registration: %s", w)
	}
	// Its own key reads it.
	r := s.Do(t, "GET", "/v1/storefront/registration/"+foreign.RegistrationID, headers("x-service-key", "pk_other", "Origin", "https://other.example.net"), nil)
	expect(t, r, 200, "")
}

// Seats pass from the buyer's hold to the registration; a seat someone
// else holds cannot be registered.
func TestSeatRegistrationTakesTheHeldSeats(t *testing.T) {
	t.Parallel()
	s := start(t)
	mine, theirs := holdToken(t, s, "hall"), holdToken(t, s, "hall")
	expect(t, hold(t, s, "hall", mine, "A-5", "A-6"), 200, "")
	expect(t, hold(t, s, "hall", theirs, "A-7"), 200, "")
	c := s.Front(t, "POST", "/register-guest", servertest.Guest("hall", map[string]any{"seatLabels": []string{"A-6", "A-7"}, "seatHoldToken": mine}))
	expect(t, c, 409, "SEAT_CONFLICT")
	expect(t, s.Front(t, "POST", "/register-guest", servertest.Guest("hall", map[string]any{"seatLabels": []string{"B-1"}, "seatHoldToken": mine})), 400, "SEAT_NOT_PRICED")
	expect(t, s.Front(t, "POST", "/register-guest", servertest.Guest("hall", map[string]any{"seatLabels": []string{"A-5"}})), 400, "INVALID_REQUEST")
	reg := s.MustRegister(t, servertest.Guest("hall", map[string]any{"seatLabels": []string{"A-5", "A-6"}, "seatHoldToken": mine}))
	if reg.Amount != 2*4000+2*200 {
		t.Fatalf("seat registration amount %s, want 84.00", reg.Amount)
	}
	sess := cardSession(t, s, cardBody(reg, map[string]any{"seatLabels": []string{"A-6", "A-5"}, "seatHoldToken": mine, "selectedTicketAmount": 80}))
	if status, _ := s.PayOnPage(t, sess.URL, goodCard); status != 303 {
		t.Fatalf("pay: %d", status)
	}
	if got := s.Registration(t, reg.RegistrationID); got.Status != registrations.StatusConfirmed {
		t.Fatalf("seat registration after payment: %+v", got)
	}
	var av struct{ Booked []string }
	s.Front(t, "GET", "/seating/events/hall/availability", nil).Decode(t, &av)
	if strings.Join(av.Booked, ",") != "A-5,A-6" {
		t.Fatalf("booked %v, want A-5, A-6", av.Booked)
	}
}

// A payment that arrives after the hold expired and the seat was sold to
// someone else confirms nothing: the registration needs a refund, the
// host is told, and the seat stays with its buyer.
func TestLatePaymentForAResoldSeatIsRefunded(t *testing.T) {
	t.Parallel()
	s := servertest.StartStorefront(t, servertest.Options{CheckoutTTL: time.Second})
	tok := holdToken(t, s, "rush")
	expect(t, hold(t, s, "rush", tok, "R-1"), 200, "")
	reg := s.MustRegister(t, servertest.Guest("rush", map[string]any{"seatLabels": []string{"R-1"}, "seatHoldToken": tok}))
	sess := cardSession(t, s, cardBody(reg, map[string]any{"seatLabels": []string{"R-1"}, "selectedTicketAmount": 30}))
	// The read says expired once the window passed; the seat is given
	// back when the sweep has expired the registration.
	seatHeld := func() bool {
		var av struct{ Held []string }
		s.Front(t, "GET", "/seating/events/rush/availability", nil).Decode(t, &av)
		return slices.Contains(av.Held, "R-1")
	}
	deadline := time.Now().Add(15 * time.Second)
	for s.Registration(t, reg.RegistrationID).Status != registrations.StatusExpired || seatHeld() {
		if time.Now().After(deadline) {
			t.Fatal("the registration's hold never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The seat is free again: a partner buyer takes it.
	keyed := servertest.Keyed("front")
	var pt struct{ HoldToken string }
	s.Do(t, "POST", "/v1/channel/seating/events/sf_rush/hold-token", keyed, nil).Decode(t, &pt)
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/sf_rush/hold", keyed, map[string]any{"holdToken": pt.HoldToken, "seatLabels": []string{"R-1"}}), 200, "")
	order := s.MustReserve(t, "front", "sf_rush", map[string]any{"seatLabels": []string{"R-1"}, "seatHoldToken": pt.HoldToken})
	expect(t, s.Confirm(t, "front", order.OrderID, order.Amount, "psp-1"), 200, "")

	var wh payments.CardWebhook
	wh.ID, wh.Type = "evt_late", payments.EventCheckoutCompleted
	wh.Data.Object = payments.CardSession{ID: sess.SessionID, PaymentStatus: "paid", AmountTotal: int64(reg.Total),
		Currency: "usd", ClientReferenceID: reg.RegistrationID}
	body, _ := json.Marshal(wh)
	expect(t, s.Do(t, "POST", "/v1/webhooks/card", map[string]string{"Payment-Signature": payments.Sign(servertest.CardWebhookSecret, time.Now(), body)}, body), 200, "")
	got := s.Registration(t, reg.RegistrationID)
	if got.Status != registrations.StatusRefundRequired || got.Payment.PaymentStatus != registrations.PaymentRefundRequired || got.Reason != "seat_lost" {
		t.Fatalf("late payment for a resold seat: %+v, want refund_required, seat_lost", got)
	}
	if n := s.Count(t, `SELECT count(*) FROM refunds WHERE registration_id = $1 AND reason = 'seat_lost'`, reg.RegistrationID); n != 1 {
		t.Fatalf("%d refunds rows, want 1", n)
	}
	booked, err := s.Redis.Do(context.Background(), s.Redis.B().Hget().Key(s.Space.Booked("sf_rush")).Field("R-1").Build()).ToString()
	if err != nil || booked != order.OrderID {
		t.Fatalf("R-1 booked by %q (%v), want the partner's %s", booked, err, order.OrderID)
	}
}
