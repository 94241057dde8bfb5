package holds

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// A client is counted only under a limit; one subscriber is one key, two
// are two, and the key names no address: it is keyed by the deployment's
// key, so another key (or a plain hash, which anyone can compute for all
// IPv4 addresses) gives another name.
func TestForCountsOneKeyPerSubscriber(t *testing.T) {
	key := []byte("deployment key")
	if For(key, "203.0.113.9", 0).Counted() || For(key, "", 8).Counted() {
		t.Fatal("a client counted with the limit off, or without an address")
	}
	a, b := For(key, "203.0.113.9", 8), For(key, "2001:db8:1:2::/64", 8)
	if !a.Counted() || a.Key == b.Key || a.Key != For(key, "203.0.113.9", 3).Key {
		t.Fatalf("keys %q %q", a.Key, b.Key)
	}
	plain := sha256.Sum256([]byte("203.0.113.9"))
	if strings.Contains(a.Key, "203") || a.Key == hex.EncodeToString(plain[:8]) || a.Key == For([]byte("other"), "203.0.113.9", 8).Key {
		t.Fatalf("key %q is not keyed by the deployment's key", a.Key)
	}
	if a.LimitArg() != "8" || (Client{}).LimitArg() != "0" {
		t.Fatalf("limit args %q %q", a.LimitArg(), (Client{}).LimitArg())
	}
	if e := LimitError(8); e.Status != 409 || e.Code != "HOLD_LIMIT_REACHED" {
		t.Fatalf("%+v", e)
	}
}
