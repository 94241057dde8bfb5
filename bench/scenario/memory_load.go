package scenario

import (
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/bench/load"
)

// holder holds four seats per arrival with a fresh keyed hold token,
// arrival i taking seats 4i+1 .. 4i+4 in map order: no two arrivals want
// the same seat.
type holder struct {
	ch                  channel
	tokenPath, holdPath string
	next                atomic.Int64
	held                atomic.Int64
}

func (h *holder) actor(w *load.Worker) load.Actor { return &holdActor{h: h} }

type holdActor struct {
	h    *holder
	body []byte
	tok  []byte
}

func (a *holdActor) Arrive(w *load.Worker, intended time.Time) {
	h := a.h
	i := int(h.next.Add(1) - 1)
	keyed(w, h.ch.Key, "POST", h.tokenPath)
	st, tr := w.Send()
	w.Observe(0, intended)
	tok := load.Field(w.Resp.Body(), `"holdToken":`)
	if tr != "" || st != 200 || len(tok) == 0 {
		w.Error(answerCode(w, st, tr))
		return
	}
	a.tok = append(a.tok[:0], tok...)
	b := append(a.body[:0], `{"holdToken":"`...)
	b = append(b, a.tok...)
	b = append(b, `","seatLabels":[`...)
	for s := range memSeatsPerToken {
		seat := i*memSeatsPerToken + s
		if s > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, seatLabel(1+seat/memSeats, 1+seat%memSeats)...)
		b = append(b, '"')
	}
	a.body = append(b, "]}"...)
	start := time.Now()
	keyed(w, h.ch.Key, "POST", h.holdPath)
	w.Req.SetBodyRaw(a.body)
	st, tr = w.Send()
	w.Observe(1, start)
	if tr != "" || st != 200 {
		w.Error(answerCode(w, st, tr))
		return
	}
	h.held.Add(memSeatsPerToken)
	w.Done(1)
}

// pender reserves pending orders and keeps their ids and idempotency keys.
type pender struct {
	ch     channel
	path   string
	body   []byte
	actors actors[*penderActor]
}

func (p *pender) actor(w *load.Worker) load.Actor {
	return p.actors.add(&penderActor{p: p, c: newPartner(p.ch, w.ID)})
}

type penderActor struct {
	p      *pender
	c      *partner
	orders []string
	idems  []string
}

func (a *penderActor) Arrive(w *load.Worker, intended time.Time) {
	a.c.keyed(w, "POST", a.p.path)
	st, tr, ok := a.c.reserve(w, a.p.body, true)
	w.Observe(0, intended)
	if !ok {
		w.Error(answerCode(w, st, tr))
		return
	}
	a.orders = append(a.orders, string(a.c.order))
	a.idems = append(a.idems, string(a.c.idem))
	w.Done(1)
}
