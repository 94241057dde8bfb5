package mailer_test

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/sync/mailer"
)

// The queue of one address whose hour is full (rate.go): whenever a row
// leaves it or gives its slot back, the next one is due when the next
// slot frees, never left for the day-long safety wake.

// buyerRow is the state of an order's buyer_tickets row: sent, given up,
// and how far off it is due.
func (b *bundle) buyerRow(t *testing.T, orderID string) (sent, failed bool, dueIn time.Duration) {
	t.Helper()
	var secs float64
	err := b.pool.QueryRow(context.Background(), `SELECT sent_at IS NOT NULL, failed_at IS NOT NULL,
		extract(epoch FROM next_attempt_at - now())::float8 FROM outbox WHERE order_id = $1 AND kind = 'buyer_tickets'`,
		orderID).Scan(&sent, &failed, &secs)
	if err != nil {
		t.Fatal(err)
	}
	return sent, failed, time.Duration(secs * float64(time.Second))
}

// anHourLater moves every row's times an hour back: the hour's sends fall
// out of the window and what was due within the hour is due.
func (b *bundle) anHourLater(t *testing.T) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET rate_at = rate_at - interval '1 hour',
		next_attempt_at = next_attempt_at - interval '1 hour',
		locked_until = CASE WHEN locked_until IS NOT NULL THEN locked_until - interval '1 hour' END`); err != nil {
		t.Fatal(err)
	}
}

// payAda queues an order of one ticket to ada@example.com and returns its id.
func (b *bundle) payAda(t *testing.T) string {
	t.Helper()
	rec := order("channel", 1)
	b.pay(t, rec)
	return rec.OrderID
}

// leaseToDeadMailer makes orderID's row claimed by a mailer that dies on
// its last attempt: leased, attempts used up, no outcome to be recorded.
func (b *bundle) leaseToDeadMailer(t *testing.T, orderID string, maxAttempts int) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET locked_by = 'dead', attempts = $2,
		locked_until = now() + interval '5 minutes' WHERE order_id = $1 AND kind = 'buyer_tickets'`, orderID, maxAttempts); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) leaseRunsOut(t *testing.T, orderID string) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox SET locked_until = now() - interval '1 second'
		WHERE order_id = $1 AND kind = 'buyer_tickets'`, orderID); err != nil {
		t.Fatal(err)
	}
}

// queueMailer is a mailer of one message an hour an address, three
// attempts a row.
func (b *bundle) queueMailer(s mailer.Sender) *mailer.Mailer {
	m := b.mailer(s, "m")
	m.PerHour, m.MaxAttempts = 1, 3
	return m
}

// A row waiting while another row of its address is being sent by a
// mailer that dies on that row's last attempt: the other row is given up,
// and the waiting one is sent when the hour's slot frees, not after the
// day-long safety wake.
func TestWaitingRowIsSentAtTheNextSlotWhenTheRowAheadIsGivenUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	m := b.queueMailer(s)
	b.payAda(t)
	runOnce(t, m) // the hour's one message
	ahead := b.payAda(t)
	b.leaseToDeadMailer(t, ahead, m.MaxAttempts)
	waiting := b.payAda(t)
	runOnce(t, m) // the hour is full: waiting waits, ahead is leased
	if sent, _, dueIn := b.buyerRow(t, waiting); sent || dueIn > time.Hour {
		t.Fatalf("waiting row: sent %v, due in %s; want waiting for the hour's slot (an hour at most)", sent, dueIn)
	}
	b.leaseRunsOut(t, ahead)
	runOnce(t, m) // ahead is given up
	if _, failed, _ := b.buyerRow(t, ahead); !failed {
		t.Fatal("the row whose mailer died on its last attempt was not given up")
	}
	if sent, _, dueIn := b.buyerRow(t, waiting); sent || dueIn > time.Hour {
		t.Fatalf("waiting row after the row ahead was given up: sent %v, due in %s; want due when the slot frees", sent, dueIn)
	}
	b.anHourLater(t)
	runOnce(t, m)
	if sent, _, _ := b.buyerRow(t, waiting); !sent || len(srv.messages()) != 2 {
		t.Fatalf("an hour later: waiting row sent %v, %d messages; want sent, 2", sent, len(srv.messages()))
	}
}

// The queue's head, claimed at its slot by a mailer that dies on its last
// attempt, is given up: the next row of the queue takes that slot.
func TestHeadGivenUpLeavesItsSlotToTheNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	m := b.queueMailer(s)
	b.payAda(t)
	runOnce(t, m)
	head, next := b.payAda(t), b.payAda(t)
	runOnce(t, m) // both wait: head for the slot, next behind it
	if _, _, dueIn := b.buyerRow(t, head); dueIn > time.Hour {
		t.Fatalf("head due in %s, want when the slot frees (an hour at most)", dueIn)
	}
	if _, _, dueIn := b.buyerRow(t, next); dueIn < 2*time.Hour {
		t.Fatalf("the row behind the head due in %s, want parked (it waits for the head)", dueIn)
	}
	b.anHourLater(t)
	// The head's slot: a mailer claims it and dies on its last attempt.
	b.leaseToDeadMailer(t, head, m.MaxAttempts)
	b.leaseRunsOut(t, head)
	runOnce(t, m)
	if _, failed, _ := b.buyerRow(t, head); !failed {
		t.Fatal("the head whose mailer died on its last attempt was not given up")
	}
	if sent, _, dueIn := b.buyerRow(t, next); !sent {
		t.Fatalf("the row behind a head given up: due in %s, not sent; want sent in the slot the head left", dueIn)
	}
	if n := len(srv.messages()); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}

// A message that failed and waits a long backoff holds no other message
// of its address back: the hour's slots go to the rest of the queue, and
// the retry is not brought forward.
func TestRetryWithALongBackoffDoesNotHoldTheQueueBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	m := b.mailer(s, "m")
	m.PerHour, m.Backoff = 2, 4*time.Hour
	srv.setFail(smtp451)
	retry := b.payAda(t)
	runOnce(t, m)
	srv.setFail(nil)
	if sent, failed, dueIn := b.buyerRow(t, retry); sent || failed || dueIn < 3*time.Hour {
		t.Fatalf("failed row: sent %v, failed %v, due in %s; want a retry in 4 h", sent, failed, dueIn)
	}
	b.payAda(t)
	b.payAda(t)
	runOnce(t, m) // the hour's two slots
	third, fourth := b.payAda(t), b.payAda(t)
	runOnce(t, m) // the hour is full: both wait
	if sent, _, dueIn := b.buyerRow(t, third); sent || dueIn > time.Hour {
		t.Fatalf("third: sent %v, due in %s; want due when a slot frees (an hour at most), not behind the retry", sent, dueIn)
	}
	b.anHourLater(t)
	for range 4 {
		runOnce(t, m)
	}
	for name, id := range map[string]string{"third": third, "fourth": fourth} {
		if sent, _, dueIn := b.buyerRow(t, id); !sent {
			t.Errorf("an hour later the %s message is not sent (due in %s); want the hour's two slots used", name, dueIn)
		}
	}
	if sent, _, dueIn := b.buyerRow(t, retry); sent || dueIn < 2*time.Hour {
		t.Errorf("the retry: sent %v, due in %s; want still waiting out its backoff", sent, dueIn)
	}
	if n := len(srv.messages()); n != 4 {
		t.Errorf("%d messages, want 4", n)
	}
}

// A message that fails in its slot with a backoff longer than the wait for
// the next slot gives that slot to the next in the queue at once.
func TestFailedHeadGivesItsSlotToTheNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, s := startSender(t, "", "")
	m := b.queueMailer(s)
	m.Backoff = 4 * time.Hour
	b.payAda(t)
	runOnce(t, m)
	head, next := b.payAda(t), b.payAda(t)
	runOnce(t, m)
	b.anHourLater(t)
	srv.setFail(smtp451)
	runOnce(t, m) // the head takes the slot and fails: the slot is free again
	srv.setFail(nil)
	if sent, failed, dueIn := b.buyerRow(t, head); sent || failed || dueIn < 3*time.Hour {
		t.Fatalf("head after failing: sent %v, failed %v, due in %s; want a retry in 4 h", sent, failed, dueIn)
	}
	runOnce(t, m)
	if sent, _, dueIn := b.buyerRow(t, next); !sent {
		t.Fatalf("the row behind a failed head: due in %s, not sent; want sent in the slot the head gave back", dueIn)
	}
	if n := len(srv.messages()); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}
