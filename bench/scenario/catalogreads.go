package scenario

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

// Catalog is partner catalog traffic from many channels: the catalog list,
// event details (with remaining capacity) and quotes, a third each, over
// 16 channels and 8 events, closed loop. Every quote's total is checked
// against the catalog's prices.
var Catalog = &single{name: "catalog", unit: "reads", latencyOp: "read",
	defaults: Options{Duration: 10 * time.Second, Workers: 64},
	newPart:  func(Options) part { return &catalogReads{} }}

const (
	catalogChannels = 16
	catalogEvents   = 8
	catalogCapacity = 5000
	quoteQuantity   = 2
)

type catalogReads struct {
	channels                          []channel
	events                            []string
	detailPaths, quotePaths           []string
	quoteBody                         []byte
	quoteTotal                        []byte
	opList, opDetail, opQuote, opRead int
	actors                            actors[*catalogActor]
}

func (c *catalogReads) provision(env *Env, b *docBuilder) {
	var ids []string
	for i := range catalogChannels {
		ch := newChannel(env.Run, "cat"+strconv.Itoa(i))
		c.channels = append(c.channels, ch)
		b.channels = append(b.channels, ch.doc(env.Allow))
		ids = append(ids, ch.ID)
	}
	for i := range catalogEvents {
		ev := "ev_" + env.Run + "_cat" + strconv.Itoa(i)
		c.events = append(c.events, ev)
		c.detailPaths = append(c.detailPaths, "/v1/channel/events/"+ev)
		c.quotePaths = append(c.quotePaths, "/v1/channel/events/"+ev+"/quote")
		b.events = append(b.events, gaEvent(ev, "tk_ga", catalogCapacity, ids))
	}
	c.quoteBody = []byte(`{"selectedTicketId":"tk_ga","quantity":` + strconv.Itoa(quoteQuantity) + `}`)
	c.quoteTotal = ((ticketPrice + ticketFee) * quoteQuantity).Append(nil)
}

func (c *catalogReads) register(ops *opSet) {
	c.opList, c.opDetail, c.opQuote = ops.add("list"), ops.add("detail"), ops.add("quote")
	c.opRead = ops.add("read")
}

func (c *catalogReads) actor(w *load.Worker) load.Actor {
	return c.actors.add(&catalogActor{c: c, k: w.ID})
}

type catalogActor struct {
	c           *catalogReads
	k           int
	quotes      int64
	wrongTotals int64
}

// Arrive is one read by one channel: list, detail or quote in turn.
func (a *catalogActor) Arrive(w *load.Worker, intended time.Time) {
	a.k++
	c := a.c
	key := c.channels[a.k%len(c.channels)].Key
	ev := (a.k / 3) % len(c.events)
	op := c.opList
	switch a.k % 3 {
	case 0:
		keyed(w, key, "GET", "/v1/channel/events?limit=50")
	case 1:
		op = c.opDetail
		keyed(w, key, "GET", c.detailPaths[ev])
	case 2:
		op = c.opQuote
		keyed(w, key, "POST", c.quotePaths[ev])
		w.Req.SetBodyRaw(c.quoteBody)
	}
	st, tr := w.Send()
	w.Observe(op, intended)
	w.Observe(c.opRead, intended)
	if tr != "" || st != 200 {
		w.Error(answerCode(w, st, tr))
		return
	}
	if op == c.opQuote {
		a.quotes++
		if string(load.Field(w.Resp.Body(), `"total":`)) != string(c.quoteTotal) {
			a.wrongTotals++
			w.Error("WRONG_QUOTE_TOTAL")
			return
		}
	}
	w.Done(1)
}

func (c *catalogReads) check(ctx context.Context, env *Env) (integrity.Checks, []Figure) {
	var quotes, wrong int64
	for _, a := range c.actors.all() {
		quotes += a.quotes
		wrong += a.wrongTotals
	}
	out := integrity.Checks{{Name: "catalog: every quote priced as the catalog says",
		Status: passIf(wrong == 0), Detail: fmt.Sprintf("%d quotes, %d with a total other than %s", quotes, wrong, c.quoteTotal)}}
	untouched := 0
	for _, ev := range c.events {
		rem, err := env.API.Remaining(ctx, c.channels[0].Key, ev)
		if err == nil && rem.Event != nil && *rem.Event == catalogCapacity && rem.Tickets["tk_ga"] == catalogCapacity {
			untouched++
		}
	}
	out = append(out, integrity.Check{Name: "catalog: reads sold nothing", Status: passIf(untouched == len(c.events)),
		Detail: fmt.Sprintf("%d of %d events still have all %d tickets", untouched, len(c.events), catalogCapacity)})
	return out, nil
}

func passIf(ok bool) integrity.Status {
	if ok {
		return integrity.Pass
	}
	return integrity.Fail
}
