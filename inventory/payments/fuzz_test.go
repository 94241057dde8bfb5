package payments

import (
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// FuzzVerify checks the webhook signature check of the built-in
// processors (Payment-Signature: t=<unix>,v1=<hex>): no header panics it,
// its only refusals are the two 401 envelopes, a header it accepts is one
// that the secret signed for this body within the tolerance, and Sign's
// own header for the body is accepted.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"checkout.session.completed"}`)
	f.Add(Sign("s", now, body), body, int64(0))
	f.Add(Sign("s", now, body)+",v1=00", body, int64(0))
	f.Add("t=1800000000,t=1800000000,v1=ab", body, int64(0))
	f.Add("t=-9223372036854775808,v1="+string(make([]byte, 64)), body, int64(0))
	f.Add(" t = 1 , v1 = zz ,,", []byte{}, int64(0))
	f.Add("v1=,t=", []byte("{}"), int64(301))
	f.Add(Sign("s", now.Add(-10*time.Minute), body), body, int64(0))
	f.Add("t=99999999999999999999,v1=x", body, int64(0))
	f.Fuzz(func(t *testing.T, header string, body []byte, skew int64) {
		at := now.Add(time.Duration(skew%3600) * time.Second)
		err := Verify("s", header, body, at)
		if err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) || !apierr.Known(ae.Code) || ae.Status != 401 {
				t.Fatalf("Verify(%q): refusal %v is not a 401 envelope", header, err)
			}
		}
		// A fresh signature of this very body always passes.
		if err := Verify("s", Sign("s", at, body), body, at); err != nil {
			t.Fatalf("Sign's own header refused: %v", err)
		}
		// A header accepted under one secret is refused under another.
		if err == nil && Verify("other", header, body, at) == nil {
			t.Fatalf("header %q verifies under two secrets", header)
		}
	})
}
