package webhooks_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
)

// A signed webhook carrying a payment id or currency Postgres cannot store
// (a NUL) is refused 400 INVALID_REQUEST before anything is booked: before,
// the card's was booked in Redis and its paid order then refused by
// Postgres into dead_letters, and the wallet's currency made the refund
// record fail into a 503 the processor retries for days (FuzzWebhooksHTTP).
func TestWebhookFieldsPostgresCannotStoreAreRefused(t *testing.T) {
	s := servertest.StartStorefront(t, servertest.Options{})
	send := func(path, secret, body string) *servertest.Response {
		sig := payments.Sign(secret, time.Now(), []byte(body))
		return s.Do(t, "POST", path, map[string]string{payments.SignatureHeader: sig}, []byte(body))
	}
	card := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	r := send("/v1/webhooks/card", servertest.CardWebhookSecret, `{"id":"evt_nul","type":"checkout.session.completed","data":{"object":`+
		`{"id":"cs_\u0000x","payment_status":"paid","amount_total":`+strconv.FormatInt(int64(card.Total), 10)+
		`,"currency":"usd","client_reference_id":"`+card.RegistrationID+`"}}}`)
	servertest.Expect(t, r, 400, "INVALID_REQUEST")
	wallet := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	r = send("/v1/webhooks/wallet", servertest.WalletWebhookSecret, `{"id":"wp_nul","status":"COMPLETED","amount":`+wallet.Total.String()+
		`,"currency":"US\u0000D","reference":"`+wallet.RegistrationID+`"}`)
	servertest.Expect(t, r, 400, "INVALID_REQUEST")
	for _, id := range []string{card.RegistrationID, wallet.RegistrationID} {
		if st := s.Registration(t, id).Status; st != "awaiting_payment" {
			t.Fatalf("registration %s is %s after a refused webhook, want awaiting_payment", id, st)
		}
	}
	s.Drain(t)
	if n := s.Count(t, "select count(*) from dead_letters"); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
}
