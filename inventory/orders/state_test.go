package orders

import (
	"context"
	"errors"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// Without its partition's marker (Redis lost its state, or a rebuild runs)
// reserve and confirm change nothing and say sales are stopped: a reserve
// that held seats or a code, a GA reserve (the pipelined path) and a
// confirm of an order reserved before.
func TestScriptsRefuseWhileTheMarkerIsMissing(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "10")
	before, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 1}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(s.Space.Live(keys.Partition("ev"))).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, req("ev", map[string]int64{"t:a": 1})); !errors.Is(err, redisstate.ErrSalesStopped) {
		t.Fatalf("GA reserve without the marker: %v, want ErrSalesStopped", err)
	}
	coded := req("ev", map[string]int64{"t:a": 1})
	coded.DiscountCode, coded.DiscountMaxUses = "ONCE", 1
	if _, err := s.Reserve(ctx, coded); !errors.Is(err, redisstate.ErrSalesStopped) {
		t.Fatalf("reserve with a limited code without the marker: %v, want ErrSalesStopped", err)
	}
	if _, err := confirm(ctx, s, before.OrderID, "p1"); !errors.Is(err, redisstate.ErrSalesStopped) {
		t.Fatalf("confirm without the marker: %v, want ErrSalesStopped", err)
	}
	sold, _ := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Sold("ev")).Build()).AsIntMap()
	n, _ := s.Redis.Do(ctx, s.Redis.B().Xlen().Key(s.Space.Paid(keys.Partition("ev"))).Build()).AsInt64()
	if len(sold) != 0 || n != 0 {
		t.Fatalf("a refused confirm claimed %v and queued %d", sold, n)
	}
	// Only the order reserved before the loss exists; the refused ones
	// gave their Idempotency-Keys back.
	var orders, idem int
	for _, k := range redistest.Keys(t, s.Redis, s.Space) {
		switch {
		case strings.Contains(k, ":ord:"):
			orders++
		case strings.Contains(k, ":idem:"):
			idem++
		}
	}
	if orders != 1 || idem != 1 {
		t.Fatalf("%d orders and %d idempotency records after refused reserves, want 1 and 1", orders, idem)
	}
}

// An order id made for a channel is recognised as made for it, and for no
// other channel, key or event; a random one never is.
func TestMintedOrderIDs(t *testing.T) {
	s := &Service{IDKey: []byte("k1")}
	id := s.newOrderID("ev_1", "ch_a")
	if _, ok := keys.OrderEvent(id); !ok || len(id) != len(NewOrderID("ev_1")) {
		t.Fatalf("minted id %q is not an order id of the usual shape", id)
	}
	if !s.Minted(id, "ch_a") {
		t.Fatalf("%s not recognised for its channel", id)
	}
	if s.Minted(id, "ch_b") || (&Service{IDKey: []byte("k2")}).Minted(id, "ch_a") || (&Service{}).Minted(id, "ch_a") {
		t.Fatal("minted id recognised for another channel or key")
	}
	other := strings.Replace(id, ".ev_1", ".ev_2", 1)
	if s.Minted(other, "ch_a") {
		t.Fatal("minted id recognised for another event")
	}
	tampered := []byte(id)
	tampered[3] ^= 1
	if s.Minted(string(tampered), "ch_a") || s.Minted(NewOrderID("ev_1"), "ch_a") || s.Minted("junk", "ch_a") {
		t.Fatal("tampered, random or junk id recognised")
	}
}

// ClaimsOf counts what pricing's quote claims (see pricing's tests) from
// the lines alone, as a rebuild does from Postgres.
func TestClaimsOfLines(t *testing.T) {
	got := ClaimsOf([]Line{
		{Kind: LineTicket, RefID: "tk", Quantity: 2},
		{Kind: LineSeat, RefID: "A-1", Quantity: 1},
		{Kind: LineArea, RefID: "floor", Quantity: 3},
		{Kind: LineTable, RefID: "T1", Quantity: 4},
		{Kind: LineExtra, RefID: "park", Quantity: 5},
	}, "sh_1", SellerOf(SourceChannel, "ch_a"))
	want := map[string]int64{"t:tk": 2, "a:floor": 3, "tb:T1": 1, "x:park": 5, "ev": 10, "ch:ch_a": 10, "sh:sh_1": 10}
	if len(got) != len(want) {
		t.Fatalf("claims %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("claims %v, want %v", got, want)
		}
	}
}

// What confirm queues, with the record its order hash keeps, decodes back
// into the record reserve stored, with its idempotency record, tickets,
// reference and payment time.
func TestPaidEntryDecodesToTheRecord(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "10")
	r := req("ev", map[string]int64{"t:a": 1})
	r.Record.TenantID = "t1"
	res, err := s.Reserve(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := confirm(ctx, s, res.OrderID, "psp-9"); err != nil {
		t.Fatal(err)
	}
	es, err := s.Redis.Do(context.Background(), s.Redis.B().Xrange().Key(s.Space.Paid(keys.Partition("ev"))).Start("-").End("+").Build()).AsXRange()
	if err != nil || len(es) != 1 {
		t.Fatalf("stream: %v %v", es, err)
	}
	// The entry names the order; the record stays in the order hash,
	// written once, lean: no ids the order id carries, no zero amounts, no
	// empty ticket list.
	fields := es[0].FieldValues
	if _, ok := fields[StreamRecord]; ok {
		t.Fatalf("the entry copies the record: %v", fields)
	}
	if err := FillRecords(ctx, s.Redis, s.Space, []map[string]string{fields}); err != nil {
		t.Fatal(err)
	}
	for _, left := range []string{`"orderId"`, `"eventId"`, `"discount"`, `"vat"`, `"tickets"`} {
		if strings.Contains(fields[StreamRecord], left) {
			t.Errorf("the stored record holds %s: %s", left, fields[StreamRecord])
		}
	}
	okey, _ := s.Space.Order(res.OrderID)
	if ttl, _ := s.Redis.Do(ctx, s.Redis.B().Pttl().Key(okey).Build()).AsInt64(); ttl != -1 {
		t.Fatalf("a paid order waiting for the worker has a TTL (%d ms): its record could expire first", ttl)
	}
	rec, err := DecodePaid(fields)
	if err != nil {
		t.Fatal(err)
	}
	if rec.EventID != "ev" || rec.Discount != 0 {
		t.Fatalf("decoded event %q, discount %v", rec.EventID, rec.Discount)
	}
	if rec.OrderID != res.OrderID || rec.Caller != r.Caller || rec.IdempotencyKey != r.IdempotencyKey ||
		rec.Fingerprint != r.Fingerprint || rec.PartnerReference != "psp-9" || rec.PaidAtMs <= 0 ||
		len(rec.Tickets) != 1 || rec.Tickets[0].TicketID != res.OrderID+"-1" {
		b, _ := json.Marshal(rec)
		t.Fatalf("decoded %s", b)
	}
	// Every field but the record: its absence alone must refuse it.
	if _, err := DecodePaid(map[string]string{StreamOrderID: res.OrderID, StreamRef: "psp-9", StreamPaidAt: "1700000000000"}); err == nil {
		t.Fatal("an entry without a record decoded")
	}
}
