package scenario

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

// SeatRush is buyers racing for the same seats: each opens a buyer
// session, holds two adjacent seats (front rows are wanted most; on a
// conflict the buyer picks again, three times at most), reserves them
// inside the session and confirms with the signed request. No seat may be
// sold twice.
var SeatRush = &single{name: "seat-rush", unit: "buyers", latencyOp: "buyer",
	defaults: Options{Duration: 10 * time.Second, Workers: 64},
	newPart:  func(Options) part { return &seatRush{rows: 200, seats: 100} }}

const seatPicks = 3

type seatRush struct {
	rows, seats                                      int
	ch                                               channel
	event, holdPath, checkoutPath                    string
	opSession, opHold, opReserve, opConfirm, opBuyer int
	actors                                           actors[*seatActor]
}

func (s *seatRush) provision(env *Env, b *docBuilder) {
	s.ch = newChannel(env.Run, "seats")
	s.event = "ev_" + env.Run + "_seats"
	s.holdPath = "/v1/channel/seating/events/" + s.event + "/hold"
	s.checkoutPath = "/v1/channel/events/" + s.event + "/checkout"
	b.events = append(b.events, seatedEvent(s.event, s.rows, s.seats, []string{s.ch.ID}))
	b.channels = append(b.channels, s.ch.doc(env.Allow))
}

func (s *seatRush) register(ops *opSet) {
	s.opSession, s.opHold = ops.add("session"), ops.add("hold")
	s.opReserve, s.opConfirm = ops.add("seat_reserve"), ops.add("seat_confirm")
	s.opBuyer = ops.add("buyer")
}

func (s *seatRush) actor(w *load.Worker) load.Actor {
	return s.actors.add(&seatActor{s: s, p: newPartner(s.ch, w.ID), seatPicker: newSeatPicker(w.ID, s.rows, s.seats),
		paid: map[string]int{}})
}

type seatActor struct {
	seatPicker
	s    *seatRush
	p    *partner
	auth []byte // "Bearer <session token>"
	body []byte
	t    tally
	paid map[string]int
}

// pick chooses two seats and makes them the hold's body.
func (a *seatActor) pick() {
	a.seatPicker.pick()
	a.body = append(a.appendLabels(append(a.body[:0], `{"seatLabels":`...)), '}')
}

// seatPicker picks two adjacent seats of a rows x seats map, front rows
// more likely (they are wanted most).
type seatPicker struct {
	rng         *rand.Rand
	rows, seats int
	labels      [2]string
}

func newSeatPicker(worker, rows, seats int) seatPicker {
	return seatPicker{rng: rand.New(rand.NewPCG(uint64(worker), 0x5ea7)), rows: rows, seats: seats}
}

func (p *seatPicker) pick() {
	u := p.rng.Float64()
	row := 1 + int(float64(p.rows)*u*u)
	n := 1 + p.rng.IntN(p.seats-1)
	p.labels[0], p.labels[1] = seatLabel(row, n), seatLabel(row, n+1)
}

// appendLabels appends the picked labels as a JSON array.
func (p *seatPicker) appendLabels(dst []byte) []byte {
	dst = append(dst, `["`...)
	dst = append(dst, p.labels[0]...)
	dst = append(dst, `","`...)
	dst = append(dst, p.labels[1]...)
	return append(dst, `"]`...)
}

// session sets up w.Req as a call inside the buyer's session.
func (a *seatActor) session(w *load.Worker, path string) {
	w.Prepare("POST", path)
	w.Req.Header.SetBytesV("Authorization", a.auth)
	w.Req.Header.SetContentType("application/json")
}

// Arrive is one buyer from session to paid seats (or giving up).
func (a *seatActor) Arrive(w *load.Worker, intended time.Time) {
	defer w.Observe(a.s.opBuyer, intended)
	s := a.s
	a.p.keyed(w, "POST", "/v1/channel/session")
	w.Req.SetBodyString(`{"buyerName":"Bench Buyer","buyerEmail":"buyer@bench.example.com"}`)
	st, tr := w.Send()
	w.Observe(s.opSession, intended) // the arrival's first call: from its intended start
	tok := load.Field(w.Resp.Body(), `"sessionToken":`)
	if tr != "" || st != 200 || len(tok) == 0 {
		w.Error(answerCode(w, st, tr))
		return
	}
	a.auth = append(append(a.auth[:0], "Bearer "...), tok...)

	held := false
	for range seatPicks {
		a.pick()
		start := time.Now()
		a.session(w, s.holdPath)
		w.Req.SetBodyRaw(a.body)
		st, tr = w.Send()
		w.Observe(s.opHold, start)
		if tr == "" && st == 200 {
			held = true
			break
		}
		code := answerCode(w, st, tr)
		if code != "SEAT_CONFLICT" {
			w.Error(code)
			return
		}
		w.Reject(code)
	}
	if !held {
		return // the buyer gave up: every pick was taken
	}

	start := time.Now()
	a.session(w, s.checkoutPath)
	st, tr, ok := a.p.reserve(w, a.body, true)
	w.Observe(s.opReserve, start)
	if !ok {
		w.Error(answerCode(w, st, tr))
		return
	}
	start = time.Now()
	st, tr = a.p.confirm(w)
	w.Observe(s.opConfirm, start)
	switch confirmOutcome(w, st, tr) {
	case confirmPaid:
		a.t.paid++
		a.t.tickets += 2
		a.t.charged += a.p.amount
		a.paid[a.labels[0]]++
		a.paid[a.labels[1]]++
		w.Done(1)
	case confirmUnsure:
		a.t.unsure = append(a.t.unsure, unsure{order: string(a.p.order), amount: a.p.amount, tickets: 2,
			seats: []string{a.labels[0], a.labels[1]}})
	case confirmError:
		a.t.refused++
	}
}

func (s *seatRush) check(ctx context.Context, env *Env) (integrity.Checks, []Figure) {
	label := "seat-rush " + s.event
	var t tally
	paid := map[string]int{}
	for _, a := range s.actors.all() {
		t.merge(&a.t)
		for l, n := range a.paid {
			paid[l] += n
		}
	}
	unknown := t.resolve(ctx, env, s.ch.Key, func(u unsure) {
		for _, l := range u.seats {
			paid[l]++
		}
	})
	out := integrity.Checks{{Name: label + ": every buyer who held and reserved seats got them", Status: passIf(unknown == 0 && t.refused == 0),
		Detail: fmt.Sprintf("%d paid; %d confirms refused; %d without a definite answer, even from status", t.paid, t.refused, unknown)}}
	av, err := env.API.Availability(ctx, s.ch.Key, s.event)
	if err != nil {
		return append(out, integrity.Check{Name: label + ": read booked seats", Status: integrity.Fail, Detail: err.Error()}), nil
	}
	c, figs := checkRecord(ctx, env, label, s.event, integrity.Record{Orders: t.paid, Tickets: t.tickets, Revenue: t.charged})
	out = append(out, c)
	seats := integrity.Seats{Label: label, Paid: paid, Booked: av.Booked, RecordWhy: env.RecordWhy}
	if env.Record != nil {
		if seats.RecordSeats, err = env.Record.SeatLabels(ctx, s.event); err != nil {
			out = append(out, integrity.Check{Name: label + ": read the record's seat tickets", Status: integrity.Fail, Detail: err.Error()})
			seats.RecordSeats, seats.RecordWhy = nil, "cannot read the record"
		}
	}
	figs = append(figs, Figure{Name: label + ": seats sold", Value: float64(len(av.Booked))},
		Figure{Name: label + ": seats on the map", Value: float64(s.rows * s.seats)})
	return append(out, integrity.CheckSeats(seats)...), figs
}
