package scenario

import (
	"time"

	"github.com/ticketd/ticketd/bench/load"
)

// Sellout is the flash flow on 10,000 tickets under ten times that demand:
// 100,000 buyers arriving at 20,000 a second (open loop). It must sell out
// exactly, and it reports how long the sell-out took and how fast the
// sold-out answers after it came.
var Sellout = &single{name: "sellout", unit: "pairs", latencyOp: "pair",
	defaults: Options{Rate: 20000, Arrivals: 100_000, Workers: 1024, Capacity: 10_000},
	newPart:  func(o Options) part { return &sellout{flash{capacity: o.Capacity}} }}

// Names of the sell-out figures.
const (
	FigSold         = "tickets sold"
	FigCapacity     = "capacity"
	FigSelloutTime  = "sell-out time (first arrival to last paid confirm)"
	FigAfterRate    = "sold-out answers after sell-out, per second"
	FigAfterAnswers = "sold-out answers"
	// FigSaleRate is the run's headline rate: pairs paid per second over
	// the sale (first arrival to last paid confirm), not over the whole
	// run, whose tail only answers sold out.
	FigSaleRate = "pairs/s over the sale (tickets sold / sell-out time)"
)

type sellout struct{ flash }

func (s *sellout) figures(res *load.Result) []Figure {
	var t tally
	for _, a := range s.actors.all() {
		t.merge(&a.t)
	}
	figs := []Figure{
		{Name: FigSold, Value: float64(t.tickets)},
		{Name: FigCapacity, Value: float64(s.capacity)},
		{Name: FigAfterAnswers, Value: float64(t.soldOutReserves + t.soldOutConfirms)},
	}
	if t.tickets < s.capacity || t.lastPaid.IsZero() {
		return figs // not sold out: no sell-out time to report
	}
	sellout := t.lastPaid.Sub(res.Started)
	figs = append(figs, Figure{Name: FigSelloutTime, Value: sellout.Seconds(), Unit: "s"})
	if sellout > 0 {
		figs = append(figs, Figure{Name: FigSaleRate, Value: float64(t.tickets) / sellout.Seconds(), Unit: "pairs/s"})
	}
	if after := res.Elapsed - sellout; after > 100*time.Millisecond {
		figs = append(figs, Figure{Name: FigAfterRate, Value: float64(t.soldOutReserves+t.soldOutConfirms) / after.Seconds()})
	}
	return figs
}
