package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/load"
)

// alternate measures two deployments under the flash closed loop in turns:
// slices of o.Duration/slices each, in the order A B B A A B..., so that a
// change in the machine's load while they are measured (other work on a
// shared machine) falls on both alike and their ratio is the deployments'
// difference, not the minute's. Each side provisions its
// flash event once; its slices are merged into one result and its sale is
// checked once at the end. labels name the sides in progress lines.
func alternate(ctx context.Context, envs [2]*Env, labels [2]string, o Options, slices int) ([2]*Outcome, error) {
	o = o.or(Flash.defaults)
	if slices < 1 {
		slices = 1
	}
	var parts [2][]weighted
	var plans [2]load.Plan
	for i, env := range envs {
		f := &flash{capacity: o.Capacity}
		parts[i] = []weighted{{p: f, weight: 1}}
		ops, err := provision(ctx, env, labels[i], parts[i])
		if err != nil {
			return [2]*Outcome{}, err
		}
		plans[i] = load.Plan{Name: labels[i], Unit: "pairs", Ops: ops.names, Primary: ops.add("pair"),
			Duration: o.Duration / time.Duration(slices), Workers: o.Workers, Progress: o.Progress, NewActor: keepActors(f), Window: env.window()}
	}
	var results [2][]*load.Result
	var cpu [2]cpuSum
	for s := 0; s < slices && ctx.Err() == nil; s++ {
		// A B, then B A: neither side always follows the other (an AOF
		// rewrite started in one slice may run on into the next).
		for _, i := range [2][2]int{{0, 1}, {1, 0}}[s%2] {
			env := envs[i]
			res, err := load.Run(ctx, env.Addr, plans[i])
			if err != nil {
				return [2]*Outcome{}, fmt.Errorf("%s: %w", labels[i], err)
			}
			results[i] = append(results[i], res)
			cpu[i].add(env.CPU.Shares(), res.Elapsed)
		}
	}
	var outs [2]*Outcome
	for i, env := range envs {
		out := &Outcome{Result: load.Merge(results[i]...), LatencyOp: "pair", CPU: cpu[i].shares()}
		out.Notes = append(out.Notes, fmt.Sprintf("measured in %d slices of %s, in turns with %s", len(results[i]),
			plans[i].Duration, labels[1-i]))
		outs[i] = finish(ctx, env, labels[i], out, parts[i])
	}
	return outs, nil
}

// cpuSum adds up a meter's windows, each weighted by its length.
type cpuSum struct {
	names []string
	cores map[string]float64 // cores x seconds
	secs  float64
}

func (c *cpuSum) add(shares []cpuuse.Share, elapsed time.Duration) {
	if len(shares) == 0 {
		return
	}
	if c.cores == nil {
		c.cores = map[string]float64{}
	}
	for _, s := range shares {
		if _, ok := c.cores[s.Process]; !ok {
			c.names = append(c.names, s.Process)
		}
		c.cores[s.Process] += s.Cores * elapsed.Seconds()
	}
	c.secs += elapsed.Seconds()
}

// shares is the average over every window, nil when none was measured.
func (c *cpuSum) shares() []cpuuse.Share {
	if c.secs <= 0 {
		return nil
	}
	out := make([]cpuuse.Share, 0, len(c.names))
	for _, n := range c.names {
		out = append(out, cpuuse.Share{Process: n, Cores: c.cores[n] / c.secs})
	}
	return out
}

// keepActors gives each worker one actor for every slice: its partner's
// Idempotency-Keys go on counting, so a later slice never reuses a key
// (which would replay an earlier order instead of making a new one).
func keepActors(p part) func(w *load.Worker) load.Actor {
	made := map[int]load.Actor{}
	return func(w *load.Worker) load.Actor {
		a, ok := made[w.ID]
		if !ok {
			a = p.actor(w)
			made[w.ID] = a
		}
		return a
	}
}
