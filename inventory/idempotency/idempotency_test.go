package idempotency

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for k, want := range map[string]string{
		"":                        "IDEMPOTENCY_KEY_REQUIRED",
		"a b~":                    "",
		strings.Repeat("k", 255):  "",
		strings.Repeat("k", 256):  "INVALID_IDEMPOTENCY_KEY",
		"tab\there":               "INVALID_IDEMPOTENCY_KEY",
		"caf\xc3\xa9":             "INVALID_IDEMPOTENCY_KEY",
		"0b7c1d9e-4a52-4c6e-9f3a": "",
	} {
		got, e := Check([]byte(k))
		switch {
		case want == "" && (e != nil || got != k):
			t.Errorf("%q: %q, %v; want it accepted", k, got, e)
		case want != "" && (e == nil || e.Code != want || e.Status != 400):
			t.Errorf("%q: %v, want 400 %s", k, e, want)
		}
	}
}
