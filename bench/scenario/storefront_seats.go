package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/inventory/keys"
)

// StorefrontSeats is a seat rush on a host's own website (storefront.go):
// each buyer takes a hold token, holds two adjacent seats (front rows are
// wanted most; on a conflict the buyer picks again, three times at most),
// registers with them (register-guest with seatLabels and seatHoldToken),
// opens the card checkout session, pays (the bench sends the processor's
// signed webhook) and reads the registration until it shows confirmed. No
// seat may be booked twice.
var StorefrontSeats = storefrontOnly{&single{name: "storefront-seats", unit: "buyers", latencyOp: "buyer",
	defaults: Options{Duration: 6 * time.Second, Workers: 128},
	newPart:  func(Options) part { return &storefrontSeats{rows: 100, seats: 50} }}}

type storefrontSeats struct {
	rows, seats                 int
	shop                        *shop
	event, tokenPath, holdPath  string
	opToken, opHold, opRegister int
	pay                         payOps
	actors                      actors[*sfSeatActor]
}

func (s *storefrontSeats) provision(env *Env, b *docBuilder) {
	s.shop = newShop(env, "seats")
	s.event = "ev_" + env.Run + "_sseats"
	s.tokenPath = "/v1/storefront/seating/events/" + s.event + "/hold-token"
	s.holdPath = "/v1/storefront/seating/events/" + s.event + "/hold"
	b.events = append(b.events, onStorefront(seatedEvent(s.event, s.rows, s.seats, []string{})))
	b.keys = append(b.keys, s.shop.doc())
}

func (s *storefrontSeats) register(ops *opSet) {
	s.opToken, s.opHold, s.opRegister = ops.add("hold_token"), ops.add("hold"), ops.add("register")
	s.pay.register(ops)
}

func (s *storefrontSeats) actor(w *load.Worker) load.Actor {
	return s.actors.add(&sfSeatActor{seatPicker: newSeatPicker(w.ID, s.rows, s.seats), s: s, b: newBuyer(s.shop, w.ID)})
}

type sfSeatActor struct {
	seatPicker
	s      *storefrontSeats
	b      *buyer
	token  []byte
	body   []byte
	cart   []byte
	gaveUp int64
	t      regTally
}

// seatTotal is what a buyer of two seats pays, and seatSubtotal its
// selectedTicketAmount (the seats' prices without the fee).
const (
	seatTotal    = 2 * (seatPrice + seatFee)
	seatSubtotal = 2 * seatPrice
)

// Arrive is one buyer from the hold token to confirmed seats (or giving up).
func (a *sfSeatActor) Arrive(w *load.Worker, intended time.Time) {
	s, b := a.s, a.b
	b.next()
	b.prepare(w, "POST", s.tokenPath)
	w.Req.SetBodyString("{}")
	st, tr := w.Send()
	w.Observe(s.opToken, intended) // the arrival's first call: from its intended start
	tok := load.Field(w.Resp.Body(), `"holdToken":`)
	if tr != "" || st != 200 || len(tok) == 0 {
		w.Error("hold-token " + answerCode(w, st, tr))
		return
	}
	a.token = append(a.token[:0], tok...)
	if !a.hold(w) {
		return
	}
	labels := []string{a.labels[0], a.labels[1]}
	a.cart = a.appendLabels(append(a.cart[:0], `"seatLabels":`...))
	a.cart = append(append(append(a.cart, `,"seatHoldToken":"`...), a.token...), '"')

	start := time.Now()
	st, tr, ok := b.register(w, s.event, a.cart, seatTotal)
	w.Observe(s.opRegister, start)
	if !ok {
		w.Error("register " + answerCode(w, st, tr))
		return
	}
	a.cart = append(a.cart, `,"quantity":2`...)
	b.checkoutAndPay(w, &a.t, s.pay, s.event, a.cart, seatSubtotal, 2, labels, intended)
}

// hold holds two adjacent seats with the buyer's token, picking again on
// a conflict; false when the buyer gave up or the hold failed otherwise.
func (a *sfSeatActor) hold(w *load.Worker) bool {
	for range seatPicks {
		a.pick()
		a.body = append(append(append(a.body[:0], `{"holdToken":"`...), a.token...), `","seatLabels":`...)
		a.body = append(a.appendLabels(a.body), '}')
		start := time.Now()
		a.b.prepare(w, "POST", a.s.holdPath)
		w.Req.SetBodyRaw(a.body)
		st, tr := w.Send()
		w.Observe(a.s.opHold, start)
		if tr == "" && st == 200 {
			return true
		}
		code := answerCode(w, st, tr)
		if code != "SEAT_CONFLICT" {
			w.Error("hold " + code)
			return false
		}
		w.Reject(code)
	}
	a.gaveUp++
	return false
}

// check: no seat booked twice (Redis' booked hash against the record's
// seat tickets), each booked seat belonging to exactly one confirmed
// registration; the registrations in the record with one buyer e-mail each.
func (s *storefrontSeats) check(ctx context.Context, env *Env) (integrity.Checks, []Figure) {
	label := "storefront-seats " + s.event
	var t regTally
	var gaveUp int64
	for _, a := range s.actors.all() {
		t.merge(&a.t)
		gaveUp += a.gaveUp
	}
	unknown := t.resolve(ctx, env, s.shop)
	out := integrity.Checks{{Name: label + ": every buyer who held seats and paid got them", Status: passIf(unknown == 0 && t.refused == 0),
		Detail: fmt.Sprintf("%d confirmed; %d registrations left unconfirmed; %d without a definite answer, even from the registration", len(t.confirmed), t.refused, unknown)}}

	owners := integrity.SeatOwners{Label: label, Confirmed: t.seats, RecordWhy: env.RecordWhy}
	booked, why, err := redisHash(ctx, env, func(sp keys.Space) string { return sp.Booked(s.event) })
	switch {
	case err != nil:
		out = append(out, integrity.Check{Name: label + ": read Redis' booked seats", Status: integrity.Fail, Detail: err.Error()})
		owners.BookedWhy = "cannot read Redis"
	case booked == nil:
		owners.BookedWhy = why
	default:
		owners.Booked = booked
	}
	// The registrations first: that waits for the sync worker to write them.
	cs, figs := checkRegistrations(ctx, env, label, s.event, &t)
	out = append(out, cs...)
	if sr, ok := env.Record.(storefrontRecord); ok {
		if owners.Record, err = sr.SeatOwners(ctx, s.event); err != nil {
			out = append(out, integrity.Check{Name: label + ": read the record's seat tickets", Status: integrity.Fail, Detail: err.Error()})
			owners.RecordWhy = "cannot read the record"
		}
	} else if env.Record != nil {
		owners.RecordWhy = "this record has no seat owners"
	}
	out = append(out, integrity.CheckSeatOwners(owners)...)
	figs = append(figs, Figure{Name: label + ": seats sold", Value: float64(len(booked))},
		Figure{Name: label + ": seats on the map", Value: float64(s.rows * s.seats)},
		Figure{Name: label + ": buyers who gave up (every pick taken)", Value: float64(gaveUp)},
		Figure{Name: label + ": webhooks delivered twice", Value: float64(t.redelivered)})
	return out, figs
}
