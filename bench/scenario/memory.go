package scenario

import (
	"context"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
)

// Memory measures what ticketd's state costs in Redis: a seated event of
// 100 rows x 1,000 seats is held whole (keyed hold tokens of four seats),
// then 10,000 pending orders are reserved on a GA event. It reports bytes
// per held seat and per pending order, each as the sum of MEMORY USAGE
// over the keys concerned and as the used_memory delta of INFO memory.
var Memory = memory{}

// Names of the memory figures.
const (
	FigEventMB       = "100,000-seat event held whole, Redis MB (larger estimate)"
	FigSeatsHeld     = "seats held"
	FigPerSeatUsage  = "bytes per held seat (MEMORY USAGE)"
	FigPerSeatUsed   = "bytes per held seat (used_memory delta)"
	FigPerOrderUsage = "bytes per pending order (MEMORY USAGE, order + idempotency key)"
	FigPerOrderUsed  = "bytes per pending order (used_memory delta)"
)

const (
	memRows, memSeats = 100, 1000
	memSeatsPerToken  = 4
	memPendingOrders  = 10_000
)

type memory struct{}

func (memory) Name() string { return "memory" }

func (memory) Run(ctx context.Context, env *Env, o Options) (*Outcome, error) {
	o = o.or(Options{Workers: 64, Arrivals: memPendingOrders})
	out := &Outcome{LatencyOp: "hold"}
	if env.Redis == nil {
		out.Checks = integrity.Checks{{Name: "memory: measured", Status: integrity.NotChecked,
			Detail: "no Redis to measure (give -redis-url with -target)"}}
		return out, nil
	}
	ch := newChannel(env.Run, "mem")
	seated, ga := "ev_"+env.Run+"_mem", "ev_"+env.Run+"_pend"
	b := &docBuilder{events: []catalog.Event{seatedEvent(seated, memRows, memSeats, []string{ch.ID}),
		gaEvent(ga, "tk_ga", neverSoldOut, []string{ch.ID})}, channels: []catalog.Channel{ch.doc(env.Allow)}}
	if err := env.API.ApplyCatalog(ctx, b.doc(env.Run)); err != nil {
		return nil, fmt.Errorf("memory: provision the catalog: %w", err)
	}
	prefix := env.KeyPrefix
	pattern := "*" + redismem.Glob(keys.Space{}.Event(seated)) + "*"
	if env.PrefixKnown {
		pattern = redismem.Glob(keys.Space{Prefix: prefix}.Event(seated)) + "*"
	}
	// measure reads the seated event's keys, the sum of their MEMORY USAGE
	// and used_memory of the whole Redis.
	measure := func() (usage, used int64, ks []string, err error) {
		if ks, err = redismem.Scan(ctx, env.Redis, pattern); err != nil {
			return 0, 0, nil, err
		}
		if usage, err = redismem.Usage(ctx, env.Redis, ks); err != nil {
			return 0, 0, nil, err
		}
		used, err = redismem.UsedMemory(ctx, env.Redis)
		return usage, used, ks, err
	}

	// Phase 1: hold every seat.
	before, usedBefore, _, err := measure()
	if err != nil {
		return nil, err
	}
	h := &holder{ch: ch, tokenPath: "/v1/channel/seating/events/" + seated + "/hold-token",
		holdPath: "/v1/channel/seating/events/" + seated + "/hold"}
	res, err := load.Run(ctx, env.Addr, load.Plan{Name: "memory", Unit: "holds",
		Ops: []string{"hold_token", "hold"}, Primary: 1, Workers: o.Workers,
		Arrivals: memRows * memSeats / memSeatsPerToken, Progress: o.Progress, NewActor: h.actor})
	if err != nil {
		return nil, fmt.Errorf("memory: hold: %w", err)
	}
	out.Result = res
	after, usedAfter, eventKeys, err := measure()
	if err != nil {
		return nil, err
	}
	av, err := env.API.Availability(ctx, ch.Key, seated)
	if err != nil {
		return nil, fmt.Errorf("memory: availability: %w", err)
	}
	held := int64(len(av.Held))
	out.Checks = append(out.Checks, integrity.Check{Name: "memory: every seat held once", Status: passIf(held == memRows*memSeats && h.held.Load() == held),
		Detail: fmt.Sprintf("ticketd lists %d seats held, holds answered for %d, of %d", held, h.held.Load(), memRows*memSeats)})
	if !env.PrefixKnown && len(eventKeys) > 0 {
		prefix = eventKeys[0][:strings.Index(eventKeys[0], keys.Space{}.Event(seated))]
	}

	// Phase 2: pending orders.
	p := &pender{ch: ch, path: "/v1/channel/events/" + ga + "/checkout",
		body: []byte(`{"buyerName":"Bench Buyer","buyerEmail":"buyer@bench.example.com","selectedTicketId":"tk_ga","quantity":1}`)}
	res2, err := load.Run(ctx, env.Addr, load.Plan{Name: "memory-orders", Unit: "orders", Ops: []string{"pending_reserve"},
		Workers: o.Workers, Arrivals: o.Arrivals, Progress: o.Progress, NewActor: p.actor})
	if err != nil {
		return nil, fmt.Errorf("memory: pending orders: %w", err)
	}
	usedAfterOrders, err := redismem.UsedMemory(ctx, env.Redis)
	if err != nil {
		return nil, err
	}
	sp := keys.Space{Prefix: prefix}
	var orderKeys []string
	for _, a := range p.actors.all() {
		for i, id := range a.orders {
			k, _ := sp.Order(id)
			orderKeys = append(orderKeys, k, sp.Idempotency(a.idems[i]))
		}
	}
	orderUsage, err := redismem.Usage(ctx, env.Redis, orderKeys)
	if err != nil {
		return nil, err
	}
	created := int64(len(orderKeys) / 2)
	out.Checks = append(out.Checks, integrity.Check{Name: "memory: pending orders created", Status: passIf(created == o.Arrivals),
		Detail: fmt.Sprintf("%d of %d reserves created a pending order", created, o.Arrivals)})
	mergeInto(res, res2)

	if held > 0 {
		perSeat := float64(after-before) / float64(held)
		perSeatUsed := float64(usedAfter-usedBefore) / float64(held)
		out.BytesPerHold = &perSeat
		eventBytes := max(float64(after), float64(before)+float64(usedAfter-usedBefore))
		out.Figures = append(out.Figures, Figure{Name: FigSeatsHeld, Value: float64(held)},
			Figure{Name: FigPerSeatUsage, Value: perSeat, Unit: "B"}, Figure{Name: FigPerSeatUsed, Value: perSeatUsed, Unit: "B"},
			Figure{Name: FigEventMB, Value: eventBytes / 1e6, Unit: "MB"})
	}
	if created > 0 {
		perOrder := float64(orderUsage) / float64(created)
		out.BytesPerPendingOrder = &perOrder
		out.Figures = append(out.Figures, Figure{Name: FigPerOrderUsage, Value: perOrder, Unit: "B"},
			Figure{Name: FigPerOrderUsed, Value: float64(usedAfterOrders-usedAfter) / float64(created), Unit: "B"})
	}
	out.Notes = append(out.Notes, "used_memory deltas count everything on the Redis server, other clients' keys included; MEMORY USAGE counts only the keys measured",
		"the event's size is the larger of: MEMORY USAGE of all its keys, and its keys before holding plus the used_memory delta of holding")
	return out, nil
}

// mergeInto adds a second phase's ops and counts to res.
func mergeInto(res, more *load.Result) {
	res.Ops = append(res.Ops, more.Ops...)
	res.Hists = append(res.Hists, more.Hists...)
	res.Requests += more.Requests
	for k, n := range more.Errors {
		res.Errors[k] += n
	}
	for k, n := range more.Rejections {
		res.Rejections[k] += n
	}
	res.Interrupted = res.Interrupted || more.Interrupted
}
