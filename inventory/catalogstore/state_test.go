package catalogstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
)

// An apply into a Redis that lost its state (the event's partition has no
// marker) writes no capacity: they would sit on top of sold counts that
// restart from zero. The rebuild writes them instead.
func TestApplyRefusesWhileTheMarkerIsMissing(t *testing.T) {
	s, _ := setup(t)
	ctx := context.Background()
	if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(s.Space.Live(keys.Partition("ev_lost"))).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	ev := event("ev_lost")
	ev.Tickets = []catalog.Ticket{{ID: "tk", Name: "T", Price: 100, Capacity: 10}}
	if err := apply(t, s, ev); !errors.Is(err, redisstate.ErrSalesStopped) {
		t.Fatalf("apply without the marker: %v, want ErrSalesStopped", err)
	}
	caps, _ := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Caps("ev_lost")).Build()).AsStrMap()
	if len(caps) != 0 || s.Current().Events["ev_lost"] != nil {
		t.Fatalf("capacities %v written, or the event served", caps)
	}
}
