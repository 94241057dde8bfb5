package storefront_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// What one buyer of the rush ended with.
type rushResult struct {
	seat, owner string // owner: the order or registration that got the seat, "" when none
	surface     string
}

// TestSeatRushAcrossBothSurfaces: 200 buyers race for the 20 seats of
// sf_rush, half through the storefront, half through the partner surface,
// ten contenders a seat. Storefront buyers pay at once, walk away (their
// hold expires and the sweeper gives the seat back), or are paid after
// their hold expired (the webhook claims anew or asks for a refund). Each
// seat is sold at most once: in Redis, in Postgres once the worker
// drained, and to exactly the buyers told they have it.
func TestSeatRushAcrossBothSurfaces(t *testing.T) {
	t.Parallel()
	const checkoutTTL = 3 * time.Second
	s := servertest.StartStorefront(t, servertest.Options{Trusted: "127.0.0.1/32", CheckoutTTL: checkoutTTL})
	const buyers, seatCount = 200, 20
	results := make(chan rushResult, buyers)
	var late sync.Map // registration id -> seat, of buyers paid after their hold expired
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			seat := fmt.Sprintf("R-%d", i%seatCount+1)
			if i%2 == 0 {
				results <- rushStorefront(t, s, i, seat, checkoutTTL, &late)
			} else {
				results <- rushPartner(t, s, i, seat)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(results)

	// Every hold left has expired and been swept by now.
	time.Sleep(checkoutTTL)
	s.Drain(t)

	told := map[string]string{} // seat -> owner the buyer was told
	bySurface := map[string]int{}
	for r := range results {
		if r.owner == "" {
			continue
		}
		if prev, dup := told[r.seat]; dup {
			t.Errorf("seat %s sold twice: to %s and %s", r.seat, prev, r.owner)
		}
		told[r.seat] = r.owner
		bySurface[r.surface]++
	}
	lateOutcomes := map[string]int{}
	late.Range(func(k, v any) bool {
		reg := s.Registration(t, k.(string))
		lateOutcomes[reg.Status]++
		switch reg.Status {
		case registrations.StatusConfirmed: // claimed anew
			if prev, dup := told[v.(string)]; dup {
				t.Errorf("seat %s sold twice: to %s and, late, %s", v, prev, reg.RegistrationID)
			}
			told[v.(string)] = reg.RegistrationID
			bySurface["storefront"]++
		case registrations.StatusRefundRequired:
			if n := s.Count(t, `SELECT count(*) FROM refunds WHERE registration_id = $1`, reg.RegistrationID); n != 1 {
				t.Errorf("late payment of %s to refund: %d refunds rows, want 1", reg.RegistrationID, n)
			}
		default:
			t.Errorf("late payment left %s %s", reg.RegistrationID, reg.Status)
		}
		return true
	})
	t.Logf("seats sold by surface %v; late payments %v", bySurface, lateOutcomes)
	if bySurface["storefront"] == 0 || bySurface["partner"] == 0 {
		t.Errorf("sales by surface %v: the rush did not exercise both", bySurface)
	}

	// Redis: one owner a seat, and it is the buyer who was told so.
	ctx := context.Background()
	booked, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Booked("sf_rush")).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if len(booked) != len(told) || len(booked) > seatCount {
		t.Errorf("%d seats booked in Redis, %d buyers told they have one", len(booked), len(told))
	}
	for seat, owner := range told {
		if booked[seat] != owner {
			t.Errorf("seat %s: booked by %q in Redis, sold to %s", seat, booked[seat], owner)
		}
	}
	// Postgres: each seat on one ticket at most, of the buyer told so.
	rows, err := s.Pool.Query(ctx, `SELECT ref_id, order_id FROM tickets WHERE event_id = 'sf_rush' AND kind = 'seat'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	inPG := map[string]string{}
	for rows.Next() {
		var seat, order string
		if err := rows.Scan(&seat, &order); err != nil {
			t.Fatal(err)
		}
		if prev, dup := inPG[seat]; dup {
			t.Errorf("seat %s on two tickets in Postgres: %s and %s", seat, prev, order)
		}
		inPG[seat] = order
	}
	if len(inPG) != len(told) {
		t.Errorf("%d seats sold in Postgres, %d buyers told they have one", len(inPG), len(told))
	}
	for seat, owner := range told {
		if inPG[seat] != owner {
			t.Errorf("seat %s: Postgres has %q, sold to %s", seat, inPG[seat], owner)
		}
	}
}

// rushStorefront is one storefront buyer: hold, register, then pay now
// (mode 0), walk away (1) or pay after the hold expired (2).
func rushStorefront(t *testing.T, s *servertest.Server, i int, seat string, ttl time.Duration, late *sync.Map) rushResult {
	out := rushResult{seat: seat, surface: "storefront"}
	h := servertest.Shop()
	h["X-Forwarded-For"] = fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
	call := func(path string, body any) *servertest.Response {
		return s.Do(t, "POST", "/v1/storefront"+path, h, body)
	}
	// Each buyer reads its registration from its own address, as its
	// browser would: one IP polling for all would meet the read limit.
	status := func(id string) string {
		var reg servertest.Registered
		if r := s.Do(t, "GET", "/v1/storefront/registration/"+id, h, nil); r.Status != 200 || json.Unmarshal(r.Data, &reg) != nil {
			t.Errorf("storefront buyer %d: read registration: %s", i, r)
		}
		return reg.Status
	}
	r := call("/seating/events/sf_rush/hold-token", nil)
	var tok struct{ HoldToken string }
	if r.Status != 200 || json.Unmarshal(r.Data, &tok) != nil {
		t.Errorf("storefront buyer %d: hold-token: %s", i, r)
		return out
	}
	if r = call("/seating/events/sf_rush/hold", map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{seat}}); r.Status != 200 {
		if r.Code != "SEAT_CONFLICT" {
			t.Errorf("storefront buyer %d: hold: %s", i, r)
		}
		return out
	}
	r = call("/register-guest", servertest.Guest("sf_rush", map[string]any{"seatLabels": []string{seat}, "seatHoldToken": tok.HoldToken}))
	var reg servertest.Registered
	if r.Status != 200 || json.Unmarshal(r.Data, &reg) != nil {
		t.Errorf("storefront buyer %d: register a seat it holds: %s", i, r)
		return out
	}
	mode := (i / 2) % 3
	if mode == 1 {
		return out // walks away: the hold expires
	}
	r = call("/card/create-checkout-session", map[string]any{"eventId": "sf_rush", "registrationId": reg.RegistrationID,
		"seatLabels": []string{seat}, "seatHoldToken": tok.HoldToken, "selectedTicketAmount": 30,
		"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/no"})
	var sess struct{ URL, SessionID string }
	if r.Status != 200 || json.Unmarshal(r.Data, &sess) != nil {
		// Under load the hold may have expired already.
		if r.Code != "REGISTRATION_NOT_PAYABLE" {
			t.Errorf("storefront buyer %d: card session: %s", i, r)
		}
		return out
	}
	if mode == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, _, err := s.Card.Pay(ctx, sess.SessionID, goodCard); err == nil {
			if status(reg.RegistrationID) == registrations.StatusConfirmed {
				out.owner = reg.RegistrationID
			}
		}
		return out
	}
	// Paid at the processor after the hold ended: the processor's webhook
	// arrives late (as Stripe's may), signed.
	deadline := time.Now().Add(ttl + 10*time.Second)
	for status(reg.RegistrationID) != registrations.StatusExpired {
		if time.Now().After(deadline) {
			t.Errorf("storefront buyer %d: registration never expired", i)
			return out
		}
		time.Sleep(250 * time.Millisecond)
	}
	var wh payments.CardWebhook
	wh.ID, wh.Type = "evt_late_"+reg.RegistrationID, payments.EventCheckoutCompleted
	wh.Data.Object = payments.CardSession{ID: sess.SessionID, PaymentStatus: "paid", AmountTotal: int64(reg.Total),
		Currency: "usd", ClientReferenceID: reg.RegistrationID}
	body, _ := json.Marshal(wh)
	r = s.Do(t, "POST", "/v1/webhooks/card", map[string]string{"Payment-Signature": payments.Sign(servertest.CardWebhookSecret, time.Now(), body)}, body)
	if r.Status != 200 {
		t.Errorf("storefront buyer %d: late webhook: %s", i, r)
		return out
	}
	late.Store(reg.RegistrationID, seat)
	return out
}

// rushPartner is one partner buyer: hold with a keyed token, reserve,
// confirm.
func rushPartner(t *testing.T, s *servertest.Server, i int, seat string) rushResult {
	out := rushResult{seat: seat, surface: "partner"}
	keyed := servertest.Keyed("front")
	r := s.Do(t, "POST", "/v1/channel/seating/events/sf_rush/hold-token", keyed, nil)
	var tok struct{ HoldToken string }
	if r.Status != 200 || json.Unmarshal(r.Data, &tok) != nil {
		t.Errorf("partner buyer %d: hold-token: %s", i, r)
		return out
	}
	r = s.Do(t, "POST", "/v1/channel/seating/events/sf_rush/hold", keyed, map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{seat}})
	if r.Status != 200 {
		if r.Code != "SEAT_CONFLICT" {
			t.Errorf("partner buyer %d: hold: %s", i, r)
		}
		return out
	}
	r = s.Reserve(t, "front", "sf_rush", map[string]any{"seatLabels": []string{seat}, "seatHoldToken": tok.HoldToken})
	var res servertest.Reserved
	if r.Status != 200 || json.Unmarshal(r.Data, &res) != nil {
		t.Errorf("partner buyer %d: reserve a seat it holds: %s", i, r)
		return out
	}
	c := s.Confirm(t, "front", res.OrderID, res.Amount, "psp-"+res.OrderID)
	switch {
	case c.Status == 200:
		out.owner = res.OrderID
	case c.Code != "CONFIRM_FAILED":
		t.Errorf("partner buyer %d: confirm: %s", i, c)
	}
	return out
}
