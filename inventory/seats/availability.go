package seats

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// Availability is the seat picker's view of an event. It is read without a
// lock across keys: a display, not a promise (Hold decides).
type Availability struct {
	// Held are seats with a live hold: held by a token or handed to a
	// pending order or a registration awaiting payment, in map order.
	Held []string `json:"held"`
	// Booked are sold seats, by row and number.
	Booked []string `json:"booked"`
	// Areas is the remaining capacity of each GA area (never negative).
	Areas map[string]int64 `json:"areas"`
	// Tables tells, per table, whether it can still be booked.
	Tables map[string]bool `json:"tables"`
}

// seatIndex is each seat's place in map order, built once per compiled
// event and key space.
type seatIndex struct {
	ev  *catalog.CompiledEvent
	pos map[string]int
}

// indexes caches seatIndex by key prefix and event id; an entry is rebuilt
// when the catalog gives the event a new CompiledEvent, so it holds one
// entry per event at most.
var indexes sync.Map

func (e *Engine) index(ev *catalog.CompiledEvent) *seatIndex {
	id := e.Space.Prefix + "\x00" + ev.ID
	if v, ok := indexes.Load(id); ok && v.(*seatIndex).ev == ev {
		return v.(*seatIndex)
	}
	si := &seatIndex{ev: ev, pos: map[string]int{}}
	for _, r := range ev.SeatMap.Rows {
		for n := 1; n <= r.Seats; n++ {
			si.pos[r.Label+"-"+strconv.Itoa(n)] = len(si.pos)
		}
	}
	indexes.Store(id, si)
	return si
}

// Availability reads which seats are held and booked, what remains of each
// GA area (caps field "a:<id>" minus sold) and which tables are free (caps
// "tb:<id>", 1, minus sold), in one pipelined round trip. An area or table
// whose cap is not projected yet counts with its catalog capacity.
func (e *Engine) Availability(ctx context.Context, ev *catalog.CompiledEvent) (Availability, error) {
	if !ev.Seated() {
		return Availability{}, ErrNotSeated
	}
	sm := ev.SeatMap
	var fields []string
	for _, a := range sm.GAAreas {
		fields = append(fields, capacity.AreaField(a.ID))
	}
	for _, t := range sm.Tables {
		fields = append(fields, capacity.TableField(t.ID))
	}

	b := e.Redis.B()
	cmds := make(rueidis.Commands, 0, 7)
	// TIME tells which hold entries expired (lua/lib/seatholds.lua), in
	// Redis' clock, as the scripts judge them.
	cmds = append(cmds, b.Time().Build(), b.Hgetall().Key(e.Space.SeatHolds(ev.ID)).Build(),
		b.Hgetall().Key(e.Space.OrderSeats(ev.ID)).Build(), b.Hkeys().Key(e.Space.RegSeats(ev.ID)).Build(),
		b.Hkeys().Key(e.Space.Booked(ev.ID)).Build())
	if len(fields) > 0 {
		cmds = append(cmds,
			b.Hmget().Key(e.Space.Caps(ev.ID)).Field(fields...).Build(),
			b.Hmget().Key(e.Space.Sold(ev.ID)).Field(fields...).Build())
	}
	res := e.Redis.DoMulti(ctx, cmds...)

	out := Availability{Held: []string{}, Areas: map[string]int64{}, Tables: map[string]bool{}}
	now, err := redisNow(res[0])
	if err != nil {
		return Availability{}, fmt.Errorf("seats: availability: %w", err)
	}
	held, err := heldSeats(res[1:4], now)
	if err != nil {
		return Availability{}, fmt.Errorf("seats: availability: seats: %w", err)
	}
	pos := e.index(ev).pos
	for l := range held {
		if _, onMap := pos[l]; onMap {
			out.Held = append(out.Held, l)
		}
	}
	slices.SortFunc(out.Held, func(a, b string) int { return cmp.Compare(pos[a], pos[b]) })
	booked, err := res[4].AsStrSlice()
	if err != nil {
		return Availability{}, fmt.Errorf("seats: availability: booked: %w", err)
	}
	sortLabels(booked)
	out.Booked = booked
	if len(fields) > 0 {
		caps, err := res[5].ToArray()
		if err != nil {
			return Availability{}, fmt.Errorf("seats: availability: caps: %w", err)
		}
		sold, err := res[6].ToArray()
		if err != nil {
			return Availability{}, fmt.Errorf("seats: availability: sold: %w", err)
		}
		remaining := func(i int, def int64) int64 {
			c, err := caps[i].AsInt64()
			if err != nil {
				c = def
			}
			s, _ := sold[i].AsInt64()
			return capacity.Left(c, s)
		}
		for i, a := range sm.GAAreas {
			out.Areas[a.ID] = remaining(i, a.Capacity)
		}
		for j, t := range sm.Tables {
			out.Tables[t.ID] = remaining(len(sm.GAAreas)+j, 1) > 0
		}
	}
	return out, nil
}

// Config is the seat map as the seat picker draws it.
type Config struct {
	EventID    string           `json:"eventId"`
	Categories []ConfigCategory `json:"categories"`
	Rows       []catalog.Row    `json:"rows"`
	GAAreas    []catalog.GAArea `json:"gaAreas"`
	Tables     []ConfigTable    `json:"tables"`
	// SingleSeatRule is the map's rule: "off", "lenient" or "strict".
	SingleSeatRule string `json:"singleSeatRule"`
}

// ConfigCategory is a price category; Price is null when its seats cannot
// be sold.
type ConfigCategory struct {
	ID    string       `json:"id"`
	Name  string       `json:"name"`
	Price *money.Cents `json:"price"`
}

// ConfigTable is a table, booked whole; Price is its category's price times
// its seats, null when the category has no price.
type ConfigTable struct {
	ID       string       `json:"id"`
	Seats    int          `json:"seats"`
	Category string       `json:"category"`
	Price    *money.Cents `json:"price"`
}

// Config returns the event's seat map, ready for JSON. An event without a
// seat map gives empty lists. Rows and areas are the catalog's own; a
// category differs only in writing a missing price as null.
func (e *Engine) Config(ev *catalog.CompiledEvent) Config {
	c := Config{EventID: ev.ID, Categories: []ConfigCategory{}, Rows: []catalog.Row{},
		GAAreas: []catalog.GAArea{}, Tables: []ConfigTable{}, SingleSeatRule: ev.SeatMap.Rule()}
	sm := ev.SeatMap
	if sm == nil {
		return c
	}
	for _, k := range sm.Categories {
		c.Categories = append(c.Categories, ConfigCategory{ID: k.ID, Name: k.Name, Price: k.Price})
	}
	c.Rows = append(c.Rows, sm.Rows...)
	c.GAAreas = append(c.GAAreas, sm.GAAreas...)
	for _, t := range sm.Tables {
		ct := ConfigTable{ID: t.ID, Seats: t.Seats, Category: t.Category}
		if k := ev.Categories[t.Category]; k != nil && k.Price != nil {
			p := *k.Price * money.Cents(t.Seats)
			ct.Price = &p
		}
		c.Tables = append(c.Tables, ct)
	}
	return c
}
