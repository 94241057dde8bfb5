package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/room"
)

// roomReadTimeout bounds one scrape's reads of every room: a Redis that
// hangs costs a scrape this long at most, never the scrape itself.
const roomReadTimeout = time.Second

// rooms exports each waiting room (issue 20, Operators) from room.Stats,
// read at each scrape: one round trip per event with a room. A read that
// fails leaves the event's last reading served, as the backlog reader
// leaves its gauges, and counts in ticketd_room_read_failures_total; an
// event never read is left out until a read succeeds.
type rooms struct {
	events func() []string
	stats  func(context.Context, string) (room.Stats, error)
	logger func() *slog.Logger

	waiting, waitingUnits, reserved, livePasses *prometheus.Desc
	arrivals, admitted, used, lapsed            *prometheus.Desc
	conversion                                  *prometheus.Desc
	failures                                    prometheus.Counter

	mu   sync.Mutex
	last map[string]room.Stats
}

// WatchRooms exports every waiting room events lists by room id (each
// event's, or each showing's of a multi-showing event: keys.RoomID), each
// read with stats at each scrape, labelled by event and showing ("" for
// an event's room):
//
//   - ticketd_room_waiting_places, ticketd_room_waiting_units: the line;
//   - ticketd_room_reserved_units, ticketd_room_live_passes: what live
//     passes hold;
//   - ticketd_room_arrivals_total, ticketd_room_admitted_total (the
//     frontier), ticketd_room_passes_used_total,
//     ticketd_room_passes_lapsed_total: totals kept in Redis;
//   - ticketd_room_pass_conversion: used / (used + lapsed), once a pass
//     ended;
//   - ticketd_room_read_failures_total: reads that failed (the event's
//     last reading was served instead).
//
// Each is labelled by event id only.
func (m *Metrics) WatchRooms(events func() []string, stats func(context.Context, string) (room.Stats, error)) {
	if m == nil || events == nil || stats == nil {
		return
	}
	ev := []string{"event", "showing"}
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, ev, nil) }
	r := &rooms{
		events: events, stats: stats,
		logger: func() *slog.Logger {
			if m.logger != nil {
				return m.logger
			}
			return slog.Default()
		},
		waiting:      d("ticketd_room_waiting_places", "Places waiting in the event's waiting room line."),
		waitingUnits: d("ticketd_room_waiting_units", "Tickets the places waiting in the event's waiting room line ask for."),
		reserved:     d("ticketd_room_reserved_units", "Tickets held for the event's live (admitted, unused, unexpired) waiting room passes."),
		livePasses:   d("ticketd_room_live_passes", "The event's waiting room passes given and neither used nor lapsed."),
		arrivals:     d("ticketd_room_arrivals_total", "Joins of the event's waiting room that made or renewed a place."),
		admitted: d("ticketd_room_admitted_total",
			"Passes the event's waiting room gave (the admission frontier: places admitted so far)."),
		used: d("ticketd_room_passes_used_total", "The event's waiting room passes that made a registration."),
		lapsed: d("ticketd_room_passes_lapsed_total",
			"The event's waiting room passes that expired unused (their tickets went back to the line); a pass its holder gave back by leaving counts in neither this nor used."),
		conversion: d("ticketd_room_pass_conversion",
			"Share of the event's ended waiting room passes that made a registration: used / (used + lapsed) since the room opened; absent until a pass ended. Over a window: increase(ticketd_room_passes_used_total) / (increase(ticketd_room_passes_used_total) + increase(ticketd_room_passes_lapsed_total))."),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketd_room_read_failures_total",
			Help: "Scrape-time reads of a waiting room that failed (Redis trouble); the event's last reading was served instead, or none before its first.",
		}),
		last: map[string]room.Stats{},
	}
	m.reg.MustRegister(r)
}

func (r *rooms) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{r.waiting, r.waitingUnits, r.reserved, r.livePasses,
		r.arrivals, r.admitted, r.used, r.lapsed, r.conversion, r.failures.Desc()} {
		ch <- d
	}
}

func (r *rooms) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), roomReadTimeout)
	defer cancel()
	evs := r.events()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(evs))
	for _, ev := range evs {
		seen[ev] = true
		st, err := r.stats(ctx, ev)
		if err != nil {
			r.failures.Inc()
			r.logger().Warn("metrics: waiting room read failed; serving its last reading", "event", ev, "err", err)
			var ok bool
			if st, ok = r.last[ev]; !ok {
				continue
			}
		} else {
			r.last[ev] = st
		}
		r.emit(ch, ev, st)
	}
	// An event that lost its room, or left the catalog, leaves.
	for ev := range r.last {
		if !seen[ev] {
			delete(r.last, ev)
		}
	}
	// Collected here, after the reads, so that a scrape counts its own
	// failures (the registry runs collectors side by side).
	ch <- r.failures
}

func (r *rooms) emit(ch chan<- prometheus.Metric, id string, st room.Stats) {
	ev, sh := keys.SplitRoom(id)
	g := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), ev, sh)
	}
	c := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), ev, sh)
	}
	g(r.waiting, st.Waiting)
	g(r.waitingUnits, st.WaitingUnits)
	g(r.reserved, st.Reserved)
	g(r.livePasses, st.LivePasses)
	c(r.arrivals, st.Arrivals)
	c(r.admitted, st.Admitted)
	c(r.used, st.Used)
	c(r.lapsed, st.Lapsed)
	if c, ok := st.Conversion(); ok {
		ch <- prometheus.MustNewConstMetric(r.conversion, prometheus.GaugeValue, c, ev, sh)
	}
}
