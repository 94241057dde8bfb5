package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// part is a workload that can run alone or mixed with others: what it
// provisions, what one arrival does, and what it checks afterwards.
type part interface {
	provision(env *Env, b *docBuilder)
	register(ops *opSet)
	actor(w *load.Worker) load.Actor
	check(ctx context.Context, env *Env) (integrity.Checks, []Figure)
}

// figurer is a part with figures taken from the load result.
type figurer interface {
	figures(res *load.Result) []Figure
}

// opSet names the ops of a run; parts register theirs and keep the index.
type opSet struct{ names []string }

func (o *opSet) add(name string) int {
	for i, n := range o.names {
		if n == name {
			return i
		}
	}
	o.names = append(o.names, name)
	return len(o.names) - 1
}

// docBuilder gathers the catalog document of a run: one tenant holding
// every part's events and storefront keys, and the parts' channels.
type docBuilder struct {
	events   []catalog.Event
	channels []catalog.Channel
	keys     []catalog.PublishableKey
}

func (b *docBuilder) doc(run string) *catalog.Document {
	t := tenant(run, b.events...)
	if len(b.keys) > 0 {
		t.PublishableKeys = b.keys
	}
	return &catalog.Document{Tenants: []catalog.Tenant{t}, Channels: b.channels}
}

// actors is a part's list of the actors it made, one per worker.
type actors[A any] struct {
	mu   sync.Mutex
	list []A
}

func (a *actors[A]) add(x A) A {
	a.mu.Lock()
	a.list = append(a.list, x)
	a.mu.Unlock()
	return x
}

func (a *actors[A]) all() []A {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]A(nil), a.list...)
}

// weighted is a part with its share of the arrivals.
type weighted struct {
	p      part
	weight int
}

// provision applies the parts' catalog to env and returns the ops they
// registered.
func provision(ctx context.Context, env *Env, name string, parts []weighted) (*opSet, error) {
	b := &docBuilder{}
	ops := &opSet{}
	for _, w := range parts {
		w.p.provision(env, b)
		w.p.register(ops)
	}
	if err := env.API.ApplyCatalog(ctx, b.doc(env.Run)); err != nil {
		return nil, fmt.Errorf("%s: provision the catalog: %w", name, err)
	}
	return ops, nil
}

// runParts provisions the parts' catalog, runs the load and checks each part.
func runParts(ctx context.Context, env *Env, name, unit, latencyOp string, o Options, parts []weighted) (*Outcome, error) {
	ops, err := provision(ctx, env, name, parts)
	if err != nil {
		return nil, err
	}
	plan := load.Plan{
		Name: o.label(name), Unit: unit, Ops: ops.names, Primary: ops.add(latencyOp),
		Open: o.Rate > 0, Rate: o.Rate, Duration: o.Duration, Arrivals: o.Arrivals, Workers: o.Workers,
		Progress: o.Progress, NewActor: mixer(parts), Window: env.window(),
	}
	res, err := load.Run(ctx, env.Addr, plan)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return finish(ctx, env, name, &Outcome{Result: res, LatencyOp: latencyOp, CPU: env.CPU.Shares()}, parts), nil
}

// finish adds the parts' figures and, unless the run was interrupted or
// sold nothing, their integrity checks.
func finish(ctx context.Context, env *Env, name string, out *Outcome, parts []weighted) *Outcome {
	for _, w := range parts {
		if f, ok := w.p.(figurer); ok {
			out.Figures = append(out.Figures, f.figures(out.Result)...)
		}
	}
	if env.Canned {
		out.Notes = append(out.Notes, "canned answers: nothing was sold, so there is nothing to check")
		return out
	}
	if out.Result.Interrupted || ctx.Err() != nil {
		// Stopped by the user: report what was measured, check nothing.
		out.Checks = append(out.Checks, integrity.Check{Name: name + ": integrity", Status: integrity.NotChecked,
			Detail: "interrupted before the end: the figures are partial and were not checked"})
		return out
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), env.DrainTimeout+time.Minute)
	defer cancel()
	for _, w := range parts {
		cs, figs := w.p.check(cctx, env)
		out.Checks = append(out.Checks, cs...)
		out.Figures = append(out.Figures, figs...)
	}
	return out
}

// mixer makes, per worker, one actor per part and hands arrival k to the
// part whose turn it is in a fixed pattern of the weights.
func mixer(parts []weighted) func(w *load.Worker) load.Actor {
	if len(parts) == 1 {
		return parts[0].p.actor
	}
	return func(w *load.Worker) load.Actor {
		m := &mixActor{}
		for _, p := range parts {
			a := p.p.actor(w)
			for range p.weight {
				m.turns = append(m.turns, a)
			}
		}
		m.k = w.ID // workers start at different turns
		return m
	}
}

type mixActor struct {
	turns []load.Actor
	k     int
}

func (m *mixActor) Arrive(w *load.Worker, intended time.Time) {
	m.k++
	m.turns[m.k%len(m.turns)].Arrive(w, intended)
}

// single is a scenario of one part.
type single struct {
	name, unit, latencyOp string
	defaults              Options
	newPart               func(o Options) part
}

func (s *single) Name() string { return s.name }

func (s *single) Run(ctx context.Context, env *Env, o Options) (*Outcome, error) {
	o = o.or(s.defaults)
	if o.Rate > 0 && o.Arrivals > 0 {
		o.Duration = 0 // the schedule is Arrivals/Rate long
	}
	return runParts(ctx, env, s.name, s.unit, s.latencyOp, o, []weighted{{p: s.newPart(o), weight: 1}})
}
