package webhooks

import (
	"strconv"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/keys"
)

// webhookSeeds are bodies of the three processors' webhooks: valid ones and
// the edges (wrong types, huge and fractional amounts, nulls, duplicate
// keys, unknown fields, truncation).
var webhookSeeds = []string{
	`{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"id":"cs_1","payment_status":"paid","amount_total":4250,"currency":"usd","client_reference_id":"oabc.ev_ga"}}}`,
	`{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"id":"cs_1","payment_status":"paid","amount_total":-1,"currency":"usd","client_reference_id":"oabc.ev_ga"}}}`,
	`{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"id":"cs_1","payment_status":"paid","amount_total":1e309,"currency":"usd","client_reference_id":"oabc.ev_ga"}}}`,
	`{"id":"evt_1","type":"checkout.session.completed","data":{"object":null}}`,
	`{"id":"evt_1","id":"evt_2","type":"x","data":{"object":{}}}`,
	`{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"extra":1}}}`,
	`{"id":"wp_1","status":"COMPLETED","amount":42.50,"currency":"USD","reference":"oabc.ev_ga"}`,
	`{"id":"wp_1","status":"COMPLETED","amount":12.345,"currency":"USD","reference":"oabc.ev_ga"}`,
	`{"id":"wp_1","status":"COMPLETED","amount":"42.50","currency":"USD","reference":"oabc.ev_ga"}`,
	`{"id":"wp_1","status":"COMPLETED","amount":-0,"currency":"USD","reference":"oabc.ev_ga"}`,
	`{"id":"wp_1","status":"COMPLETED","amount":1e309,"currency":"USD","reference":"oabc.ev_ga"}`,
	`{"id":"wp_1","status":"COMPLETED","amount":null,"currency":"USD","reference":"oabc.ev_ga"}`,
	`{"id":"wp_1","status":"PENDING"}`,
	`{"id":"evt_s","object":"event","api_version":"2025-01-27.acacia","type":"checkout.session.completed","data":{"object":{"id":"cs_test_1","object":"checkout.session","payment_status":"paid","amount_total":4250,"currency":"usd","client_reference_id":"oabc.ev_ga","metadata":{"registration_id":"oabc.ev_ga"}}}}`,
	`{"id":"evt_s","object":"event","type":"checkout.session.completed","data":{"object":{"id":7,"metadata":{"registration_id":7}}}}`,
	`{"id":"evt_s","object":"event","type":"checkout.session.completed","data":{"object":{"id":"cs","metadata":{"registration_id":"x"},"amount_total":"1"}}}`,
	`{"id":"evt_s","object":"event","type":"checkout.session.async_payment_succeeded","data":{"object":[]}}`,
	`{"id":"evt_s","object":"event","type":"checkout.session.completed","data":null}`,
	`{"id":"evt_1"`, `[]`, `null`, ``, `{}`, `{"id":""}`,
}

// FuzzDecode checks the three webhook body decoders (card, wallet and, for
// a body signed with the secret, Stripe): no panic, every refusal a coded
// 4xx envelope error, and every payment they return books a registration id
// with a non-negative amount.
func FuzzDecode(f *testing.F) {
	for _, s := range webhookSeeds {
		for k := uint8(0); k < 3; k++ {
			f.Add(k, []byte(s))
		}
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		var ev event
		var ae *apierr.Error
		switch kind % 3 {
		case 0:
			ev, ae = decodeCard(body)
		case 1:
			ev, ae = decodeWallet(body)
		default:
			sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_fuzz", Timestamp: now})
			ev, ae = decodeStripe("whsec_fuzz", sp.Header, body, now, false)
		}
		if ae != nil {
			if !apierr.Known(ae.Code) || ae.Status < 400 || ae.Status >= 500 || ae.Message == "" {
				t.Fatalf("refusal is not a coded client error: %+v", ae)
			}
			return
		}
		if ev.id == "" || len(ev.id) > maxEventID {
			t.Fatalf("event id %q", ev.id)
		}
		if ev.ignored {
			return
		}
		p := ev.payment
		if _, ok := keys.OrderEvent(p.RegistrationID); !ok || p.Amount < 0 || p.PaymentID == "" {
			t.Fatalf("decoded payment %+v", p)
		}
	})
}

// FuzzStripeSignature checks the Stripe-Signature check with a fuzzed
// header: no panic, refusals are INVALID_SIGNATURE, WEBHOOK_STALE or a
// coded 400, and nothing passes that the secret did not sign.
func FuzzStripeSignature(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(webhookSeeds[13])
	good := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_fuzz", Timestamp: now}).Header
	for _, h := range []string{good, good + ",t=1", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=00", "t=,v1=", "v1=" + good[len(good)-64:],
		"t=99999999999999999999" + good[12:], "", ",,,", "t=1800000000,v0=ab,v1=ab"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ev, ae := decodeStripe("whsec_fuzz", header, body, now, false)
		if ae != nil {
			if !apierr.Known(ae.Code) || ae.Status < 400 || ae.Status >= 500 {
				t.Fatalf("refusal is not a coded client error: %+v", ae)
			}
			return
		}
		if _, ae := decodeStripe("whsec_other", header, body, now, false); ae == nil {
			t.Fatalf("header %q verifies under two secrets (event %q)", header, ev.id)
		}
	})
}
