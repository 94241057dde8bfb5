// Package linear checks that ticketd's partner surface is linearizable:
// concurrent reserve, confirm, order status, seat hold and seat release
// calls, recorded over HTTP with their call and return times, must be
// explainable by some order of the same calls run one at a time against
// Model, a sequential specification of what interface.md and
// docs/decisions.md promise. github.com/anishathalye/porcupine searches
// for that order.
//
// The model follows ticketd, not a textbook store: a partner reserve checks
// capacity but claims nothing (the pending order is a promise to try), and
// confirm claims it or fails the order with sold_out; so two reserves of
// the last ticket may both succeed, but only one of their confirms pays.
package linear

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation of the history.
type Kind uint8

// The operations.
const (
	Reserve Kind = iota // POST /events/{id}/checkout
	Confirm             // POST /orders/confirm
	Status              // POST /orders/status
	Hold                // POST /seating/events/{id}/hold
	Release             // POST /seating/events/{id}/release
)

func (k Kind) String() string {
	return [...]string{"reserve", "confirm", "status", "hold", "release"}[k]
}

// Input is an operation as called.
type Input struct {
	// Op numbers the operation: an unknown seated reserve's order is named
	// after it, as the caller never learnt its id.
	Op   int
	Kind Kind
	// Part is the partition: "ga:<event>/<ticket>" (its capacity counter
	// and the orders that claim it) or "seats:<event>" (its seats, tokens
	// and orders). Partitions share no state, so each is checked alone.
	Part string
	// Cap is a GA partition's capacity (every GA input carries it).
	Cap int
	// Qty is a GA reserve's quantity.
	Qty int
	// Token is the hold token of a hold, a release or a seated reserve.
	Token string
	// Seats are the labels of a hold, a release or a seated reserve.
	Seats []string
	// Order is the order a confirm or a status names.
	Order string
	// Key is a GA reserve's Idempotency-Key: a retry after an unknown
	// outcome sends the same key (and body) again.
	Key string
}

// Output is what the caller got back.
type Output struct {
	// Unknown: no answer (the call timed out or the connection broke, or an
	// answer that does not say what happened, such as a 503): the call may
	// or may not have taken effect, now or later.
	Unknown bool
	OK      bool
	// Code is a refusal's error code.
	Code string
	// Remaining is QUANTITY_EXCEEDS_CAPACITY's remaining.
	Remaining int
	// Order is the order a reserve created.
	Order string
	// Status: confirm "paid" or "failed" (CONFIRM_FAILED); status
	// "pending", "paid" or "failed".
	Status string
	// Reason is a failed confirm's reason.
	Reason string
	// Duplicate is a paid confirm's duplicate flag.
	Duplicate bool
	// Seats: a hold's seats the token now holds, a release's released
	// seats, or the seats a SEAT_CONFLICT or SEAT_NOT_HELD names.
	Seats []string
}

// Seat holders in the model.
const (
	booked = "booked"
)

type order struct {
	qty   int
	seats []string // nil for GA
	st    string   // pending, paid, failed
	why   string
}

// state is one partition's state. It is never changed once built; step
// returns a new one.
type state struct {
	sold   int
	keys   map[string]string // Idempotency-Key -> its order, or inFlight
	orders map[string]order
	seats  map[string]string // label -> "h:<token>", "o:<order>" or booked; absent: free
	key    string            // canonical encoding, for Equal and Hash
}

func (s *state) seal() *state {
	var b strings.Builder
	b.WriteString(strconv.Itoa(s.sold))
	for _, k := range slices.Sorted(maps.Keys(s.keys)) {
		fmt.Fprintf(&b, "|%s>%s", k, s.keys[k])
	}
	for _, id := range slices.Sorted(maps.Keys(s.orders)) {
		o := s.orders[id]
		fmt.Fprintf(&b, "|%s=%s/%s", id, o.st, o.why)
	}
	for _, l := range slices.Sorted(maps.Keys(s.seats)) {
		fmt.Fprintf(&b, "|%s:%s", l, s.seats[l])
	}
	s.key = b.String()
	return s
}

func (s *state) clone() *state {
	return &state{sold: s.sold, keys: maps.Clone(s.keys), orders: maps.Clone(s.orders), seats: maps.Clone(s.seats)}
}

// inFlight marks a key whose first attempt got no answer: it may have
// claimed the key and be running still (a retry meets
// DUPLICATE_IN_PROGRESS), have made an order (a retry gets it back,
// duplicate), or have given the key back (a retry runs afresh).
const inFlight = "~"

// apply runs in on s, as ticketd would one call at a time: the answer it
// must give and the state after. order names the order a reserve creates.
func apply(s *state, in Input, newOrder string) (Output, *state) {
	switch in.Kind {
	case Reserve:
		if len(in.Seats) == 0 {
			if id, ok := s.keys[in.Key]; ok && in.Key != "" && id != inFlight {
				return Output{OK: true, Order: id, Duplicate: true}, s
			}
			left := in.Cap - s.sold
			switch {
			case in.Qty <= left:
				n := s.clone()
				if n.orders == nil {
					n.orders = map[string]order{}
				}
				n.orders[newOrder] = order{qty: in.Qty, st: "pending"}
				if in.Key != "" {
					if n.keys == nil {
						n.keys = map[string]string{}
					}
					n.keys[in.Key] = newOrder
				}
				return Output{OK: true, Order: newOrder}, n.seal()
			case left <= 0:
				return Output{Code: "TICKET_SOLD_OUT"}, s
			default:
				return Output{Code: "TICKET_QUANTITY_EXCEEDS_CAPACITY", Remaining: left}, s
			}
		}
		var conflicts, notHeld []string
		for _, l := range in.Seats {
			switch h := s.seats[l]; {
			case h == "":
				notHeld = append(notHeld, l)
			case h != "h:"+in.Token:
				conflicts = append(conflicts, l)
			}
		}
		if len(conflicts) > 0 {
			return Output{Code: "SEAT_CONFLICT", Seats: conflicts}, s
		}
		if len(notHeld) > 0 {
			return Output{Code: "SEAT_NOT_HELD", Seats: notHeld}, s
		}
		n := s.clone()
		if n.orders == nil {
			n.orders = map[string]order{}
		}
		for _, l := range in.Seats {
			n.seats[l] = "o:" + newOrder
		}
		n.orders[newOrder] = order{seats: in.Seats, st: "pending"}
		return Output{OK: true, Order: newOrder}, n.seal()
	case Confirm:
		o, ok := s.orders[in.Order]
		if !ok {
			return Output{Code: "NOT_FOUND"}, s
		}
		switch o.st {
		case "paid":
			return Output{OK: true, Status: "paid", Duplicate: true}, s
		case "failed":
			return Output{Code: "CONFIRM_FAILED", Status: "failed", Reason: o.why}, s
		}
		n := s.clone()
		why := ""
		if o.seats == nil {
			if in.Cap-s.sold < o.qty {
				why = "sold_out"
			} else {
				n.sold += o.qty
			}
		} else {
			for _, l := range o.seats {
				if s.seats[l] != "o:"+in.Order {
					why = "seat_lost"
				}
			}
			for _, l := range o.seats {
				switch {
				case why == "":
					n.seats[l] = booked
				case s.seats[l] == "o:"+in.Order:
					delete(n.seats, l)
				}
			}
		}
		if why != "" {
			n.orders[in.Order] = order{qty: o.qty, seats: o.seats, st: "failed", why: why}
			return Output{Code: "CONFIRM_FAILED", Status: "failed", Reason: why}, n.seal()
		}
		n.orders[in.Order] = order{qty: o.qty, seats: o.seats, st: "paid"}
		return Output{OK: true, Status: "paid"}, n.seal()
	case Status:
		o, ok := s.orders[in.Order]
		if !ok {
			return Output{Code: "NOT_FOUND"}, s
		}
		return Output{OK: true, Status: o.st}, s
	case Hold:
		var conflicts []string
		for _, l := range in.Seats {
			if h := s.seats[l]; h != "" && h != "h:"+in.Token {
				conflicts = append(conflicts, l)
			}
		}
		if len(conflicts) > 0 {
			return Output{Code: "SEAT_CONFLICT", Seats: conflicts}, s
		}
		n := s.clone()
		if n.seats == nil {
			n.seats = map[string]string{}
		}
		for _, l := range in.Seats {
			n.seats[l] = "h:" + in.Token
		}
		return Output{OK: true, Seats: heldBy(n, in.Token)}, n.seal()
	case Release:
		var released []string
		n := s.clone()
		for _, l := range in.Seats {
			if s.seats[l] == "h:"+in.Token {
				released = append(released, l)
				delete(n.seats, l)
			}
		}
		if released == nil {
			return Output{OK: true}, s
		}
		return Output{OK: true, Seats: released}, n.seal()
	}
	panic("linear: unknown kind")
}

func heldBy(s *state, token string) []string {
	var out []string
	for l, h := range s.seats {
		if h == "h:"+token {
			out = append(out, l)
		}
	}
	return out
}

// matches reports whether got is the answer want allows. A reserve's order
// id is the caller's to learn, so only its presence is compared.
func matches(want, got Output) bool {
	if want.Duplicate && want.Order != "" && got.Order != want.Order {
		return false // a replay must give the same order back
	}
	return want.OK == got.OK && want.Code == got.Code && want.Remaining == got.Remaining &&
		want.Status == got.Status && want.Reason == got.Reason && want.Duplicate == got.Duplicate &&
		sameSet(want.Seats, got.Seats)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// step is the model's step: the states in may lead to when it answered
// out; none when ticketd could not have answered so. An unknown answer
// allows both "never happened" and "happened, with whatever answer the
// state gave"; with its return time at infinity (see Recorder) it may also
// have happened at any later moment.
func step(st any, inp any, outp any) []any {
	s, in, out := st.(*state), inp.(Input), outp.(Output)
	gaReserve := in.Kind == Reserve && len(in.Seats) == 0
	if out.Unknown {
		if gaReserve {
			// A GA reserve claims nothing; all it may leave is its key,
			// in flight for a retry to meet.
			if _, seen := s.keys[in.Key]; seen || in.Key == "" {
				return []any{s}
			}
			n := s.clone()
			if n.keys == nil {
				n.keys = map[string]string{}
			}
			n.keys[in.Key] = inFlight
			return []any{s, n.seal()}
		}
		_, next := apply(s, in, "?"+strconv.Itoa(in.Op))
		if next == s {
			return []any{s}
		}
		return []any{s, next}
	}
	if gaReserve && in.Key != "" && s.keys[in.Key] == inFlight {
		switch {
		case out.Code == "DUPLICATE_IN_PROGRESS":
			return []any{s}
		case out.OK && out.Duplicate:
			// The first attempt made the order (having checked the
			// capacity at its own moment, unseen).
			if _, dup := s.orders[out.Order]; dup || out.Order == "" {
				return nil
			}
			n := s.clone()
			if n.orders == nil {
				n.orders = map[string]order{}
			}
			n.orders[out.Order] = order{qty: in.Qty, st: "pending"}
			n.keys[in.Key] = out.Order
			return []any{n.seal()}
		}
		// Else the first attempt gave the key back, or never claimed
		// it: this one runs afresh.
		f := s.clone()
		delete(f.keys, in.Key)
		s = f.seal()
	}
	if in.Kind == Reserve && out.OK && !out.Duplicate {
		if _, dup := s.orders[out.Order]; dup || out.Order == "" {
			return nil // an order id given out twice
		}
	}
	want, next := apply(s, in, out.Order)
	if !matches(want, out) {
		return nil
	}
	return []any{next}
}

// Model is the sequential specification, partitioned by Input.Part.
var Model = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byPart := map[string][]porcupine.Operation{}
		for _, op := range h {
			p := op.Input.(Input).Part
			byPart[p] = append(byPart[p], op)
		}
		out := make([][]porcupine.Operation, 0, len(byPart))
		for _, k := range slices.Sorted(maps.Keys(byPart)) {
			out = append(out, byPart[k])
		}
		return out
	},
	Init:  func() []any { return []any{(&state{}).seal()} },
	Step:  step,
	Equal: func(a, b any) bool { return a.(*state).key == b.(*state).key },
	Hash: func(s any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s.(*state).key))
		return h.Sum64()
	},
	DescribeOperation: func(inp, outp any) string {
		in, out := inp.(Input), outp.(Output)
		arg := in.Order
		switch {
		case in.Kind == Reserve && in.Seats == nil:
			arg = strconv.Itoa(in.Qty)
		case in.Seats != nil:
			arg = in.Token + " " + strings.Join(in.Seats, ",")
		}
		res := "?"
		switch {
		case out.Unknown:
		case out.OK:
			res = strings.TrimSpace(fmt.Sprintf("ok %s %s %v", out.Order, out.Status, out.Seats))
		default:
			res = strings.TrimSpace(fmt.Sprintf("%s %s %v", out.Code, out.Reason, out.Seats))
		}
		return fmt.Sprintf("%s(%s) -> %s", in.Kind, arg, res)
	},
	DescribeState: func(s any) string { return s.(*state).key },
}
