package picker

import (
	"strings"
	"testing"
	"time"
)

// FuzzToken checks the picker page token (x-picker-token) parser: no
// panic, only a token signed under the key and not expired is accepted,
// and what it returns is what was signed.
func FuzzToken(f *testing.F) {
	key := []byte("fuzz-key")
	now := time.Unix(1_800_000_000, 0)
	f.Add(Sign(key, "ev", "t1", now.Add(time.Hour)))
	f.Add(Sign(key, "ev", "t1", now.Add(-time.Hour)))
	f.Add(Sign([]byte("other"), "ev", "t1", now.Add(time.Hour)))
	f.Add("ev:t1:1800003600:")
	f.Add("::::")
	f.Add("ev:t1:99999999999999999999:abc")
	f.Add(strings.Repeat("a", 300))
	f.Fuzz(func(t *testing.T, tok string) {
		ev, tenant, ok := verify(key, tok, now)
		if !ok {
			return
		}
		// Accepted: it must be the signature of what it names, for a time
		// after now.
		i := strings.LastIndexByte(tok, ':')
		parts := strings.Split(tok[:i], ":")
		if len(parts) != 3 || parts[0] != ev || parts[1] != tenant || tok[i+1:] != mac(key, tok[:i]) {
			t.Fatalf("verify accepted %q as (%q, %q)", tok, ev, tenant)
		}
		if _, _, ok := verify([]byte("other-key"), tok, now); ok {
			t.Fatalf("token %q verifies under two keys", tok)
		}
	})
}
