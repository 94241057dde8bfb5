package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/ticketd/ticketd/inventory/room"
)

type scraped = map[string]*dto.MetricFamily

// fakeRooms is the rooms a test scrapes: their stats, or an error.
type fakeRooms struct {
	mu     sync.Mutex
	events []string
	stats  map[string]room.Stats
	fail   error
}

func (f *fakeRooms) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

func (f *fakeRooms) read(_ context.Context, ev string) (room.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return room.Stats{}, f.fail
	}
	return f.stats[ev], nil
}

func (f *fakeRooms) set(fn func(f *fakeRooms)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// Each room is read at the scrape, labelled by its event; a failed read
// serves the event's last figures (the scrape still answers 200) and is
// counted; an event never read is left out; an event that lost its room
// leaves.
func TestRoomsAreReadAtEachScrape(t *testing.T) {
	m := New()
	m.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	h := testRouter(m)
	f := &fakeRooms{events: []string{"ev_a", "ev_b"}, stats: map[string]room.Stats{
		"ev_a": {Arrivals: 7, Waiting: 3, WaitingUnits: 5, Reserved: 4, LivePasses: 2, Admitted: 4, Used: 1, Lapsed: 1},
		"ev_b": {Arrivals: 1, Waiting: 1, WaitingUnits: 1},
	}}
	m.WatchRooms(f.list, f.read)

	value := func(t *testing.T, mfsName string, ev string, mfs scraped) (float64, bool) {
		t.Helper()
		s := find(mfs, mfsName, map[string]string{"event": ev})
		if s == nil {
			return 0, false
		}
		if s.GetCounter() != nil {
			return s.GetCounter().GetValue(), true
		}
		return s.GetGauge().GetValue(), true
	}
	want := func(t *testing.T, mfs scraped, ev string, figures map[string]float64) {
		t.Helper()
		for name, w := range figures {
			if v, ok := value(t, name, ev, mfs); !ok || v != w {
				t.Errorf("%s{event=%q} = %v (present %v), want %v", name, ev, v, ok, w)
			}
		}
	}
	mfs := scrape(t, h)
	want(t, mfs, "ev_a", map[string]float64{
		"ticketd_room_waiting_places": 3, "ticketd_room_waiting_units": 5, "ticketd_room_reserved_units": 4,
		"ticketd_room_live_passes": 2, "ticketd_room_arrivals_total": 7, "ticketd_room_admitted_total": 4,
		"ticketd_room_passes_used_total": 1, "ticketd_room_passes_lapsed_total": 1, "ticketd_room_pass_conversion": 0.5,
	})
	want(t, mfs, "ev_b", map[string]float64{"ticketd_room_waiting_places": 1, "ticketd_room_admitted_total": 0})
	if _, ok := value(t, "ticketd_room_pass_conversion", "ev_b", mfs); ok {
		t.Error("ev_b has a conversion before any pass ended")
	}
	if mf := mfs["ticketd_room_admitted_total"]; mf == nil || mf.GetType().String() != "COUNTER" {
		t.Errorf("ticketd_room_admitted_total is not a counter: %v", mf)
	}

	// Redis fails: the last figures stay, the failures are counted, and a
	// room first seen now is left out.
	f.set(func(f *fakeRooms) {
		f.events = append(f.events, "ev_new")
		f.fail = errors.New("redis: connection refused")
	})
	mfs = scrape(t, h)
	want(t, mfs, "ev_a", map[string]float64{"ticketd_room_waiting_places": 3, "ticketd_room_admitted_total": 4})
	if _, ok := value(t, "ticketd_room_waiting_places", "ev_new", mfs); ok {
		t.Error("a room never read has figures")
	}
	if s := find(mfs, "ticketd_room_read_failures_total", nil); s == nil || s.GetCounter().GetValue() != 3 {
		t.Errorf("read failures %v, want 3 (one per room)", s)
	}

	// Redis is back, ev_b lost its room: it leaves.
	f.set(func(f *fakeRooms) {
		f.fail = nil
		f.events = []string{"ev_a", "ev_new"}
		f.stats["ev_a"] = room.Stats{Waiting: 1, Admitted: 6, Used: 3, Lapsed: 1}
	})
	mfs = scrape(t, h)
	want(t, mfs, "ev_a", map[string]float64{"ticketd_room_waiting_places": 1, "ticketd_room_admitted_total": 6,
		"ticketd_room_pass_conversion": 0.75})
	want(t, mfs, "ev_new", map[string]float64{"ticketd_room_waiting_places": 0})
	if _, ok := value(t, "ticketd_room_waiting_places", "ev_b", mfs); ok {
		t.Error("an event without a room is still shown")
	}
	f.set(func(f *fakeRooms) { f.fail = errors.New("down") })
	mfs = scrape(t, h)
	if _, ok := value(t, "ticketd_room_waiting_places", "ev_b", mfs); ok {
		t.Error("a room that left came back from the last figures")
	}
}

// Without rooms to watch (nil metrics, nil sources) nothing happens.
func TestWatchRoomsNil(t *testing.T) {
	var m *Metrics
	m.WatchRooms(func() []string { return nil }, nil)
	New().WatchRooms(nil, nil)
}
