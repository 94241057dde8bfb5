package payments

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// SignatureHeader carries the webhook signature of the built-in card and
// wallet processors: "t=<unix seconds>,v1=<hex>" (decisions.md section 4).
const SignatureHeader = "Payment-Signature"

// Tolerance is how far a webhook's timestamp may lie from now, in either
// direction: older ones are refused as stale (a captured delivery replayed
// later), later ones as forged or from a broken clock.
const Tolerance = 5 * time.Minute

// Errors of Verify (401: the delivery is not authenticated), built once.
var (
	ErrInvalidSignature = apierr.Of("INVALID_SIGNATURE", "webhook signature is missing or does not match the body")
	ErrWebhookStale     = apierr.Of("WEBHOOK_STALE", "webhook timestamp is more than 5 minutes away from now")
)

// Sign returns the signature header value for body at time t:
// v1 = HMAC-SHA256(secret, "<t>.<body>") in hex.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header against body as Stripe's scheme does: a "t" element
// and one or more "v1" elements (several during a secret's rotation), any
// of which may match; other elements are ignored. The comparison is
// constant-time. It returns ErrInvalidSignature or ErrWebhookStale.
func Verify(secret, header string, body []byte, now time.Time) error {
	if secret == "" {
		return ErrInvalidSignature
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrInvalidSignature
		}
		switch k {
		case "t":
			if ts != "" {
				return ErrInvalidSignature
			}
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil && len(sig) == sha256.Size {
				sigs = append(sigs, sig)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrInvalidSignature
	}
	want := mac(secret, ts, body)
	ok := false
	for _, sig := range sigs {
		// Every candidate is compared, so the time taken does not say
		// which one matched.
		if hmac.Equal(sig, want) {
			ok = true
		}
	}
	if !ok {
		return ErrInvalidSignature
	}
	// Checked after the signature: a stale answer then tells only a holder
	// of the secret that the timestamp was the problem.
	if d := now.Sub(time.Unix(t, 0)); d > Tolerance || d < -Tolerance {
		return ErrWebhookStale
	}
	return nil
}
