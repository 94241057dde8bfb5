package integrity

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/sync/pgtest"
)

func caps(n int64) map[string]int64 { return map[string]int64{"ticket tk": n, "event": n} }
func sold(n int64) map[string]int64 { return map[string]int64{"ticket tk": n, "event": n} }

func TestCheckSalePassesAnExactSellOut(t *testing.T) {
	cs := CheckSale(Sale{Label: "flash", Caps: caps(100), PerOrder: 1, Paid: 100, SoldOutConfirms: 30, SoldOutReserves: 870, Sold: sold(100)})
	if !cs.OK() {
		t.Fatalf("an exact sell-out failed: %+v", cs)
	}
	cs = CheckSale(Sale{Label: "flash", Caps: caps(1000), PerOrder: 1, Paid: 400, Sold: sold(400)})
	if !cs.OK() {
		t.Fatalf("a sale below capacity failed: %+v", cs)
	}
}

func TestCheckSaleFailsWhenNumbersDoNotAddUp(t *testing.T) {
	for name, s := range map[string]Sale{
		"oversell: more confirmed than capacity":     {Caps: caps(100), Paid: 101, Sold: sold(101)},
		"ticketd sold more than buyers were told":    {Caps: caps(100), Paid: 99, SoldOutConfirms: 5, Sold: sold(100)},
		"undersell: sold out answers below capacity": {Caps: caps(100), Paid: 90, SoldOutConfirms: 10, Sold: sold(90)},
		"sold out at reserve below capacity":         {Caps: caps(100), Paid: 90, SoldOutReserves: 1, Sold: sold(90)},
		"a counter missing from ticketd's answer":    {Caps: caps(100), Paid: 10, Sold: map[string]int64{"event": 10}},
		"unresolved confirms":                        {Caps: caps(100), Paid: 10, Unresolved: 1, Sold: sold(10)},
		"a confirm refused while tickets remained":   {Caps: caps(100), Paid: 10, Refused: 1, Sold: sold(10)},
		"one counter oversold":                       {Caps: caps(100), Paid: 100, Sold: map[string]int64{"ticket tk": 100, "event": 101}},
	} {
		s.Label, s.PerOrder = "flash", 1
		if CheckSale(s).OK() {
			t.Errorf("%s: passed, want a failure", name)
		}
	}
}

func TestCheckRecord(t *testing.T) {
	want := Record{Orders: 10, Tickets: 10, Revenue: 2650}
	if c := CheckRecord("x", want, &Record{Orders: 10, Tickets: 10, Revenue: 2650}, ""); c.Status != Pass {
		t.Fatalf("equal record: %+v", c)
	}
	if c := CheckRecord("x", want, &Record{Orders: 9, Tickets: 9, Revenue: 2385}, ""); c.Status != Fail {
		t.Fatalf("Postgres short of Redis passed: %+v", c)
	}
	if c := CheckRecord("x", want, &Record{Orders: 10, Tickets: 10, Revenue: 2000}, ""); c.Status != Fail {
		t.Fatalf("wrong revenue passed: %+v", c)
	}
	c := CheckRecord("x", want, nil, "no -database-url")
	if c.Status != NotChecked || (Checks{c}).OK() != true {
		t.Fatalf("a record not read must be 'not checked' and not fail: %+v", c)
	}
}

func TestCheckSeatsFailsASeatSoldTwice(t *testing.T) {
	good := Seats{Label: "seats", Paid: map[string]int{"A-1": 1, "A-2": 1}, Booked: []string{"A-1", "A-2"}, RecordSeats: []string{"A-1", "A-2"}}
	if cs := CheckSeats(good); !cs.OK() {
		t.Fatalf("a clean seat sale failed: %+v", cs)
	}
	for name, s := range map[string]Seats{
		"two buyers told they have A-1": {Paid: map[string]int{"A-1": 2}, Booked: []string{"A-1"}, RecordSeats: []string{"A-1"}},
		"A-1 in two tickets":            {Paid: map[string]int{"A-1": 1}, Booked: []string{"A-1"}, RecordSeats: []string{"A-1", "A-1"}},
		"booked but never confirmed":    {Paid: map[string]int{"A-1": 1}, Booked: []string{"A-1", "A-2"}, RecordSeats: []string{"A-1", "A-2"}},
		"confirmed but not booked":      {Paid: map[string]int{"A-1": 1, "A-2": 1}, Booked: []string{"A-1"}, RecordSeats: []string{"A-1"}},
		"record short of booked":        {Paid: map[string]int{"A-1": 1, "A-2": 1}, Booked: []string{"A-1", "A-2"}, RecordSeats: []string{"A-1"}},
	} {
		s.Label = "seats"
		if CheckSeats(s).OK() {
			t.Errorf("%s: passed, want a failure", name)
		}
	}
	nr := CheckSeats(Seats{Label: "seats", Paid: map[string]int{"A-1": 1}, Booked: []string{"A-1"}, RecordWhy: "no database"})
	if last := nr[len(nr)-1]; last.Status != NotChecked {
		t.Fatalf("record not read: %+v", last)
	}
}

// TestPostgresRecordCountsWhatTheWorkerWrote reads the record from a real
// ticketd schema and waits for rows that arrive late, as the sync worker's do.
func TestPostgresRecordCountsWhatTheWorkerWrote(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	insert := func(id string, seat string) error {
		_, err := pool.Exec(ctx, `INSERT INTO orders (id, event_id, tenant_id, channel_id, source, status, buyer_name, buyer_email, currency,
			subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents,
			created_at, paid_at, stream_id) VALUES ($1, 'ev', 't', 'ch', 'channel', 'paid', 'A', 'a@example.com', 'USD', 1000, 0, 0, 150, 0, 0, 1150, now(), now(), '1-0')`, id)
		if err != nil {
			return err
		}
		_, err = pool.Exec(ctx, `INSERT INTO tickets (id, order_id, event_id, kind, ref_id, label, issued_at) VALUES ($1 || '-1', $1, 'ev', 'seat', $2, $2, now())`,
			id, seat)
		return err
	}
	if err := insert("o01a", "A-1"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		if err := insert("o01b", "A-1"); err != nil { // the same seat twice
			t.Error(err)
		}
	}()
	pg := Postgres{Pool: pool}
	got, err := WaitRecord(ctx, func(ctx context.Context) (Record, error) { return pg.Record(ctx, "ev") },
		Record{Orders: 2, Tickets: 2}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got != (Record{Orders: 2, Tickets: 2, Revenue: 2300}) {
		t.Fatalf("record %+v, want 2 orders, 2 tickets, 23.00", got)
	}
	labels, err := pg.SeatLabels(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	cs := CheckSeats(Seats{Label: "ev", Paid: map[string]int{"A-1": 1}, Booked: []string{"A-1"}, RecordSeats: labels})
	if cs.OK() {
		t.Fatalf("a seat in two tickets passed: %+v", cs)
	}
}
