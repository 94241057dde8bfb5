package idempotency

import "testing"

// FuzzCheck checks the Idempotency-Key rule: no panic, a refusal is one of
// the two coded errors, and an accepted key is 1 to 255 printable ASCII
// characters returned unchanged (it is part of a Redis key name).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "k", "550e8400-e29b-41d4-a716-446655440000", "with space", "tab\there", "é", "\x00", "\x7f",
		string(make([]byte, 255)), "{slot}", "a\r\nInjected: 1"} {
		f.Add([]byte(s))
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'a'
	}
	f.Add(long)
	f.Fuzz(func(t *testing.T, k []byte) {
		got, e := Check(k)
		if e != nil {
			if e != ErrRequired && e != ErrInvalid {
				t.Fatalf("Check(%q): refusal %v is neither ErrRequired nor ErrInvalid", k, e)
			}
			if (e == ErrRequired) != (len(k) == 0) {
				t.Fatalf("Check(%q) = %v", k, e)
			}
			return
		}
		if got != string(k) || len(got) == 0 || len(got) > MaxLen {
			t.Fatalf("Check(%q) = %q", k, got)
		}
		for _, c := range []byte(got) {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("Check(%q) accepted byte %#x", k, c)
			}
		}
	})
}
