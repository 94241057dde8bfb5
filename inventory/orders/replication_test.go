package orders

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// A confirm is answered paid only once the replicas Replication asks for
// hold the payment, and so is every retry, on any connection or node: a
// retry from another ticketd node while the replica still lags is refused
// too. (Redis 7.0 makes WAIT cover every write made before the connection's
// last command; order_confirm also writes when it finds the order paid, so
// this holds where WAIT covers only the connection's own writes.) Replies
// that sell nothing are answered as they are.
func TestConfirmWaitsForReplicasOnEveryRetry(t *testing.T) {
	rs := redistest.StartReplicated(t, 1)
	primary, replica := rs.Primary, rs.Replicas[0]
	ctx := context.Background()
	node := func() *Service {
		rc := primary.Client(t)
		return &Service{Redis: rc, Space: keys.Space{}, OrderTTL: time.Minute,
			Replication: &redisstate.Replication{Replicas: 1, Timeout: 200 * time.Millisecond}}
	}
	s1, s2 := node(), node()
	if err := redisstate.Publish(ctx, s1.Redis, s1.Space, "test"); err != nil {
		t.Fatal(err)
	}
	caps(t, s1, "ev", "ev", "100")
	r, err := s1.Reserve(ctx, req("ev", map[string]int64{"ev": 1}))
	if err != nil {
		t.Fatal(err)
	}

	replica.Pause()
	if _, err := confirm(ctx, s1, r.OrderID, "p1"); !errors.Is(err, redisstate.ErrNotReplicated) {
		replica.Resume()
		t.Fatalf("confirm with the replica stopped: %v, want ErrNotReplicated", err)
	}
	if _, err := confirm(ctx, s2, r.OrderID, "p1"); !errors.Is(err, redisstate.ErrNotReplicated) {
		replica.Resume()
		t.Fatalf("a retry on another node with the replica stopped: %v, want ErrNotReplicated", err)
	}
	if _, err := confirm(ctx, s2, "ev-unknown-order", "p1"); code(err) != "NOT_FOUND" {
		replica.Resume()
		t.Fatalf("confirm of an unknown order with the replica stopped: %v, want NOT_FOUND as it is", err)
	}
	replica.Resume()
	// The replica catches up and acknowledges within a moment (a retry
	// meanwhile is refused the same way).
	c, err := confirm(ctx, s2, r.OrderID, "p1")
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, redisstate.ErrNotReplicated) && time.Now().Before(deadline); {
		c, err = confirm(ctx, s2, r.OrderID, "p1")
	}
	if err != nil || !c.Duplicate {
		t.Fatalf("the retry once the replica caught up: %+v %v, want the paid order (duplicate)", c, err)
	}
	if n := s1.Replication.Timeouts() + s2.Replication.Timeouts(); n < 2 {
		t.Fatalf("%d WAIT timeouts counted, want at least the 2 refused confirms", n)
	}
}
