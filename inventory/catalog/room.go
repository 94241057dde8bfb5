package catalog

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/keys"
)

// Room is an event's waiting room as the rest of the code uses it
// (CompiledEvent.Room), its defaults filled in. A multi-showing event has
// a line per showing (Showings): the event's Room holds the settings they
// share, and each showing's is a copy with its own ID and stock.
type Room struct {
	// ID is the room's id (keys.RoomID): the event's, or for a showing's
	// room "<event>@<showing>".
	ID string
	// Showing is the showing a showing's room sells ("" for an event's).
	Showing string
	// Showings are a multi-showing event's rooms, by showing id (nil
	// without showings); Lines lists them in the catalog's order.
	Showings     map[string]*Room
	lines        []*Room
	OpensAt      time.Time     // the queue opens
	SalesStartAt time.Time     // T0: admission starts
	PassTTL      time.Duration // how long an admitted buyer has to take a hold
	PerBuyer     int64         // tickets one identity may ask for in the queue
	// Fair: everyone who joined before T0 is shuffled at T0, later arrivals
	// queue in order of arrival (RoomModeFair); false: everyone in order of
	// arrival (RoomModeFIFO).
	Fair bool
	// Stock is the admissions the room sells: the event's (its capacity,
	// or the sum of its ticket types' when that is less or it has none)
	// less the channels' Allocations. The room admits against it and the
	// storefront's sold count (capacity.Storefront), which it caps.
	// A showing's room admits against the showing's capacity, which caps
	// it (capacity.ShowingField).
	Stock int64
	// Allocations are the admissions each partner channel sells outside
	// the room (channel id -> units), each capping its channel's share
	// (capacity.ChannelField).
	Allocations map[string]int64
	// spec is the stock as the room's scripts take it (Spec).
	spec string
	// Work is the proof of work a join must carry, nil when none.
	Work *RoomWork
	// Seated: the event has a seat map; a pass is burnt by the hold token
	// it makes (hold-token, best-available), not by register-guest.
	Seated bool
}

// RoomWork is a room's proof of work: the difficulty, in leading zero
// bits, from MinBits (no pressure) to MaxBits.
type RoomWork struct {
	MinBits, MaxBits int
}

// compileRoom is ev's CompiledEvent.Room, nil when it has no waiting room.
// The room is assumed valid (Validate).
func compileRoom(ev *Event) *Room {
	wr := ev.WaitingRoom
	if wr == nil {
		return nil
	}
	r := &Room{
		ID:       ev.ID,
		PassTTL:  DefaultRoomPassTTL * time.Second,
		PerBuyer: DefaultRoomPerBuyer,
		Fair:     wr.Mode != RoomModeFIFO,
		Seated:   ev.SeatMap != nil,
	}
	r.OpensAt, _ = time.Parse(time.RFC3339, wr.OpensAt)
	r.SalesStartAt, _ = time.Parse(time.RFC3339, wr.SalesStartAt)
	if wr.PassTTL != nil {
		r.PassTTL = time.Duration(*wr.PassTTL) * time.Second
	}
	if wr.PerBuyer != nil {
		r.PerBuyer = *wr.PerBuyer
	}
	if pw := wr.ProofOfWork; pw != nil {
		r.Work = &RoomWork{MinBits: DefaultRoomMinBits, MaxBits: DefaultRoomMaxBits}
		if pw.MinBits != nil {
			r.Work.MinBits = int(*pw.MinBits)
			r.Work.MaxBits = max(r.Work.MaxBits, r.Work.MinBits)
		}
		if pw.MaxBits != nil {
			r.Work.MaxBits = int(*pw.MaxBits)
		}
	}
	evStock := eventStock(ev)
	r.Stock = evStock
	for ch, n := range wr.Allocations {
		if r.Allocations == nil {
			r.Allocations = make(map[string]int64, len(wr.Allocations))
		}
		r.Allocations[ch] = n
		r.Stock -= n
	}
	spec := []string{strconv.FormatInt(r.Stock, 10), strconv.FormatInt(evStock, 10)}
	for _, ch := range slices.Sorted(maps.Keys(r.Allocations)) {
		spec = append(spec, capacity.ChannelField(ch), strconv.FormatInt(r.Allocations[ch], 10))
	}
	r.spec = strings.Join(spec, " ")
	r.lines = []*Room{r}
	if len(ev.Showings) > 0 {
		// a line per showing (Validate: each capped, together within the
		// event's stock, no partner allocation): each admits against its
		// showing's sold count and the event's
		r.Showings = make(map[string]*Room, len(ev.Showings))
		r.lines = make([]*Room, 0, len(ev.Showings))
		for _, sh := range ev.Showings {
			c := *r
			c.ID, c.Showing, c.Showings, c.lines = keys.RoomID(ev.ID, sh.ID), sh.ID, nil, nil
			c.Stock = *sh.Capacity
			c.spec = strconv.FormatInt(c.Stock, 10) + "/" + capacity.ShowingField(sh.ID) + " " + strconv.FormatInt(evStock, 10)
			c.lines = []*Room{&c}
			r.Showings[sh.ID] = &c
			r.lines = append(r.lines, &c)
		}
	}
	return r
}

// Lines are the rooms whose lines move (room.Service.Run): the event's
// room, or a multi-showing event's showings' rooms, in the catalog's
// order.
func (r *Room) Lines() []*Room {
	if r.lines == nil {
		return []*Room{r} // a Room not compiled from an event (tests)
	}
	return r.lines
}

// Line is the room a buyer of showingID joins: the event's own for ""
// on an event without showings, a showing's room on one with them; false
// for a showing the event does not have, or none on an event with
// showings.
func (r *Room) Line(showingID string) (*Room, bool) {
	if r.Showings == nil {
		return r, showingID == ""
	}
	sr, ok := r.Showings[showingID]
	return sr, ok
}

// Spec is the stock as the room's scripts take it (lib/room.lua
// room_free): "<Stock> <the event's stock> [<channel field> <its
// allocation>]...", the channels in order (a showing's room's first word
// is "<Stock>/sh:<showing>", the field its sales count in); Stock alone
// for a Room not compiled from an event (tests), which counts the
// storefront's sales only.
func (r *Room) Spec() string {
	if r.spec == "" {
		return strconv.FormatInt(r.Stock, 10)
	}
	return r.spec
}

// eventStock is the admissions an event sells: its capacity, or the sum
// of its ticket types' and of its seat rows' priced seats when that is
// less or it has none (a seated event with a room sells its rows alone,
// Validate).
func eventStock(ev *Event) int64 {
	var n int64
	if sm := ev.SeatMap; sm != nil {
		priced := map[string]bool{}
		for _, c := range sm.Categories {
			priced[c.ID] = c.Price != nil
		}
		for _, r := range sm.Rows {
			if priced[r.Category] {
				n += int64(r.Seats)
			}
		}
	}
	for _, t := range ev.Tickets {
		n += t.Capacity
	}
	if ev.Capacity != nil && *ev.Capacity < n {
		n = *ev.Capacity
	}
	return n
}

// Mode is the room's mode as the catalog spells it: RoomModeFair or
// RoomModeFIFO.
func (r *Room) Mode() string {
	if r.Fair {
		return RoomModeFair
	}
	return RoomModeFIFO
}
