package webhooks_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
)

const fuzzStripeSecret = "whsec_fuzz"

// FuzzWebhooksHTTP sends fuzzed webhooks of the three processors through
// the whole stack (real Redis and Postgres, real registrations). With
// sign%2 == 0 the body is signed with the processor's secret, so that
// fuzzed bodies reach the decoder and the booking; otherwise the fuzzed
// header is the signature. No answer may be a 5xx; every refusal is the
// envelope with a code of the table.
func FuzzWebhooksHTTP(f *testing.F) {
	s := servertest.StartStorefront(f, servertest.Options{StripeWebhookSecret: fuzzStripeSecret})
	reg := s.MustRegister(f, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 1}))
	vars := map[string]string{"REG": reg.RegistrationID, "CENTS": strconv.FormatInt(int64(reg.Total), 10), "AMOUNT": reg.Total.String()}
	for _, seed := range []struct {
		kind uint8
		body string
	}{
		{0, `{"id":"evt_c1","type":"checkout.session.completed","data":{"object":{"id":"cs_1","payment_status":"paid","amount_total":$CENTS,"currency":"usd","client_reference_id":"$REG"}}}`},
		{1, `{"id":"wp_1","status":"COMPLETED","amount":$AMOUNT,"currency":"USD","reference":"$REG"}`},
		{2, `{"id":"evt_s1","object":"event","api_version":"2025-01-27.acacia","type":"checkout.session.completed","data":{"object":{"id":"cs_test_1","object":"checkout.session","payment_status":"paid","status":"complete","amount_total":$CENTS,"currency":"usd","client_reference_id":"$REG","metadata":{"registration_id":"$REG"}}}}`},
		{0, `{"id":"evt_c2","type":"checkout.session.completed","data":{"object":{"id":"cs_2","payment_status":"paid","amount_total":1,"currency":"usd","client_reference_id":"$REG"}}}`},
		{1, `{"id":"wp_2","status":"COMPLETED","amount":0.01,"currency":"USD","reference":"ozzzz.sf_ga"}`},
		{2, `{"id":"evt_s2","object":"event","type":"checkout.session.completed","data":{"object":{"id":"cs_other","metadata":{}}}}`},
	} {
		f.Add(seed.kind, uint8(0), "", []byte(seed.body))
	}
	f.Add(uint8(0), uint8(1), "t=1,v1=00", []byte(`{}`))
	f.Add(uint8(2), uint8(1), "t=1,v1=00", []byte(`{}`))

	f.Fuzz(func(t *testing.T, kind, sign uint8, header string, body []byte) {
		b := []byte(servertest.Subst(string(body), vars))
		now := time.Now()
		var path, name, sig string
		switch kind % 3 {
		case 0:
			path, name, sig = "/v1/webhooks/card", payments.SignatureHeader, payments.Sign(servertest.CardWebhookSecret, now, b)
		case 1:
			path, name, sig = "/v1/webhooks/wallet", payments.SignatureHeader, payments.Sign(servertest.WalletWebhookSecret, now, b)
		default:
			path, name = "/v1/webhooks/stripe", "Stripe-Signature"
			sig = webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: b, Secret: fuzzStripeSecret, Timestamp: now}).Header
		}
		if sign%2 == 1 {
			sig = header
		}
		s.Send(t, servertest.FuzzRequest{Method: "POST", Path: path, Headers: [][2]string{{name, sig}}, Body: b})
	})
}
