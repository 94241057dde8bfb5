package channel_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

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

// concurrently sends n reserves at once (send makes one) and counts the
// orders they answered, by id, and the refusals, by code.
func concurrently(t *testing.T, n int, send func() *servertest.Response) (ids, codes map[string]int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids, codes = map[string]int{}, map[string]int{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send()
			mu.Lock()
			defer mu.Unlock()
			if r.Status == 200 {
				// not r.Decode: its t.Fatal cannot stop the test from
				// this goroutine
				var o reserved
				if err := json.Unmarshal(r.Data, &o); err != nil {
					t.Errorf("decode %s: %v", r.Data, err)
					return
				}
				ids[o.OrderID]++
				return
			}
			codes[r.Code]++
		}()
	}
	wg.Wait()
	return ids, codes
}

// orderKeys counts the order hashes in s's Redis key space.
func orderKeys(t *testing.T, s *servertest.Server) int {
	t.Helper()
	n := 0
	for _, k := range redisKeys(t, s) {
		if strings.Contains(k, ":ord:") {
			n++
		}
	}
	return n
}
