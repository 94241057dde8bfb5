package channel

import (
	"testing"

	"github.com/ticketd/ticketd/inventory/money"
)

// The expected digests were computed outside Go, with
//
//	printf '%s' 'o07abc.42.50.USD.ref-1' | openssl dgst -sha256 -hmac sk_a
//
// and likewise for the other rows.
func TestSignatureMatchesOpenSSL(t *testing.T) {
	cases := []struct {
		key, order, amount, ref, want string
	}{
		// 42.5 on the wire is signed as 42.50.
		{"sk_a", "o07abc", "42.5", "ref-1", "f09958021e5ade388871237609166749d80e827213a9b7484cb11e3b4c5a0cb1"},
		{"sk_a", "o07abc", "42.50", "ref-1", "f09958021e5ade388871237609166749d80e827213a9b7484cb11e3b4c5a0cb1"},
		// A large amount keeps every digit (no float rounding, no exponent).
		{"sk_a", "o12xyz", "1234567.89", "PARTNER-REF-99", "2fe2c70f40b00416316772b62c3b7378d62195ff5e2fd3dbf8ed90d466c81150"},
		{"sk_other", "o00q", "0.07", "r", "12d5f7b66e1c06c81c426888c6df8ad1c2108fa804ddbd530390ff001f21102b"},
	}
	for _, tc := range cases {
		amt, err := money.Parse(tc.amount)
		if err != nil {
			t.Fatal(err)
		}
		if got := Signature(tc.key, tc.order, amt, tc.ref); got != tc.want {
			t.Errorf("Signature(%s, %s, %s, %s) = %s, want %s", tc.key, tc.order, tc.amount, tc.ref, got, tc.want)
		}
	}
}
