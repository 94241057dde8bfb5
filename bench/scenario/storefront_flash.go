package scenario

import (
	"context"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/keys"
)

// StorefrontFlash is a general-admission flash sale on a host's own
// website (storefront.go): each buyer registers (register-guest), opens
// the card checkout session, pays (the bench sends the processor's signed
// webhook) and reads the registration until it shows confirmed, as the
// success page does. 6,000 buyers come for 3,000 tickets, so the run
// sells out however fast the machine is, and the buyers after it are told
// so at register-guest; the duration only bounds it. Every tenth buyer's
// webhook is delivered twice, as by a processor that missed the
// acknowledgement: it must book once.
var StorefrontFlash = storefrontOnly{&single{name: "storefront-flash", unit: "registrations", latencyOp: "buyer",
	defaults: Options{Arrivals: 6000, Capacity: 3000, Duration: 30 * time.Second, Workers: 128},
	newPart:  func(o Options) part { return &storefrontFlash{capacity: o.Capacity} }}}

// FigRegistrationRate is storefront-flash's headline rate: registrations
// confirmed per second over the sale (first arrival to last confirmation).
const FigRegistrationRate = "registrations/s over the sale (registrations confirmed / sell-out time)"

// redeliverEvery is how often a buyer's webhook is delivered twice.
const redeliverEvery = 10

type storefrontFlash struct {
	capacity              int64
	shop                  *shop
	event, ticket         string
	cart                  []byte
	opRegister, opSoldOut int
	pay                   payOps
	actors                actors[*sfFlashActor]
}

func (f *storefrontFlash) provision(env *Env, b *docBuilder) {
	f.shop = newShop(env, "flash")
	f.event, f.ticket = "ev_"+env.Run+"_sflash", "tk_ga"
	f.cart = []byte(`"selectedTicketId":"` + f.ticket + `","quantity":1`)
	b.events = append(b.events, onStorefront(gaEvent(f.event, f.ticket, f.capacity, []string{})))
	b.keys = append(b.keys, f.shop.doc())
}

func (f *storefrontFlash) register(ops *opSet) {
	f.opRegister = ops.add("register")
	f.pay.register(ops)
	f.opSoldOut = ops.add("sold_out_answer")
}

func (f *storefrontFlash) actor(w *load.Worker) load.Actor {
	return f.actors.add(&sfFlashActor{f: f, b: newBuyer(f.shop, w.ID)})
}

type sfFlashActor struct {
	f *storefrontFlash
	b *buyer
	t regTally
}

// Arrive is one buyer, from register-guest to the confirmed registration.
// register and buyer latencies run from the intended arrival, the other
// steps from their own send.
func (a *sfFlashActor) Arrive(w *load.Worker, intended time.Time) {
	f, b := a.f, a.b
	b.next()
	st, tr, ok := b.register(w, f.event, f.cart, ticketPrice+ticketFee)
	w.Observe(f.opRegister, intended)
	if !ok {
		switch code := answerCode(w, st, tr); {
		case soldOutCodes[code]:
			w.Reject(code)
			w.Observe(f.opSoldOut, intended)
			a.t.soldOut++
		default:
			w.Error("register " + code)
		}
		return
	}
	b.checkoutAndPay(w, &a.t, f.pay, f.event, f.cart, ticketPrice, 1, nil, intended)
}

func (f *storefrontFlash) tally() *regTally {
	var t regTally
	for _, a := range f.actors.all() {
		t.merge(&a.t)
	}
	return &t
}

func (f *storefrontFlash) figures(res *load.Result) []Figure {
	t := f.tally()
	sold := t.tickets()
	figs := []Figure{{Name: FigSold, Value: float64(sold)}, {Name: FigCapacity, Value: float64(f.capacity)},
		{Name: FigAfterAnswers, Value: float64(t.soldOut)},
		{Name: "webhooks delivered twice", Value: float64(t.redelivered)}}
	if sold < f.capacity || t.lastConfirmed.IsZero() {
		return figs
	}
	sellout := t.lastConfirmed.Sub(res.Started)
	figs = append(figs, Figure{Name: FigSelloutTime, Value: sellout.Seconds(), Unit: "s"})
	if sellout > 0 {
		figs = append(figs, Figure{Name: FigRegistrationRate, Value: float64(len(t.confirmed)) / sellout.Seconds(), Unit: "registrations/s"})
	}
	return figs
}

// check: sold exactly the capacity (Redis' sold counters, the record's
// tickets), every confirmed registration in the record with its tickets
// and one buyer e-mail, none confirmed twice.
func (f *storefrontFlash) check(ctx context.Context, env *Env) (integrity.Checks, []Figure) {
	label := "storefront-flash " + f.event
	t := f.tally()
	unknown := t.resolve(ctx, env, f.shop)
	out := checkGASale(ctx, env, integrity.Sale{Label: label, Paid: int64(len(t.confirmed)), SoldOutReserves: t.soldOut,
		Refused: t.refused, Unresolved: unknown}, f.event, f.ticket, f.capacity)
	cs, figs := checkRegistrations(ctx, env, label, f.event, t)
	return append(out, cs...), figs
}

// checkGASale checks a sale of one GA ticket type of units on event,
// one admission an order: s (what the buyers were told) against Redis'
// sold counters of the ticket and the event.
func checkGASale(ctx context.Context, env *Env, s integrity.Sale, event, ticket string, units int64) integrity.Checks {
	s.Caps, s.PerOrder = map[string]int64{"ticket " + ticket: units, "event": units}, 1
	sold, why, err := redisHash(ctx, env, func(sp keys.Space) string { return sp.Sold(event) })
	switch {
	case err != nil:
		s.SoldWhy = "cannot read Redis' sold counters: " + err.Error()
	case sold == nil:
		s.SoldWhy = why
	default:
		s.Sold = map[string]int64{"ticket " + ticket: counter(sold[capacity.TicketField(ticket)]), "event": counter(sold[capacity.Event])}
	}
	out := integrity.CheckSale(s)
	if err != nil {
		out = append(out, integrity.Check{Name: s.Label + ": read Redis' sold counters", Status: integrity.Fail, Detail: err.Error()})
	}
	return out
}

// counter reads a Redis counter; absent is 0, anything else not a count -1.
func counter(v string) int64 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
