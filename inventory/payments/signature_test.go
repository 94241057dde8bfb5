package payments

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// opensslHMAC computes HMAC-SHA256(secret, msg) with openssl, outside Go.
func opensslHMAC(t *testing.T, secret, msg string) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not installed: the signature vectors are computed with it")
	}
	cmd := exec.Command("openssl", "dgst", "-sha256", "-hmac", secret)
	cmd.Stdin = strings.NewReader(msg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl: %v", err)
	}
	// "SHA2-256(stdin)= <hex>" or "(stdin)= <hex>", by version.
	f := strings.Fields(string(out))
	return f[len(f)-1]
}

func TestVerifyAcceptsSignaturesComputedByOpenSSL(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	bodies := []string{
		`{"id":"evt_1","type":"checkout.session.completed","data":{"object":{"id":"cs_1","payment_status":"paid","amount_total":4250,"currency":"usd","client_reference_id":"oabc.ev_1"}}}`,
		`{"id":"wp_1","status":"COMPLETED","amount":42.50,"currency":"USD","reference":"oabc.ev_1"}`,
		"",
		"line one\nline two with ünïcode",
	}
	for _, secret := range []string{"whsec_card", "a longer secret with spaces"} {
		for _, body := range bodies {
			ts := strconv.FormatInt(now.Unix(), 10)
			sig := opensslHMAC(t, secret, ts+"."+body)
			header := "t=" + ts + ",v1=" + sig
			if err := Verify(secret, header, []byte(body), now); err != nil {
				t.Errorf("openssl signature of %q refused: %v", body, err)
			}
			if got := Sign(secret, now, []byte(body)); got != header {
				t.Errorf("Sign = %s, openssl gives %s", got, header)
			}
		}
	}
}

func TestVerifyRefusesWrongStaleAndFutureSignatures(t *testing.T) {
	now := time.Unix(1_900_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	good := Sign("s3cret", now, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	cases := []struct {
		name   string
		secret string
		header string
		body   []byte
		at     time.Time
		want   error
	}{
		{"valid", "s3cret", good, body, now, nil},
		{"4m59s old", "s3cret", good, body, now.Add(299 * time.Second), nil},
		{"wrong secret", "other", good, body, now, ErrInvalidSignature},
		{"body changed", "s3cret", good, []byte(`{"id":"evt_2"}`), now, ErrInvalidSignature},
		{"timestamp changed", "s3cret", strings.Replace(good, "t="+ts, "t="+strconv.FormatInt(now.Unix()+1, 10), 1), body, now, ErrInvalidSignature},
		{"missing header", "s3cret", "", body, now, ErrInvalidSignature},
		{"no v1", "s3cret", "t=" + ts, body, now, ErrInvalidSignature},
		{"no t", "s3cret", good[strings.Index(good, "v1="):], body, now, ErrInvalidSignature},
		{"garbage", "s3cret", "not a signature", body, now, ErrInvalidSignature},
		{"empty secret", "", Sign("", now, body), body, now, ErrInvalidSignature},
		{"stale", "s3cret", good, body, now.Add(5*time.Minute + time.Second), ErrWebhookStale},
		{"future", "s3cret", good, body, now.Add(-5*time.Minute - time.Second), ErrWebhookStale},
		// Several v1 values, as during a secret's rotation: one matching is enough.
		{"rotation", "s3cret", Sign("old", now, body) + "," + good[strings.Index(good, "v1="):], body, now, nil},
		{"unknown element ignored", "s3cret", good + ",v0=abcd", body, now, nil},
	}
	for _, tc := range cases {
		err := Verify(tc.secret, tc.header, tc.body, tc.at)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}
