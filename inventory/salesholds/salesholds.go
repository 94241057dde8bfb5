// Package salesholds keeps a node's set of held events: events whose sales
// a rebuild held after a loss ticketd could not repair (paid units it
// acknowledged are known nowhere; docs/decisions.md, Durability and
// recovery). The rebuild writes them to Redis (keys.SalesHeld) before it
// publishes its generation; every node reads the hash on each state check
// that finds the state current, before its gate opens (Refresh from the
// monitor's OnCurrent), so no node sells a held event after a rebuild, and
// an event ticketctl releases or reconciles sells again on every node
// within a check.
package salesholds

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/keys"
)

// Set is the events held, as this node last read them.
type Set struct {
	Redis rueidis.Client
	Space keys.Space
	// OnChange, when set, gets the held events (event id -> lost units)
	// whenever they change (the metrics).
	OnChange func(map[string]int64)
	Logger   *slog.Logger

	held atomic.Pointer[map[string]int64] // nil until read, and after a failed read
}

// Event is a held event and the units lost.
type Event struct {
	EventID string `json:"eventId"`
	Lost    int64  `json:"lost"`
}

// Refresh reads the held events. A failure forgets them: until a read
// succeeds every sale answers 503 (Check), as one of them may be held.
func (s *Set) Refresh(ctx context.Context) error {
	m, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.SalesHeld()).Build()).AsIntMap()
	if err != nil {
		s.held.Store(nil)
		return fmt.Errorf("held events: %w", err)
	}
	prev := s.held.Swap(&m)
	if prev != nil && maps.Equal(*prev, m) {
		return nil
	}
	for _, ev := range slices.Sorted(maps.Keys(m)) {
		if prev == nil || (*prev)[ev] != m[ev] {
			s.logger().Error("sales of an event are held: paid units ticketd acknowledged were lost; run `ticketctl release` or `ticketctl reconcile`",
				"event", ev, "lost", m[ev])
		}
	}
	if prev != nil {
		for ev := range *prev {
			if _, ok := m[ev]; !ok {
				s.logger().Warn("sales of a held event resume", "event", ev)
			}
		}
	}
	if s.OnChange != nil {
		s.OnChange(m)
	}
	return nil
}

// OnCurrent wraps a redisstate.Monitor OnCurrent (next may be nil): the
// held events are read first, then next runs, whatever the read's result.
func (s *Set) OnCurrent(next func(ctx context.Context, catalogVersion int64) error) func(context.Context, int64) error {
	return func(ctx context.Context, v int64) error {
		err := s.Refresh(ctx)
		if next != nil {
			if nerr := next(ctx, v); nerr != nil {
				return nerr
			}
		}
		return err
	}
}

// unknown is Check's answer while the held events could not be read.
var unknown = apierr.Unavailable("sales are paused: this node could not read which events' sales are held; retry shortly")

// Check is orders.Service.Held: nil when eventID sells, else its 503.
func (s *Set) Check(eventID string) *apierr.Error {
	m := s.held.Load()
	if m == nil {
		return unknown
	}
	if n, ok := (*m)[eventID]; ok {
		return Held(eventID, n)
	}
	return nil
}

// Held is the 503 SALES_HELD of an event whose lost units are lost.
func Held(eventID string, lost int64) *apierr.Error {
	return apierr.Of("SALES_HELD", "sales of this event are held: %d paid tickets ticketd confirmed were lost with Redis' state; "+
		"they resume once an operator runs `ticketctl release %s` or `ticketctl reconcile %s`", lost, eventID, eventID).
		With("lost", lost)
}

// List is the held events by id (none while unread).
func (s *Set) List() []Event {
	m := s.held.Load()
	if m == nil {
		return nil
	}
	out := make([]Event, 0, len(*m))
	for _, ev := range slices.Sorted(maps.Keys(*m)) {
		out = append(out, Event{EventID: ev, Lost: (*m)[ev]})
	}
	return out
}

func (s *Set) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
