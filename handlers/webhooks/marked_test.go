package webhooks_test

import (
	"context"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
)

// With the real booker, a delivery that books a payment is remembered by
// the booking itself (reg_pay sets the mark, in the registration's slot):
// the same delivery again is 409 WEBHOOK_REPLAYED, a new delivery of the
// event 200 duplicate, as when the webhook wrote the mark (the round-trip
// budget test holds the webhook to the booking's step and its read).
func TestBookingRemembersTheDelivery(t *testing.T) {
	s := servertest.StartStorefront(t, servertest.Options{})
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult"}))
	r := s.Front(t, "POST", "/card/create-checkout-session", map[string]any{"eventId": reg.EventID, "registrationId": reg.RegistrationID,
		"selectedTicketId": "tk_adult", "selectedTicketAmount": 25,
		"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/no"})
	if r.Status != 200 {
		t.Fatalf("checkout session: %s", r)
	}
	var sess struct{ SessionID string }
	r.Decode(t, &sess)
	body := func(evt, session string) []byte {
		var w payments.CardWebhook
		w.ID, w.Type = evt, payments.EventCheckoutCompleted
		w.Data.Object = payments.CardSession{ID: session, PaymentStatus: "paid", AmountTotal: int64(reg.Total), Currency: "usd",
			ClientReferenceID: reg.RegistrationID}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	post := func(b []byte, sig string) *servertest.Response {
		return s.Do(t, "POST", "/v1/webhooks/card", map[string]string{payments.SignatureHeader: sig}, b)
	}
	b := body("evt_marked", sess.SessionID)
	sig := payments.Sign(servertest.CardWebhookSecret, time.Now(), b)
	if r := post(b, sig); r.Status != 200 || r.Code != "" {
		t.Fatalf("first delivery: %s", r)
	}
	key := s.Space.WebhookSeen(payments.Card, "evt_marked", reg.RegistrationID)
	ctx := context.Background()
	ttl, err := s.Redis.Do(ctx, s.Redis.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil || ttl < int64(23*time.Hour/time.Millisecond) {
		t.Fatalf("the delivery's mark lives %d ms (%v), want about a day", ttl, err)
	}
	if r := post(b, sig); r.Status != 409 || r.Code != "WEBHOOK_REPLAYED" {
		t.Fatalf("the same delivery again: %s", r)
	}
	if r := post(b, payments.Sign(servertest.CardWebhookSecret, time.Now().Add(time.Second), b)); r.Status != 200 || !dup(t, r) {
		t.Fatalf("a new delivery of the event: %s", r)
	}
}

func dup(t *testing.T, r *servertest.Response) bool {
	t.Helper()
	var d struct{ Duplicate bool }
	r.Decode(t, &d)
	return d.Duplicate
}
