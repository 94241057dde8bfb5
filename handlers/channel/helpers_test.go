package channel_test

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func sig(key, order string, amount money.Cents, ref string) string {
	return channel.Signature(key, order, amount, ref)
}

func redisKeys(t *testing.T, s *servertest.Server) []string {
	return redistest.Keys(t, s.Redis, s.Space)
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
