package scenario

import (
	"context"
	"time"
)

// Mixed runs flash pairs, catalog reads and the seat rush together against
// one deployment, as a sale day would: of every ten arrivals four are
// catalog reads, four reserve+confirm pairs and two seat buyers. Each part
// keeps its own integrity checks.
var Mixed = mixed{}

type mixed struct{}

func (mixed) Name() string { return "mixed" }

func (mixed) Run(ctx context.Context, env *Env, o Options) (*Outcome, error) {
	o = o.or(Options{Duration: 15 * time.Second, Workers: 64, Capacity: neverSoldOut})
	parts := []weighted{
		{p: &catalogReads{}, weight: 4},
		{p: &flash{capacity: o.Capacity}, weight: 4},
		{p: &seatRush{rows: 200, seats: 100}, weight: 2},
	}
	return runParts(ctx, env, "mixed", "arrivals", "pair", o, parts)
}
