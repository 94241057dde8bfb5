package channel

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/money"
)

// FuzzConfirmDecode checks the confirm body decoder and the
// x-service-signature check: no panic; a refusal is a coded envelope
// error; what decodes has an amount in whole cents that signs the same as
// the body's text says, and only its own signature passes.
func FuzzConfirmDecode(f *testing.F) {
	for _, s := range []string{
		`{"orderId":"oabc.ev_ga","amount":27.00,"partnerReference":"ref-1"}`,
		`{"orderId":"oabc.ev_ga","amount":"27.00","partnerReference":"ref-1"}`,
		`{"orderId":"oabc.ev_ga","amount":27.005,"partnerReference":"r"}`,
		`{"orderId":"oabc.ev_ga","amount":1e309,"partnerReference":"r"}`,
		`{"orderId":"oabc.ev_ga","amount":-0,"partnerReference":"r"}`,
		`{"orderId":"oabc.ev_ga","amount":null,"partnerReference":"r"}`,
		`{"orderId":"oabc.ev_ga","orderId":"odef.ev_ga","amount":1,"partnerReference":"r"}`,
		`{"orderId":1,"amount":{},"partnerReference":[]}`,
		`{"orderId":"oabc.ev_ga","amount":1,"partnerReference":"\u0000"}`,
		`{"orderId":"oabc.ev_ga","amount":1,"partnerReference":"\ud800"}`,
		`{"orderId":"oabc.ev_ga","amount":1`, ``, `[]`, `null`, `"x"`,
	} {
		f.Add([]byte(s), "")
	}
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetBody(body)
		ctx.Request.Header.Set("x-service-signature", sig)
		fields, e := DecodeConfirm(&ctx)
		if e != nil {
			checkRefusal(t, e)
			return
		}
		if fields.OrderID == "" || fields.Reference == "" || fields.Amount < 0 {
			t.Fatalf("DecodeConfirm(%q) = %+v", body, fields)
		}
		if back, err := money.Parse(fields.Amount.String()); err != nil || back != fields.Amount {
			t.Fatalf("amount %d does not round-trip", fields.Amount)
		}
		if e := VerifySignature(&ctx, "", fields); e == nil || e.Code != "SIGNING_KEY_NOT_CONFIGURED" {
			t.Fatalf("no signing key: %v", e)
		}
		want := Signature("sk", fields.OrderID, fields.Amount, fields.Reference)
		if e := VerifySignature(&ctx, "sk", fields); (e == nil) != (sig == want) {
			t.Fatalf("signature %q (want %q): %v", sig, want, e)
		} else if e != nil {
			checkRefusal(t, e)
		}
		ctx.Request.Header.Set("x-service-signature", want)
		if e := VerifySignature(&ctx, "sk", fields); e != nil {
			t.Fatalf("own signature refused: %v", e)
		}
	})
}

// FuzzSession checks the buyer session token parser (Authorization:
// Bearer or the svc_session cookie): no panic, and only a token minted
// under the secret and not expired is accepted.
func FuzzSession(f *testing.F) {
	s := &Sessions{Secret: []byte("fuzz-secret")}
	now := time.Unix(1_800_000_000, 0)
	tok, _ := s.Mint("ch_a", "Ada", "ada@example.com", "", now)
	f.Add(tok)
	old, _ := s.Mint("ch_a", "Ada", "ada@example.com", "", now.Add(-2*SessionTTL))
	f.Add(old)
	f.Add(".")
	f.Add("e30.")
	f.Add("e30." + tok[len(tok)-10:])
	f.Add(tok + "=")
	f.Fuzz(func(t *testing.T, tok string) {
		sess, ok := s.Parse(tok, now)
		if !ok {
			return
		}
		if sess.ID == "" || now.Unix() >= sess.Expires || !s.signed(tok) {
			t.Fatalf("Parse accepted %q as %+v", tok, sess)
		}
		if _, ok := (&Sessions{Secret: []byte("other")}).Parse(tok, now); ok {
			t.Fatalf("token %q parses under two secrets", tok)
		}
	})
}

func checkRefusal(t *testing.T, e *apierr.Error) {
	t.Helper()
	if !apierr.Known(e.Code) || e.Status < 400 || e.Status >= 500 || e.Message == "" {
		t.Fatalf("refusal is not a coded client error: %+v", e)
	}
}
