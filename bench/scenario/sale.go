package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/inventory/money"
)

// tally is what one actor saw of the orders it tried to buy.
type tally struct {
	paid            int64
	tickets         int64
	soldOutConfirms int64
	soldOutReserves int64
	refused         int64 // confirms refused otherwise (a definite no)
	charged         money.Cents
	// unsure are confirms without a definite answer (no answer, 5xx): the
	// check asks their status, as a partner must after a timeout.
	unsure []unsure
	// lastPaid is when the last paid confirm was answered.
	lastPaid time.Time
}

type unsure struct {
	order   string
	amount  money.Cents
	tickets int64
	seats   []string
}

func (t *tally) merge(o *tally) {
	t.paid += o.paid
	t.tickets += o.tickets
	t.soldOutConfirms += o.soldOutConfirms
	t.soldOutReserves += o.soldOutReserves
	t.refused += o.refused
	t.charged += o.charged
	t.unsure = append(t.unsure, o.unsure...)
	if o.lastPaid.After(t.lastPaid) {
		t.lastPaid = o.lastPaid
	}
}

// resolve asks the status of every unsure confirm; paid ones join the
// tally (and their seats, through onPaid). It returns how many stay unknown.
func (t *tally) resolve(ctx context.Context, env *Env, key api.Key, onPaid func(u unsure)) int64 {
	var unknown int64
	for _, u := range t.unsure {
		st, err := env.API.Status(ctx, key, u.order)
		switch {
		case err != nil:
			unknown++
		case st.Status == "paid":
			t.paid++
			t.tickets += u.tickets
			t.charged += u.amount
			if onPaid != nil {
				onPaid(u)
			}
		}
	}
	t.unsure = nil
	return unknown
}

// checkRecord waits for the record to hold want and checks it; it also
// reports how long the record took to catch up after the run.
func checkRecord(ctx context.Context, env *Env, label, eventID string, want integrity.Record) (integrity.Check, []Figure) {
	if env.Record == nil {
		return integrity.CheckRecord(label, want, nil, env.RecordWhy), nil
	}
	start := time.Now()
	got, err := integrity.WaitRecord(ctx, func(ctx context.Context) (integrity.Record, error) {
		return env.Record.Record(ctx, eventID)
	}, want, env.DrainTimeout)
	if err != nil {
		return integrity.Check{Name: label + ": record holds exactly the paid orders and tickets", Status: integrity.Fail,
			Detail: "cannot read the record: " + err.Error()}, nil
	}
	waited := time.Since(start)
	why := ""
	if got.Orders != want.Orders || got.Tickets != want.Tickets {
		why = fmt.Sprintf("still different after waiting %s for the sync worker", env.DrainTimeout)
	}
	return integrity.CheckRecord(label, want, &got, why),
		[]Figure{{Name: label + ": record caught up after the run", Value: waited.Seconds(), Unit: "s"}}
}

// checkSale checks a GA sale of one ticket type whose capacity is also the
// event's: the buyers' tally against ticketd's remaining counts and the record.
func checkSale(ctx context.Context, env *Env, label string, key api.Key, eventID, ticketID string, capacity int64, t *tally) (integrity.Checks, []Figure) {
	unknown := t.resolve(ctx, env, key, nil)
	s := integrity.Sale{
		Label: label, Caps: map[string]int64{"ticket " + ticketID: capacity, "event": capacity}, PerOrder: 1,
		Paid: t.paid, SoldOutConfirms: t.soldOutConfirms, SoldOutReserves: t.soldOutReserves, Refused: t.refused, Unresolved: unknown,
	}
	rem, err := env.API.Remaining(ctx, key, eventID)
	if err != nil {
		return integrity.Checks{{Name: label + ": read what ticketd sold", Status: integrity.Fail, Detail: err.Error()}}, nil
	}
	s.Sold = map[string]int64{}
	if r, ok := rem.Tickets[ticketID]; ok {
		s.Sold["ticket "+ticketID] = capacity - r
	}
	if rem.Event != nil {
		s.Sold["event"] = capacity - *rem.Event
	}
	checks := integrity.CheckSale(s)
	c, figs := checkRecord(ctx, env, label, eventID, integrity.Record{Orders: t.paid, Tickets: t.tickets, Revenue: t.charged})
	return append(checks, c), figs
}
