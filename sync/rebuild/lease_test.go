package rebuild_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// A rebuild that lost its lock while it read (it stalled past the lock's
// TTL) while another rebuild took over, published and sales went on,
// writes nothing: its counts are older than the sales made since, and
// writing them would sell those again.
func TestRebuildThatLostItsLockWritesNothing(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	stalled := *s.Rebuilder
	rebuild.SetAfterRead(&stalled, func() {
		// The lock passes to another rebuild, which runs to the end.
		if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(s.Space.CatalogLock()).Build()).Error(); err != nil {
			t.Error(err)
		}
		gen := s.Monitor.View().Gen
		if _, err := s.Rebuilder.Run(ctx); err != nil {
			t.Error(err)
		}
		waitNewGeneration(t, s, gen)
		o := s.MustReserve(t, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_a", "quantity": 2})
		if c := s.Confirm(t, "a", o.OrderID, o.Amount, "psp-after"); c.Status != 200 {
			t.Errorf("confirm after the other rebuild: %s", c)
		}
	})
	if _, err := stalled.Run(ctx); err == nil {
		t.Fatal("the rebuild that lost its lock succeeded")
	}
	sold, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Sold("ev_ga")).Build()).AsIntMap()
	if err != nil || sold["t:tk_a"] != 2 || sold["ev"] != 2 {
		t.Fatalf("sold after the stalled rebuild: %v %v, want the 2 sold after the other rebuild", sold, err)
	}
	if v := s.Monitor.Check(ctx); v.Status != redisstate.Current {
		t.Fatalf("state after the stalled rebuild: %+v", v)
	}
}

// event_restore writes nothing into a partition whose marker is there:
// sales run on it, and counts read before they started would undo them.
func TestRestoreRefusesALivePartition(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	ks := []string{s.Space.Caps("ev_ga"), s.Space.Sold("ev_ga"), s.Space.Booked("ev_ga"), s.Space.DiscountUsed("ev_ga"),
		s.Space.Live(keys.Partition("ev_ga")), s.Space.Buyers("ev_ga")}
	before := counters(t, s, "ev_ga")
	arr, err := eval.Array(ctx, s.Redis, eval.Load("event_restore"), ks, []string{"1", "ev", "1", "0", "0", "0", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := reply.Of(arr); c != reply.Live {
		t.Fatalf("restore into a live partition answered %v, want %v (refused)", c, reply.Live)
	}
	equalCounters(t, counters(t, s, "ev_ga"), before)
}
