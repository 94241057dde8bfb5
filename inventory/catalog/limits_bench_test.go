package catalog_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/seats"
)

// The limits (limits.go) are chosen so the largest event they allow stays
// fast. These benchmarks show it; run them by hand:
//
//	go test -run '^$' -bench LargestEvent -benchtime 10x ./inventory/catalog/

// largestEvent is a seated event at every per-event limit: 100,000 seats
// (90 rows of 1,000 and 1,000 tables of 10), 100 categories, GA areas,
// ticket types and extras, 1,000 discount codes and channels.
func largestEvent() *catalog.Document {
	price := money.Cents(1000)
	ev := catalog.Event{ID: "ev_max", ShortID: "max", Slug: "max", Name: "Max", StartsAt: "2027-01-01T00:00:00Z",
		Status: catalog.StatusOnSale, Channels: []string{}, SeatMap: &catalog.SeatMap{}}
	for i := range catalog.MaxEventChannels {
		ev.Channels = append(ev.Channels, "ch"+strconv.Itoa(i))
	}
	for i := range catalog.MaxTickets {
		ev.Tickets = append(ev.Tickets, catalog.Ticket{ID: "tk" + strconv.Itoa(i), Name: "T", Price: 100, Capacity: 1000})
	}
	for i := range catalog.MaxExtras {
		ev.Extras = append(ev.Extras, catalog.Extra{ID: "x" + strconv.Itoa(i), Name: "X", Price: 100, Capacity: ptr[int64](10)})
	}
	for i := range catalog.MaxDiscountCodes {
		ev.DiscountCodes = append(ev.DiscountCodes, catalog.DiscountCode{Code: "CODE" + strconv.Itoa(i), Amount: ptr[money.Cents](100)})
	}
	sm := ev.SeatMap
	for i := range catalog.MaxCategories {
		sm.Categories = append(sm.Categories, catalog.Category{ID: "c" + strconv.Itoa(i), Name: "C", Price: &price})
	}
	for r := range 90 {
		sm.Rows = append(sm.Rows, catalog.Row{Label: "R" + strconv.Itoa(r), Seats: catalog.MaxRowSeats, Category: "c" + strconv.Itoa(r)})
	}
	for i := range catalog.MaxGAAreas {
		sm.GAAreas = append(sm.GAAreas, catalog.GAArea{ID: "a" + strconv.Itoa(i), Name: "A", Capacity: 100, Category: "c0"})
	}
	for i := range catalog.MaxTables {
		sm.Tables = append(sm.Tables, catalog.Table{ID: "T" + strconv.Itoa(i), Seats: 10, Category: "c1"})
	}
	return &catalog.Document{Tenants: []catalog.Tenant{{ID: "t", Name: "T", Events: []catalog.Event{ev}}}}
}

// Decode, validate and compile the largest event, as an apply and every
// node's catalog refresh do.
func BenchmarkLargestEventCompile(b *testing.B) {
	body, err := json.Marshal(largestEvent())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		doc, err := catalog.Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		if err := catalog.Validate(doc); err != nil {
			b.Fatal(err)
		}
		if _, err := catalog.Compile(1, doc.Tenants, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The seat availability of the largest event with every seat held (the
// longest answer it can give), read and encoded as the endpoint does.
func BenchmarkLargestEventAvailability(b *testing.B) {
	doc := largestEvent()
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ev := snap.Events["ev_max"]
	rc, space := redistest.New(b)
	ctx := context.Background()
	var cmds rueidis.Commands
	for _, r := range ev.SeatMap.Rows {
		for n := 1; n <= r.Seats; n++ {
			cmds = append(cmds, rc.B().Hset().Key(space.SeatHolds(ev.ID)).FieldValue().
				FieldValue(r.Label+"-"+strconv.Itoa(n), seats.HoldEntry("h:x", time.Now().Add(time.Hour))).Build())
		}
	}
	for _, r := range rc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			b.Fatal(err)
		}
	}
	e := &seats.Engine{Redis: rc, Space: space}
	for b.Loop() {
		av, err := e.Availability(ctx, ev)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(av); err != nil {
			b.Fatal(err)
		}
	}
}
