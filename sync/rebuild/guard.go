package rebuild

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/salesholds"
	"github.com/ticketd/ticketd/inventory/soldmarks"
)

// Guard is a node's side of "a loss ticketd cannot repair never
// oversells" (holds.go): its book of sold marks and its set of held
// events, wired into its state monitor, rebuilder and order service.
type Guard struct {
	Book *soldmarks.Book // flushes to Postgres; run it (Book.Run) while the node runs
	Held *salesholds.Set

	monitor *redisstate.Monitor // WireState's: told when a sale finds Redis went back
}

// NewGuard builds a node's guard; pool nil (no Postgres) keeps the marks
// in memory only. onHeld, when set, gets the held events whenever they
// change (metrics.SetSalesHeld).
func NewGuard(rc rueidis.Client, space keys.Space, pool *pgxpool.Pool, onHeld func(map[string]int64), log *slog.Logger) *Guard {
	g := &Guard{Book: &soldmarks.Book{Logger: log}, Held: &salesholds.Set{Redis: rc, Space: space, OnChange: onHeld, Logger: log}}
	if pool != nil {
		g.Book.Store = &Marks{Pool: pool, Prefix: space.Prefix}
	}
	return g
}

// WireState has mon read the held events on each check that finds the
// state current, before its OnCurrent and before the gate opens, and
// flush the marks at once when it finds the state lost, stale or being
// rebuilt (so a rebuild finds them in Postgres); rb (nil without Postgres)
// reads the node's own book. Call it before mon runs.
func (g *Guard) WireState(mon *redisstate.Monitor, rb *Rebuilder) {
	g.monitor = mon
	mon.OnCurrent = g.Held.OnCurrent(mon.OnCurrent)
	next := mon.OnChange
	mon.OnChange = func(v redisstate.View) {
		switch v.Status {
		case redisstate.Lost, redisstate.Stale, redisstate.Rebuilding:
			g.Book.FlushNow()
		}
		if next != nil {
			next(v)
		}
	}
	if rb != nil {
		rb.Book = g.Book
	}
}

// WireOrders has ord report paid units to the book and refuse held events;
// a sale that finds Redis went back stops sales for a rebuild (after
// WireState).
func (g *Guard) WireOrders(ord *orders.Service) {
	ord.Held = g.Held.Check
	if g.Book.Store == nil {
		// Without Postgres nothing is rebuilt: a Redis that lost its state
		// starts anew from zero, and the units this node saw before would
		// look handed out twice.
		return
	}
	ord.Marks = g.Book.Saw
	if g.monitor != nil {
		ord.RolledBack = g.monitor.RolledBack
	}
}
