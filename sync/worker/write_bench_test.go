package worker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// BenchmarkWritePaidOrders is the Postgres side of a flash sale: batches of
// 256 paid orders (one line, one ticket, a buyer to mail) committed as the
// worker commits a round, on one connection. pg-us/order is the CPU that
// connection's Postgres backend spent per order (/proc, 10 ms ticks: run
// it for a few seconds, -benchtime 20000x or more).
//
//	go test -run '^$' -bench WritePaidOrders -benchtime 40000x ./sync/worker
func BenchmarkWritePaidOrders(b *testing.B) {
	const batch = 256
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	w := &Worker{Pool: pool}
	batches := make([][]paid, 0, b.N/batch+1)
	for i := 0; i < b.N; i += batch {
		good := make([]paid, 0, batch)
		for j := i; j < i+batch && j < b.N; j++ {
			rec := record("ev_bench", 1)
			rec.PaidAtMs = time.Now().UnixMilli()
			good = append(good, paid{e: entry{id: strconv.Itoa(j) + "-0"}, rec: rec})
		}
		batches = append(batches, good)
	}
	meter := cpuuse.New(cpuuse.Process("postgres backend", pid))
	b.ResetTimer()
	start := time.Now()
	meter.Begin()
	for _, good := range batches {
		if err := w.commit(ctx, good, nil, 0); err != nil {
			b.Fatal(err)
		}
	}
	meter.End()
	elapsed := time.Since(start)
	b.StopTimer()
	if sh := meter.Shares(); len(sh) > 0 {
		b.ReportMetric(sh[0].Cores*elapsed.Seconds()*1e6/float64(b.N), "pg-us/order")
	}
}

// BenchmarkRowOfPaidEntry is the sync worker's own CPU per paid order
// before Postgres: a stream entry, with the record and tickets reserve
// stored (orders.Record.Encode), decoded and added to a batch's rows.
//
//	go test -run '^$' -bench RowOfPaidEntry -benchmem ./sync/worker
func BenchmarkRowOfPaidEntry(b *testing.B) {
	rec := record("ev_bench", 1)
	rec.Tickets[0].Kind = orders.LineTicket
	js, tix, err := rec.Encode()
	if err != nil {
		b.Fatal(err)
	}
	fields := map[string]string{orders.StreamOrderID: rec.OrderID, orders.StreamRecord: string(js),
		orders.StreamTickets: string(tix), orders.StreamRef: "ref", orders.StreamPaidAt: "1700000000000"}
	b.ReportAllocs()
	var r rows
	for i := 0; b.Loop(); i++ {
		if i%256 == 0 {
			r = rows{}
		}
		got, err := orders.DecodePaid(fields)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.addOrder(paid{e: entry{id: "1-0"}, rec: got}); err != nil {
			b.Fatal(err)
		}
	}
}
