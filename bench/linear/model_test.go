package linear

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// op builds a history entry; ret < 0 is a call that never answered.
func op(client int, in Input, call, ret int64, out Output) porcupine.Operation {
	if ret < 0 {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

const ga = "ga:ev/tk"

func reserve(n, qty int) Input { return Input{Op: n, Kind: Reserve, Part: ga, Cap: 1, Qty: qty} }
func keyed(n int, key string) Input {
	return Input{Op: n, Kind: Reserve, Part: ga, Cap: 1, Qty: 1, Key: key}
}
func confirm(id string) Input { return Input{Kind: Confirm, Part: ga, Cap: 1, Order: id} }
func status(id string) Input  { return Input{Kind: Status, Part: ga, Cap: 1, Order: id} }
func hold(tok string, seats ...string) Input {
	return Input{Kind: Hold, Part: "seats:ev", Token: tok, Seats: seats}
}

var (
	created = func(id string) Output { return Output{OK: true, Order: id} }
	paid    = Output{OK: true, Status: "paid"}
	soldOut = Output{Code: "CONFIRM_FAILED", Status: "failed", Reason: "sold_out"}
	unknown = Output{Unknown: true}
)

func check(t *testing.T, h []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return porcupine.CheckOperationsTimeout(Model.ToModel(), h, 0)
}

// The checker must be able to fail: histories no sequential run of ticketd
// can produce are Illegal.
func TestModelRejectsNonLinearizableHistories(t *testing.T) {
	cases := map[string][]porcupine.Operation{
		// two confirms of the last ticket both paid: oversold
		"two confirms both paid for the last ticket": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(1, reserve(2, 1), 0, 10, created("o2")),
			op(0, confirm("o1"), 20, 30, paid),
			op(1, confirm("o2"), 20, 30, paid),
		},
		// a reserve refused as sold out before anything was sold
		"sold out with nothing sold": {
			op(0, reserve(1, 1), 0, 10, Output{Code: "TICKET_SOLD_OUT"}),
		},
		// a reserve that succeeds after a paid confirm took the last ticket
		"reserve succeeds after the last ticket was paid": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(0, confirm("o1"), 20, 30, paid),
			op(1, reserve(2, 1), 40, 50, created("o2")),
		},
		// a stale read: status pending after confirm answered paid
		"status pending after paid": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(0, confirm("o1"), 20, 30, paid),
			op(1, status("o1"), 40, 50, Output{OK: true, Status: "pending"}),
		},
		// a repeated confirm that changes its answer
		"repeated confirm changes its answer": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(1, reserve(2, 1), 0, 10, created("o2")),
			op(1, confirm("o2"), 20, 30, paid),
			op(0, confirm("o1"), 40, 50, soldOut),
			op(0, confirm("o1"), 60, 70, paid),
		},
		// one order id given out twice
		"one order id twice": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(1, reserve(2, 1), 0, 10, created("o1")),
		},
		// two tokens both holding one seat
		"one seat held by two tokens": {
			op(0, hold("t1", "A-1"), 0, 10, Output{OK: true, Seats: []string{"A-1"}}),
			op(1, hold("t2", "A-1", "A-2"), 20, 30, Output{OK: true, Seats: []string{"A-1", "A-2"}}),
		},
		// a conflict that names a seat nobody holds
		"conflict on a free seat": {
			op(0, hold("t1", "A-1"), 0, 10, Output{OK: true, Seats: []string{"A-1"}}),
			op(1, hold("t2", "A-1", "A-2"), 20, 30, Output{Code: "SEAT_CONFLICT", Seats: []string{"A-1", "A-2"}}),
		},
		// one Idempotency-Key, two orders
		"a retry gets another order back as a duplicate": {
			op(0, keyed(1, "k"), 0, -1, unknown),
			op(0, keyed(2, "k"), 20, 30, Output{OK: true, Order: "o1", Duplicate: true}),
			op(0, keyed(3, "k"), 40, 50, Output{OK: true, Order: "o2", Duplicate: true}),
		},
		// a duplicate with no attempt before it
		"a duplicate out of nowhere": {
			op(0, keyed(1, "k"), 0, 10, Output{OK: true, Order: "o1", Duplicate: true}),
		},
		// in progress after the first attempt was answered
		"in progress after the order was made": {
			op(0, keyed(1, "k"), 0, 10, created("o1")),
			op(0, keyed(2, "k"), 20, 30, Output{Code: "DUPLICATE_IN_PROGRESS"}),
		},
		// a timed-out confirm may pay, but not twice over: the other
		// order still cannot be paid too
		"unknown confirm and a paid one for the last ticket, then a third sees it free": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(1, reserve(2, 1), 0, 10, created("o2")),
			op(0, confirm("o1"), 20, -1, unknown),
			op(1, confirm("o2"), 20, 30, paid),
			op(2, reserve(3, 1), 40, 50, created("o3")),
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			if res := check(t, h); res != porcupine.Illegal {
				t.Fatalf("checker said %s, want Illegal", res)
			}
		})
	}
}

// Histories ticketd may produce are Ok, the ones with calls of unknown
// outcome included.
func TestModelAcceptsLinearizableHistories(t *testing.T) {
	cases := map[string][]porcupine.Operation{
		// both reserves of the last ticket succeed (reserve claims
		// nothing); the confirms race and one order fails sold_out
		"two reserves of the last ticket, one confirm pays": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(1, reserve(2, 1), 0, 10, created("o2")),
			op(0, confirm("o1"), 20, 30, soldOut),
			op(1, confirm("o2"), 20, 30, paid),
			op(0, confirm("o1"), 40, 50, soldOut),
			op(1, confirm("o2"), 40, 50, Output{OK: true, Status: "paid", Duplicate: true}),
			op(2, status("o1"), 60, 70, Output{OK: true, Status: "failed"}),
		},
		// a confirm that timed out took effect: a later reserve is sold out
		"timed-out confirm took effect": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(0, confirm("o1"), 20, -1, unknown),
			op(1, reserve(2, 1), 40, 50, Output{Code: "TICKET_SOLD_OUT"}),
			op(1, status("o1"), 60, 70, Output{OK: true, Status: "paid"}),
		},
		// a confirm that timed out had not taken effect (yet)
		"timed-out confirm not (yet) taken effect": {
			op(0, reserve(1, 1), 0, 10, created("o1")),
			op(0, confirm("o1"), 20, -1, unknown),
			op(1, status("o1"), 40, 50, Output{OK: true, Status: "pending"}),
			op(1, reserve(2, 1), 60, 70, created("o2")),
		},
		// a reserve retried after no answer: in progress, then the order
		// the first attempt made, then confirmed
		"retried reserve": {
			op(0, keyed(1, "k"), 0, -1, unknown),
			op(0, keyed(2, "k"), 20, 30, Output{Code: "DUPLICATE_IN_PROGRESS"}),
			op(0, keyed(3, "k"), 40, 50, Output{OK: true, Order: "o1", Duplicate: true}),
			op(0, confirm("o1"), 60, 70, paid),
			op(1, reserve(4, 1), 80, 90, Output{Code: "TICKET_SOLD_OUT"}),
		},
		// the first attempt made nothing (refused, key given back): the
		// retry runs afresh
		"retried reserve runs afresh": {
			op(0, keyed(1, "k"), 0, -1, unknown),
			op(0, keyed(2, "k"), 20, 30, created("o1")),
			op(0, keyed(3, "k"), 40, 50, Output{OK: true, Order: "o1", Duplicate: true}),
		},
		// quantity beyond what is left names the remaining
		"quantity exceeds": {
			op(0, Input{Op: 1, Kind: Reserve, Part: ga, Cap: 3, Qty: 2}, 0, 10, created("o1")),
			op(0, Input{Kind: Confirm, Part: ga, Cap: 3, Order: "o1"}, 20, 30, paid),
			op(1, Input{Op: 2, Kind: Reserve, Part: ga, Cap: 3, Qty: 2}, 40, 50, Output{Code: "TICKET_QUANTITY_EXCEEDS_CAPACITY", Remaining: 1}),
		},
		// concurrent holds of one seat: one wins, the other sees it taken
		"seat race": {
			op(0, hold("t1", "A-1"), 0, 10, Output{OK: true, Seats: []string{"A-1"}}),
			op(1, hold("t2", "A-1", "A-2"), 0, 10, Output{Code: "SEAT_CONFLICT", Seats: []string{"A-1"}}),
			op(0, Input{Op: 3, Kind: Reserve, Part: "seats:ev", Token: "t1", Seats: []string{"A-1"}}, 20, 30, created("o1")),
			op(1, hold("t2", "A-1"), 40, 50, Output{Code: "SEAT_CONFLICT", Seats: []string{"A-1"}}),
			op(0, Input{Kind: Confirm, Part: "seats:ev", Order: "o1"}, 60, 70, paid),
			op(1, Input{Kind: Release, Part: "seats:ev", Token: "t2", Seats: []string{"A-1"}}, 80, 90, Output{OK: true, Seats: []string{}}),
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			if res := check(t, h); res != porcupine.Ok {
				t.Fatalf("checker said %s, want Ok", res)
			}
		})
	}
}
