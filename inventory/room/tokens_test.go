package room

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Every node with the same Key gives a room the same shuffle key, whether
// it made it or kept it from an earlier poll, each room its own, and the
// commitment is the key's SHA-256: a node that answered one room's key for
// another, or changed it between polls, would break the published order.
func TestEachRoomHasOneShuffleKeyOnEveryNode(t *testing.T) {
	a, b := &Service{Key: []byte("k1")}, &Service{Key: []byte("k1")}
	other := &Service{Key: []byte("k2")}
	first := bytes.Clone(a.ShuffleKey("ev_1"))
	a.ShuffleKey("ev_2")
	for _, got := range [][]byte{a.ShuffleKey("ev_1"), b.ShuffleKey("ev_1")} {
		if !bytes.Equal(got, first) {
			t.Fatalf("room ev_1's shuffle key %x, then %x", first, got)
		}
	}
	if bytes.Equal(a.ShuffleKey("ev_2"), first) || bytes.Equal(other.ShuffleKey("ev_1"), first) {
		t.Fatal("two rooms, or two room keys, gave the same shuffle key")
	}
	for _, room := range []string{"ev_1", "ev_2"} {
		sum := sha256.Sum256(b.ShuffleKey(room))
		if got := a.Commitment(room); got != hex.EncodeToString(sum[:]) {
			t.Fatalf("commitment of %s %s, want the SHA-256 of its shuffle key", room, got)
		}
	}
}
