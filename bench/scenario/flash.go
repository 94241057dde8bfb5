package scenario

import (
	"bytes"
	"context"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

// Flash is one hot GA event; each buyer reserves a ticket (keyed partner
// checkout) and confirms it with the signed request. As "flash" it runs a
// closed loop at maximum throughput, and as "flash-open" an open loop at a
// fixed rate, both with a capacity the run cannot sell out, so every pair
// does the full claim. FlashDurable and FlashReplicated (turns.go) measure
// it on Redis with and without persistence, and with and without a replica
// waited for. Sellout (sellout.go) is the same flow with 10,000 tickets.
var (
	Flash = &single{name: "flash", unit: "pairs", latencyOp: "pair",
		defaults: Options{Duration: 20 * time.Second, Workers: 128, Capacity: neverSoldOut},
		newPart:  func(o Options) part { return &flash{capacity: o.Capacity} }}

	FlashOpen = &single{name: "flash-open", unit: "pairs", latencyOp: "pair",
		defaults: Options{Duration: 20 * time.Second, Rate: 5000, Workers: 1024, Capacity: neverSoldOut},
		newPart:  func(o Options) part { return &flash{capacity: o.Capacity} }}
)

// neverSoldOut is a capacity no bench run reaches.
const neverSoldOut = 1_000_000_000

// flash is the reserve+confirm workload on one GA event.
type flash struct {
	capacity                                int64
	ch                                      channel
	event, ticket, reservePath              string
	reserveBody                             []byte
	opReserve, opConfirm, opPair, opRejects int
	opRejectSent                            int
	actors                                  actors[*flashActor]
}

func (f *flash) provision(env *Env, b *docBuilder) {
	f.ch = newChannel(env.Run, "flash")
	f.event, f.ticket = "ev_"+env.Run+"_flash", "tk_ga"
	f.reservePath = "/v1/channel/events/" + f.event + "/checkout"
	f.reserveBody = []byte(`{"buyerName":"Bench Buyer","buyerEmail":"buyer@bench.example.com","selectedTicketId":"` + f.ticket + `","quantity":1}`)
	b.events = append(b.events, gaEvent(f.event, f.ticket, f.capacity, []string{f.ch.ID}))
	b.channels = append(b.channels, f.ch.doc(env.Allow))
}

func (f *flash) register(ops *opSet) {
	f.opReserve, f.opConfirm, f.opPair = ops.add("reserve"), ops.add("confirm"), ops.add("pair")
	f.opRejects, f.opRejectSent = ops.add("sold_out_answer"), ops.add("sold_out_from_send")
}

func (f *flash) actor(w *load.Worker) load.Actor {
	return f.actors.add(&flashActor{f: f, p: newPartner(f.ch, w.ID)})
}

type flashActor struct {
	f *flash
	p *partner
	t tally
}

// Arrive is one buyer: reserve, then confirm what was reserved. reserve
// and pair latencies run from the intended arrival; confirm from the
// moment the buyer sends it, right after the reserve answer.
func (a *flashActor) Arrive(w *load.Worker, intended time.Time) {
	f := a.f
	a.p.keyed(w, "POST", f.reservePath)
	sent := time.Now()
	st, tr, ok := a.p.reserve(w, f.reserveBody, true)
	w.Observe(f.opReserve, intended)
	if !ok {
		switch code := answerCode(w, st, tr); {
		case soldOutCodes[code]:
			w.Reject(code)
			w.Observe(f.opRejects, intended)
			w.Observe(f.opRejectSent, sent)
			a.t.soldOutReserves++
		default:
			w.Error(code)
		}
		return
	}
	sent = time.Now()
	st, tr = a.p.confirm(w)
	now := time.Now()
	w.ObserveDuration(f.opConfirm, now.Sub(sent))
	w.ObserveDuration(f.opPair, now.Sub(intended))
	switch confirmOutcome(w, st, tr) {
	case confirmPaid:
		a.t.paid++
		a.t.tickets++
		a.t.charged += a.p.amount
		a.t.lastPaid = now
		w.Done(1)
	case confirmSoldOut:
		w.Observe(f.opRejects, intended)
		w.Observe(f.opRejectSent, sent)
		a.t.soldOutConfirms++
	case confirmUnsure:
		a.t.unsure = append(a.t.unsure, unsure{order: string(a.p.order), amount: a.p.amount, tickets: 1})
	case confirmError:
		a.t.refused++
	}
}

func (f *flash) check(ctx context.Context, env *Env) (integrity.Checks, []Figure) {
	var t tally
	for _, a := range f.actors.all() {
		t.merge(&a.t)
	}
	return checkSale(ctx, env, "flash "+f.event, f.ch.Key, f.event, f.ticket, f.capacity, &t)
}

// soldOutCodes are the reserve answers of a sold-out ticket or event.
var soldOutCodes = map[string]bool{
	"TICKET_SOLD_OUT": true, "EVENT_SOLD_OUT": true, "QUANTITY_EXCEEDS_CAPACITY": true, "TICKET_QUANTITY_EXCEEDS_CAPACITY": true,
}

// answerCode names a failed call: its transport error, or the answer's code.
func answerCode(w *load.Worker, status int, transport string) string {
	switch {
	case transport != "":
		return transport
	case status == 200:
		return "MALFORMED_ANSWER" // 200 without the fields the flow needs
	}
	return w.Code()
}

type confirmResult int

const (
	confirmPaid    confirmResult = iota
	confirmSoldOut               // CONFIRM_FAILED, reason sold_out: expected once sold out
	confirmUnsure                // no answer or 5xx: the order's status decides
	confirmError                 // a definite refusal that should not happen
)

// confirmOutcome classifies a confirm answer and counts it.
func confirmOutcome(w *load.Worker, status int, transport string) confirmResult {
	body := w.Resp.Body()
	switch {
	case transport != "":
		w.Error(transport)
		return confirmUnsure
	case status == 200 && bytes.Equal(load.Field(body, `"status":`), []byte("paid")) && load.Field(body, `"duplicate":`) == nil:
		return confirmPaid
	case status == 409 && bytes.Equal(load.Field(body, `"reason":`), []byte("sold_out")):
		w.Reject("CONFIRM_FAILED sold_out")
		return confirmSoldOut
	case status >= 500:
		w.Error(w.Code())
		return confirmUnsure
	}
	w.Error(answerCode(w, status, ""))
	return confirmError
}
