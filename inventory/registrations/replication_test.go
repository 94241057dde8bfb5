package registrations

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// A storefront payment and a free registration are answered confirmed only
// once the replica holds them: with the replica stopped the payment is 503
// (the processor retries the webhook) and so is its retry; once the
// replica caught up the retry books the same payment once. A free
// registration waits longer (its patience) before it gives up. A
// registration that waits for payment sells nothing yet and does not wait.
func TestPaymentsAndFreeRegistrationsWaitForTheReplica(t *testing.T) {
	rs := redistest.StartReplicated(t, 1)
	primary, replica := rs.Primary, rs.Replicas[0]
	b := bundleOn(t, primary.Client(t), keys.Space{})
	if err := redisstate.Publish(b.ctx, b.rc, b.sp, "test"); err != nil {
		t.Fatal(err)
	}
	b.orders.Replication = &redisstate.Replication{Replicas: 1, Timeout: 200 * time.Millisecond}
	b.caps(t, evGA, "t:tk", "10", "ev", "10")

	replica.Pause()
	reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		replica.Resume()
		t.Fatalf("a registration awaiting payment with the replica stopped: %v", err)
	}
	b.opened(t, reg.ID, "cs_1")
	for try := range 2 {
		if _, err := pay(b, reg.ID, "cs_1", 1000); !errors.Is(err, redisstate.ErrNotReplicated) {
			replica.Resume()
			t.Fatalf("payment %d with the replica stopped: %v, want ErrNotReplicated", try+1, err)
		}
	}
	// A free registration cannot be retried as itself (a retry is another
	// registration): it waits up to its patience, then gives up; the one
	// given up on stays made.
	if _, err := b.regs.Register(b.ctx, gaReq(1, 0, "free@x.test")); !errors.Is(err, redisstate.ErrNotReplicated) {
		replica.Resume()
		t.Fatalf("a free registration with the replica stopped: %v, want ErrNotReplicated", err)
	}
	resumed := time.AfterFunc(300*time.Millisecond, replica.Resume)
	defer resumed.Stop()
	if reg, err := b.regs.Register(b.ctx, gaReq(1, 0, "free2@x.test")); err != nil || reg.Status != StatusConfirmed {
		replica.Resume()
		t.Fatalf("a free registration whose replica catches up within its patience: %+v %v, want confirmed", reg, err)
	}
	// The replica catches up and acknowledges within a moment (a retry
	// meanwhile is refused the same way).
	out, err := pay(b, reg.ID, "cs_1", 1000)
	for deadline := time.Now().Add(10 * time.Second); errors.Is(err, redisstate.ErrNotReplicated) && time.Now().Before(deadline); {
		out, err = pay(b, reg.ID, "cs_1", 1000)
	}
	if err != nil || !out.Duplicate || out.Registration.Status != StatusConfirmed {
		t.Fatalf("the retried payment once the replica caught up: %+v %v, want confirmed (duplicate)", out, err)
	}
	if n := b.streamLen(t, evGA); n != 3 {
		t.Fatalf("paid stream holds %d entries, want 3 (the payment once, the two free registrations)", n)
	}
}

// A payment that waits for the replica answers the registration it
// confirmed from the payment's own reply (reg_pay's view): one round trip,
// the script and its WAIT, where a read of the registration after the
// wait took a second.
func TestAReplicatedPaymentTakesOneRoundTrip(t *testing.T) {
	rs := redistest.StartReplicated(t, 1)
	b := bundleOn(t, rs.Primary.Client(t), keys.Space{})
	if err := redisstate.Publish(b.ctx, b.rc, b.sp, "test"); err != nil {
		t.Fatal(err)
	}
	b.orders.Replication = &redisstate.Replication{Replicas: 1, Timeout: 2 * time.Second}
	b.caps(t, evGA, "t:tk", "10", "ev", "10")
	b.regs.Redis = roundtrips.Wrap(b.rc, nil)
	for i, email := range []string{"a@x.test", "b@x.test"} {
		reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, email))
		if err != nil {
			t.Fatal(err)
		}
		sess := fmt.Sprintf("cs_%d", i)
		b.opened(t, reg.ID, sess)
		var trips roundtrips.Counter
		out, err := b.regs.Pay(roundtrips.With(b.ctx, &trips),
			Payment{RegistrationID: reg.ID, Processor: "card", PaymentID: sess, Amount: 1000, Currency: "usd"})
		if err != nil || out.Registration.Status != StatusConfirmed || len(out.Registration.Tickets) != 1 {
			t.Fatalf("payment %d: %+v %v, want confirmed with its ticket", i+1, out, err)
		}
		// The first payment may load the script on this new Redis.
		if n := trips.Load(); i == 1 && n != 1 {
			t.Fatalf("the second payment took %d round trips, want 1", n)
		}
	}
}
