package worker

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/fence"
	"github.com/ticketd/ticketd/sync/pgtest"
)

type bundle struct {
	rc    rueidis.Client
	space keys.Space
	pool  *pgxpool.Pool
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rc, space := redistest.New(t)
	b := &bundle{rc: rc, space: space, pool: pgtest.New(t)}
	if err := b.worker("setup").EnsureGroups(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// worker returns a worker that takes over the entries of stopped consumers
// only: those of a live one wait for ClaimIdle, an hour unless a test
// lowers it.
func (b *bundle) worker(consumer string) *Worker {
	return &Worker{Redis: b.rc, Space: b.space, Pool: b.pool, Consumer: consumer, ClaimIdle: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// record is a paid order as reserve builds it: ticket ids "<order>-<n>".
func record(eventID string, tickets int) orders.Record {
	id := orders.NewOrderID(eventID)
	rec := orders.Record{
		OrderID: id, EventID: eventID, TenantID: "t_1", ChannelID: "ch_1", Source: "channel",
		BuyerName: "Ada Lovelace", BuyerEmail: "ada@example.com", BuyerPhone: "+15550100",
		DiscountCode: "TEN", Currency: "USD",
		Subtotal: 5000, Discount: 500, Extras: 300, Fee: 150, VAT: 0, RefundProtection: 99,
		Total: 5000 - 500 + 300 + 150 + 99,
		Lines: []orders.Line{
			{Kind: orders.LineTicket, RefID: "tk_ga", Quantity: int64(tickets), UnitPrice: 2500, Amount: money.Cents(2500 * tickets)},
			{Kind: orders.LineExtra, RefID: "ex_parking", Quantity: 1, UnitPrice: 300, Amount: 300},
		},
		CreatedAtMs: 1_700_000_000_123,
	}
	for i := range tickets {
		rec.Tickets = append(rec.Tickets, orders.Ticket{TicketID: id + "-" + strconv.Itoa(i+1), Label: "GA"})
	}
	return rec
}

// confirm queues rec on its partition's paid stream with the record in the
// entry, as order_confirm.lua did before the record stayed in the order
// hash (entries queued then are still written; confirmHashed queues as it
// does now): XADD <paid> * order <id> rec <JSON> ref <ref> paidAt <ms>.
func (b *bundle) confirm(t *testing.T, rec orders.Record, ref string, paidAtMs int64) string {
	t.Helper()
	js, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b.xadd(t, rec.EventID, "order", rec.OrderID, "rec", string(js), "ref", ref, "paidAt", strconv.FormatInt(paidAtMs, 10))
}

// confirmEach queues n paid orders of tickets tickets each, the i-th on
// event prefix+(i mod events), and returns their records.
func (b *bundle) confirmEach(t *testing.T, n, events int, prefix string, tickets int) []orders.Record {
	t.Helper()
	recs := make([]orders.Record, 0, n)
	for i := range n {
		r := record(prefix+strconv.Itoa(i%events), tickets)
		recs = append(recs, r)
		b.confirm(t, r, "r", 1_700_000_000_000)
	}
	return recs
}

// confirmHashed queues rec as order_confirm.lua does now: the record and
// tickets in the order hash (as reserve stored them, without expiry), the
// entry naming the order.
func (b *bundle) confirmHashed(t *testing.T, rec orders.Record, ref string, paidAtMs int64) string {
	t.Helper()
	tix, err := json.Marshal(rec.Tickets)
	if err != nil {
		t.Fatal(err)
	}
	stored := rec
	stored.Tickets, stored.OrderID, stored.EventID = nil, "", ""
	js, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	okey, _ := b.space.Order(rec.OrderID)
	if err := b.rc.Do(context.Background(), b.rc.B().Hset().Key(okey).FieldValue().FieldValue("st", "paid").
		FieldValue("rec", string(js)).FieldValue("tix", string(tix)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	return b.xadd(t, rec.EventID, "order", rec.OrderID, "ref", ref, "paidAt", strconv.FormatInt(paidAtMs, 10))
}

func (b *bundle) xadd(t *testing.T, eventID string, fv ...string) string {
	t.Helper()
	cmd := b.rc.B().Xadd().Key(b.space.Paid(keys.Partition(eventID))).Id("*").FieldValue()
	for i := 0; i+1 < len(fv); i += 2 {
		cmd = cmd.FieldValue(fv[i], fv[i+1])
	}
	id, err := b.rc.Do(context.Background(), cmd.Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	return pgtest.Count(t, b.pool, sql, args...)
}

// streams returns the entries left in all paid streams and how many of
// them are pending (delivered, not acknowledged).
func (b *bundle) streams(t *testing.T) (length, pending int64) {
	t.Helper()
	ctx := context.Background()
	cmds := make(rueidis.Commands, 0, 2*keys.Partitions)
	for p := range keys.Partitions {
		cmds = append(cmds, b.rc.B().Xlen().Key(b.space.Paid(p)).Build(),
			b.rc.B().Xpending().Key(b.space.Paid(p)).Group(DefaultGroup).Build())
	}
	for i, r := range b.rc.DoMulti(ctx, cmds...) {
		if i%2 == 0 {
			n, err := r.AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			length += n
			continue
		}
		arr, err := r.ToArray()
		if err != nil || len(arr) == 0 {
			t.Fatalf("XPENDING: %v", err)
		}
		n, err := arr[0].AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		pending += n
	}
	return length, pending
}

func (b *bundle) assertStreamsEmpty(t *testing.T) {
	t.Helper()
	if length, pending := b.streams(t); length != 0 || pending != 0 {
		t.Fatalf("paid streams hold %d entries, %d pending; want all written, acknowledged and deleted", length, pending)
	}
}

func drain(t *testing.T, w *Worker) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := w.DrainOnce(ctx)
	if err != nil {
		t.Fatalf("DrainOnce: %v", err)
	}
	return n
}

func TestEnsureGroupsIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t) // created once already
	w := b.worker("w")
	if err := w.EnsureGroups(context.Background()); err != nil {
		t.Fatalf("second EnsureGroups: %v", err)
	}
	for _, p := range []int{0, 31, keys.Partitions - 1} {
		groups, err := b.rc.Do(context.Background(), b.rc.B().XinfoGroups().Key(b.space.Paid(p)).Build()).ToArray()
		if err != nil || len(groups) != 1 {
			t.Fatalf("partition %d: %d groups (%v), want 1", p, len(groups), err)
		}
	}
}

func TestDrainWritesPaidOrders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	channelOrder := record("ev_alpha", 2)
	shopOrder := record("ev_beta", 1)
	shopOrder.ChannelID, shopOrder.Source, shopOrder.BuyerPhone, shopOrder.DiscountCode = "", "storefront", "", ""
	shopOrder.ShowingID = "sh_1"
	shopOrder.Tickets[0].TicketID = "" // a record without ticket ids gets deterministic ones
	paidAt := int64(1_700_000_100_456)
	entryID := b.confirm(t, channelOrder, "partner-ref-1", paidAt)
	b.confirm(t, shopOrder, "", paidAt+1)

	if n := drain(t, b.worker("w")); n != 2 {
		t.Fatalf("DrainOnce = %d, want 2", n)
	}
	b.assertStreamsEmpty(t)
	b.assertNoDeadLetters(t)

	var (
		status, source, channelID, ref, streamID, currency, discountCode string
		subtotal, discount, extras, fee, vat, rp, total                  int64
		created, paid                                                    time.Time
	)
	err := b.pool.QueryRow(ctx, `SELECT status, source, channel_id, partner_reference, stream_id, currency, discount_code,
		subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents, refund_protection_cents, total_cents, created_at, paid_at
		FROM orders WHERE id = $1`, channelOrder.OrderID).Scan(&status, &source, &channelID, &ref, &streamID, &currency, &discountCode,
		&subtotal, &discount, &extras, &fee, &vat, &rp, &total, &created, &paid)
	if err != nil {
		t.Fatal(err)
	}
	if status != "paid" || source != "channel" || channelID != "ch_1" || ref != "partner-ref-1" || streamID != entryID ||
		currency != "USD" || discountCode != "TEN" {
		t.Fatalf("order row: status %q source %q channel %q ref %q stream %q (want %q) currency %q code %q",
			status, source, channelID, ref, streamID, entryID, currency, discountCode)
	}
	if subtotal != 5000 || discount != 500 || extras != 300 || fee != 150 || vat != 0 || rp != 99 || total != 5049 {
		t.Fatalf("order amounts: %d %d %d %d %d %d %d", subtotal, discount, extras, fee, vat, rp, total)
	}
	if !created.Equal(time.UnixMilli(channelOrder.CreatedAtMs)) || !paid.Equal(time.UnixMilli(paidAt)) {
		t.Fatalf("created_at %v paid_at %v", created, paid)
	}

	var nullChannel, nullRef, nullPhone bool
	var showing string
	err = b.pool.QueryRow(ctx, `SELECT channel_id IS NULL, partner_reference IS NULL, buyer_phone IS NULL, showing_id FROM orders WHERE id = $1`,
		shopOrder.OrderID).Scan(&nullChannel, &nullRef, &nullPhone, &showing)
	if err != nil || !nullChannel || !nullRef || !nullPhone || showing != "sh_1" {
		t.Fatalf("storefront order: channel null %v, ref null %v, phone null %v, showing %q, err %v", nullChannel, nullRef, nullPhone, showing, err)
	}

	rows, err := b.pool.Query(ctx, `SELECT line_no, kind, ref_id, quantity, unit_price_cents, amount_cents FROM order_lines WHERE order_id = $1 ORDER BY line_no`, channelOrder.OrderID)
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		no                   int
		kind, ref            string
		qty, unit, amountCts int64
	}
	var lines []line
	for rows.Next() {
		var l line
		if err := rows.Scan(&l.no, &l.kind, &l.ref, &l.qty, &l.unit, &l.amountCts); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if want := []line{{1, "ticket", "tk_ga", 2, 2500, 5000}, {2, "extra", "ex_parking", 1, 300, 300}}; len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
		t.Fatalf("lines = %+v, want %+v", lines, want)
	}

	for _, tc := range []struct{ id, order, event string }{
		{channelOrder.OrderID + "-1", channelOrder.OrderID, "ev_alpha"},
		{channelOrder.OrderID + "-2", channelOrder.OrderID, "ev_alpha"},
		{orders.TicketID(shopOrder.OrderID, 0), shopOrder.OrderID, "ev_beta"}, // the one format: "<order>-1"
	} {
		var order, event, label string
		var issued time.Time
		if err := b.pool.QueryRow(ctx, `SELECT order_id, event_id, label, issued_at FROM tickets WHERE id = $1`, tc.id).Scan(&order, &event, &label, &issued); err != nil {
			t.Fatalf("ticket %s: %v", tc.id, err)
		}
		if order != tc.order || event != tc.event || label != "GA" || issued.IsZero() {
			t.Fatalf("ticket %s: order %s event %s label %s issued %v", tc.id, order, event, label, issued)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM tickets`); n != 3 {
		t.Fatalf("%d tickets, want 3", n)
	}

	var recipient string
	var payload []byte
	var sent *time.Time
	err = b.pool.QueryRow(ctx, `SELECT recipient, payload, sent_at FROM outbox WHERE order_id = $1 AND kind = 'buyer_tickets'`, channelOrder.OrderID).Scan(&recipient, &payload, &sent)
	if err != nil {
		t.Fatal(err)
	}
	// The row points at the order; the mailer reads the order's rows.
	if recipient != "ada@example.com" || sent != nil || string(payload) != "{}" {
		t.Fatalf("outbox: recipient %q sent %v payload %s", recipient, sent, payload)
	}
	if n := b.count(t, `SELECT count(*) FROM outbox`); n != 2 {
		t.Fatalf("%d outbox rows, want 2", n)
	}
}

// assertOrders checks that exactly the given orders are stored, each once
// with its lines, tickets and one outbox row.
func (b *bundle) assertOrders(t *testing.T, recs ...orders.Record) {
	t.Helper()
	lines, tickets := 0, 0
	for _, r := range recs {
		lines += len(r.Lines)
		tickets += len(r.Tickets)
		if n := b.count(t, `SELECT count(*) FROM orders WHERE id = $1`, r.OrderID); n != 1 {
			t.Fatalf("order %s stored %d times, want 1", r.OrderID, n)
		}
	}
	for table, want := range map[string]int{"orders": len(recs), "order_lines": lines, "tickets": tickets, "outbox": len(recs)} {
		if n := b.count(t, `SELECT count(*) FROM `+table); n != want {
			t.Fatalf("%s has %d rows, want %d", table, n, want)
		}
	}
}

func (b *bundle) assertNoDeadLetters(t *testing.T) {
	t.Helper()
	if n := b.count(t, `SELECT count(*) FROM dead_letters`); n != 0 {
		t.Fatalf("%d dead letters, want 0", n)
	}
}

// assertAllWritten checks that exactly recs are stored (assertOrders), the
// paid streams are empty and nothing was dead-lettered.
func (b *bundle) assertAllWritten(t *testing.T, recs ...orders.Record) {
	t.Helper()
	b.assertOrders(t, recs...)
	b.assertStreamsEmpty(t)
	b.assertNoDeadLetters(t)
}

func TestRedeliveredOrderIsWrittenOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker("w")
	w.Batch = 2 // several rounds per pass
	rec := record("ev_redeliver", 3)
	others := []orders.Record{record("ev_redeliver", 1), record("ev_redeliver", 1), record("ev_other", 2)}

	b.confirm(t, rec, "r", 1_700_000_000_000)
	for _, o := range others {
		b.confirm(t, o, "r", 1_700_000_000_000)
	}
	if n := drain(t, w); n != 4 {
		t.Fatalf("first drain = %d, want 4", n)
	}
	// Queued again after it was written, and twice within one batch.
	b.confirm(t, rec, "r", 1_700_000_000_001)
	b.confirm(t, rec, "r", 1_700_000_000_002)
	if n := drain(t, w); n != 2 {
		t.Fatalf("second drain = %d, want 2", n)
	}
	b.assertAllWritten(t, append(others, rec)...)
	// The first delivery is the record: paid_at is not moved by a copy.
	if n := b.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND paid_at = $2`, rec.OrderID, time.UnixMilli(1_700_000_000_000)); n != 1 {
		t.Fatal("redelivery changed the stored order")
	}
}

func TestMalformedEntriesAreDeadLetteredAndTheStreamFlows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker("w")
	const ev = "ev_poison" // one partition, so the bad entries sit between good ones
	first, last := record(ev, 1), record(ev, 2)
	refused := record(ev, 1)
	refused.BuyerName = "Nul\x00Byte" // valid JSON, refused by Postgres text
	mismatch := record(ev, 1)
	mismatchJSON, _ := json.Marshal(mismatch)

	b.confirm(t, first, "r1", 1_700_000_000_000)
	bad := []string{
		b.xadd(t, ev, "order", "o00bad", "rec", "{not json", "ref", "", "paidAt", "1700000000000"),
		b.xadd(t, ev, "order", "o00bad", "ref", "", "paidAt", "1700000000000"), // no rec
		b.xadd(t, ev, "order", "o00other", "rec", string(mismatchJSON), "ref", "", "paidAt", "1700000000000"),
		b.xadd(t, ev, "order", mismatch.OrderID, "rec", string(mismatchJSON), "ref", "", "paidAt", "yesterday"),
		b.confirm(t, refused, "r", 1_700_000_000_000),
	}
	b.confirm(t, last, "r2", 1_700_000_000_000)

	if n := drain(t, w); n != 7 {
		t.Fatalf("DrainOnce = %d, want 7", n)
	}
	b.assertOrders(t, first, last)
	b.assertStreamsEmpty(t)
	for _, id := range bad {
		var errText, fields string
		err := b.pool.QueryRow(context.Background(), `SELECT error, fields::text FROM dead_letters WHERE stream = $1 AND entry_id = $2`,
			b.space.Paid(keys.Partition(ev)), id).Scan(&errText, &fields)
		if err != nil || errText == "" || fields == "" {
			t.Fatalf("dead letter for entry %s: error %q fields %q err %v", id, errText, fields, err)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM dead_letters`); n != len(bad) {
		t.Fatalf("%d dead letters, want %d", n, len(bad))
	}

	// The stream keeps flowing after them.
	next := record(ev, 1)
	b.confirm(t, next, "r3", 1_700_000_000_000)
	if n := drain(t, w); n != 1 {
		t.Fatalf("drain after dead letters = %d, want 1", n)
	}
	b.assertOrders(t, first, last, next)
}

var errCrash = errors.New("crash")

// crashA runs DrainOnce on worker "A" with a hook that fails the round at
// stage, leaving the streams as a worker killed there would.
func (b *bundle) crashA(t *testing.T, stage string) {
	t.Helper()
	a := b.worker("A")
	a.testHook = func(s string) error {
		if s == stage {
			return errCrash
		}
		return nil
	}
	if _, err := a.DrainOnce(context.Background()); !errors.Is(err, errCrash) {
		t.Fatalf("worker A: %v, want the crash", err)
	}
}

// A worker that is alive (its liveness key is set) but stuck mid-round
// keeps its entries until they have been idle for ClaimIdle; then XAUTOCLAIM
// hands them to another worker, and the stuck one stays a consumer.
func TestEntriesOfAStuckWorkerAreReclaimedAfterClaimIdle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 5, 2, "ev_kill_", 1)
	b.crashA(t, "read")
	b.setAlive(t, "A", time.Minute) // A is alive, stuck in its round
	if n := b.count(t, `SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("worker A wrote %d orders before its crash", n)
	}
	if _, pending := b.streams(t); pending != 5 {
		t.Fatalf("%d entries pending with A, want 5", pending)
	}

	w := b.worker("B")
	// Long enough that the checks above and B's first drain (a pass over
	// every partition) surely fit in it, even under -race on a busy machine:
	// at 100 ms this test failed now and then.
	w.ClaimIdle = time.Second
	w.Batch = 2
	if n := drain(t, w); n != 0 {
		t.Fatalf("B took %d entries A had just read; want it to wait ClaimIdle", n)
	}
	time.Sleep(w.ClaimIdle + 50*time.Millisecond)
	if n := drain(t, w); n != 5 {
		t.Fatalf("B reclaimed %d, want 5", n)
	}
	b.assertAllWritten(t, recs...)
	if parts := b.consumerParts(t, "A"); len(parts) == 0 {
		t.Fatal("A, alive, was removed from the groups")
	}
}

// A worker that stopped (its liveness key is gone) after committing a
// batch but before acknowledging it: the next worker takes the batch over
// at once, not after ClaimIdle, writes nothing twice, and removes A.
func TestEntriesOfAWorkerStoppedAfterCommitAreTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 5, 3, "ev_commit_", 2)
	b.crashA(t, "written")
	b.assertOrders(t, recs...) // committed
	if _, pending := b.streams(t); pending != 5 {
		t.Fatalf("%d entries pending with A, want 5 (not acknowledged)", pending)
	}

	w := b.worker("B") // ClaimIdle an hour
	if n := drain(t, w); n != 5 {
		t.Fatalf("B took over %d, want 5", n)
	}
	b.assertAllWritten(t, recs...)
	if parts := b.consumerParts(t, "A"); len(parts) != 0 {
		t.Fatalf("stopped consumer A is still in the groups of partitions %v", parts)
	}
}

// A worker restarted under the same consumer name writes what it had read
// before dying, without waiting for ClaimIdle.
func TestRestartedWorkerResumesItsOwnPendingEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := record("ev_restart", 1)
	b.confirm(t, rec, "r", 1_700_000_000_000)
	b.crashA(t, "read")
	if n := drain(t, b.worker("A")); n != 1 {
		t.Fatalf("restarted A wrote %d, want 1", n)
	}
	b.assertAllWritten(t, rec)
}

// A stream that lost its group (deleted, or Redis restarted empty) gets it
// back and its entries are written.
func TestMissingGroupIsRecreated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := record("ev_nogroup", 1)
	key := b.space.Paid(keys.Partition(rec.EventID))
	if err := b.rc.Do(context.Background(), b.rc.B().Del().Key(key).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	b.confirm(t, rec, "r", 1_700_000_000_000) // recreates the stream, without a group
	if n := drain(t, b.worker("w")); n != 1 {
		t.Fatalf("DrainOnce = %d, want 1", n)
	}
	b.assertAllWritten(t, rec)
}

// waitReturn waits for Run's result on done and fails unless it is nil.
func waitReturn(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 10*time.Second, what, cond)
}

// Run writes new entries as they arrive, takes over those of a dead worker,
// and returns nil when cancelled.
func TestRunWritesNewAndReclaimedEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dead := record("ev_run", 1)
	b.confirm(t, dead, "r", 1_700_000_000_000)
	b.crashA(t, "read")

	w := b.worker("B")
	w.ClaimIdle, w.ClaimEvery, w.PollInterval = 100*time.Millisecond, 20*time.Millisecond, 5*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	recs := append([]orders.Record{dead}, b.confirmEach(t, 10, 10, "ev_run_", 1)...)
	waitFor(t, "11 orders", func() bool { return b.count(t, `SELECT count(*) FROM orders`) == len(recs) })
	cancel()
	waitReturn(t, done)
	b.assertAllWritten(t, recs...)
}

// newReads counts the worker's reads of new entries (XREADGROUP ... >) by
// stream, once answered, and keeps when each was sent.
type newReads struct {
	rueidis.Client
	mu sync.Mutex
	n  map[string]int
	at map[string][]time.Time
}

func (c *newReads) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	var streams []string
	for _, cmd := range cmds {
		if args := cmd.Commands(); args[0] == "XREADGROUP" && args[len(args)-1] == ">" {
			streams = append(streams, args[len(args)-2])
		}
	}
	sent := time.Now()
	res := c.Client.DoMulti(ctx, cmds...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[string][]time.Time{}
	}
	for _, s := range streams {
		c.n[s]++
		c.at[s] = append(c.at[s], sent)
	}
	return res
}

func (c *newReads) of(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[stream]
}

// longestGap is the longest time between two reads of stream, and from
// the last one to now.
func (c *newReads) longestGap(stream string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := append(slices.Clone(c.at[stream]), time.Now())
	var gap time.Duration
	for i := 1; i < len(at); i++ {
		gap = max(gap, at[i].Sub(at[i-1]))
	}
	return gap
}

// While one event sells, Run reads its partition again soon after each
// batch and the other 63 only every PollInterval: a busy sale does not
// cost Redis an empty read of every stream each time.
func TestRunReadsOnlyTheBusyPartitionsBetweenSweeps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reads := &newReads{Client: b.rc, n: map[string]int{}}
	w := b.worker("busy")
	w.Redis, w.PollInterval = reads, time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(ctx) }()

	const event = "ev_busy"
	busy := b.space.Paid(keys.Partition(event))
	var recs []orders.Record
	for reads.of(busy) < 30 {
		r := record(event, 1)
		b.confirm(t, r, "r", 1_700_000_000_000)
		recs = append(recs, r)
		if time.Since(start) > time.Minute {
			t.Fatalf("the busy partition was read %d times in a minute", reads.of(busy))
		}
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, "every order written", func() bool { return b.count(t, `SELECT count(*) FROM orders`) == len(recs) })
	cancel()
	waitReturn(t, done)
	// A sweep at start and one a second after; one more for a sweep that
	// ran as the count was taken.
	sweeps := int(time.Since(start)/w.PollInterval) + 2
	for p := range keys.Partitions {
		if s := b.space.Paid(p); s != busy && reads.of(s) > sweeps {
			t.Errorf("idle partition %d read %d times for new entries in %v, want at most %d (one sweep a PollInterval); the busy one %d",
				p, reads.of(s), time.Since(start).Round(time.Millisecond), sweeps, reads.of(busy))
		}
	}
	b.assertAllWritten(t, recs...)
}

// An idle worker backs its sweep of every stream off: after each sweep
// that finds nothing it waits twice as long, up to idleSweepTimes
// PollIntervals, where it swept every PollInterval before (64 empty reads
// each time, most of an idle node's Redis commands).
func TestAnIdleWorkerSweepsLessOften(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reads := &newReads{Client: b.rc, n: map[string]int{}}
	w := b.worker("idle")
	w.Redis, w.PollInterval = reads, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(ctx) }()
	time.Sleep(1500 * time.Millisecond)
	idle := b.space.Paid(0)
	n, gap, took := reads.of(idle), reads.longestGap(idle), time.Since(start)
	cancel()
	waitReturn(t, done)
	// Sweeps at 0, 40, 120 and 280 ms, then every 200: about 10 in 1.5 s,
	// where a sweep every PollInterval made 75; and never further apart
	// than the backoff's cap (with room for a slow machine).
	limit := idleSweepTimes * w.PollInterval
	if most := int(took/limit) + 5; n < 2 || n > most || gap > 3*limit {
		t.Fatalf("an idle stream was swept %d times in %v, at most %v apart; want 2 to %d sweeps (backing off to one every %v), none %v apart",
			n, took.Round(time.Millisecond), gap.Round(time.Millisecond), most, limit, 3*limit)
	}
}

// While one partition keeps selling, the others are still swept every
// PollInterval: a sale there is written though nobody nudged the worker
// (a sale on an API node without a worker), as before the idle backoff.
func TestABusyPartitionDoesNotHoldOffTheSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker("busy-sweep")
	w.PollInterval = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(time.Second) // idle: the sweep backs off to every 500 ms

	const event = "ev_selling"
	quiet := recordBeside(event, "ev_quiet")
	written := func(id string) bool {
		return b.count(t, `SELECT count(*) FROM orders WHERE id = '`+id+`'`) == 1
	}
	var recs []orders.Record
	sell := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			r := record(event, 1)
			b.confirm(t, r, "r", 1_700_000_000_000)
			w.Nudge(keys.Partition(event))
			recs = append(recs, r)
		}
	}
	sell(300 * time.Millisecond) // the busy partition is read every few ms now
	b.confirm(t, quiet, "r", 1_700_000_000_000)
	for end := time.Now().Add(3 * time.Second); !written(quiet.OrderID); {
		if time.Now().After(end) {
			t.Fatalf("a quiet partition's order waited over 3 s while another partition sold (PollInterval %v)", w.PollInterval)
		}
		sell(20 * time.Millisecond)
	}
	waitFor(t, "every order written", func() bool { return b.count(t, `SELECT count(*) FROM orders`) == len(recs)+1 })
	cancel()
	waitReturn(t, done)
}

// A nudged stream (a sale on the worker's node: orders.Service.Paid) is
// read at once, without waiting for the next sweep; the others wait for it.
func TestANudgedStreamIsReadAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reads := &newReads{Client: b.rc, n: map[string]int{}}
	w := b.worker("nudged")
	w.Redis, w.PollInterval = reads, time.Minute // no sweep for minutes after the first
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitFor(t, "the first sweep", func() bool { return reads.of(b.space.Paid(keys.Partitions-1)) > 0 }) // answered

	nudged := record("ev_nudged", 1)
	other := recordBeside(nudged.EventID, "ev_not_nudged")
	b.confirm(t, other, "r", 1_700_000_000_000)
	b.confirm(t, nudged, "r", 1_700_000_000_000)
	w.Nudge(keys.Partition(nudged.EventID))
	waitFor(t, "the nudged stream's order", func() bool {
		return b.count(t, `SELECT count(*) FROM orders WHERE id = '`+nudged.OrderID+`'`) == 1
	})
	if n := b.count(t, `SELECT count(*) FROM orders WHERE id = '`+other.OrderID+`'`); n != 0 {
		t.Fatalf("the order on a stream nobody nudged was written before the next sweep")
	}
	cancel()
	waitReturn(t, done)
}

// recordBeside is a one-ticket record of an event named from prefix whose
// paid stream is not event's (another partition).
func recordBeside(event, prefix string) orders.Record {
	rec := record(prefix, 1)
	for i := 0; keys.Partition(rec.EventID) == keys.Partition(event); i++ {
		rec = record(prefix+"_"+strconv.Itoa(i), 1)
	}
	return rec
}

// Cancelled with a batch read, Run still writes and acknowledges that batch
// before it returns.
func TestRunFinishesItsBatchWhenCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 6, 6, "ev_cancel_", 1)
	ctx, cancel := context.WithCancel(context.Background())
	w := b.worker("w")
	w.testHook = func(stage string) error {
		if stage == "read" {
			cancel() // the stop signal arrives mid-batch
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitReturn(t, done)
	b.assertAllWritten(t, recs...)
}

// A worker whose acknowledgement reached only one of its streams (Redis
// crashed, or the connection was cut mid-pipeline, after the batch was
// committed) leaves nothing behind once it, or another worker, has run
// again: every order written once, the streams empty. Each stream's
// acknowledgement is one script, so within a stream it is all or nothing.
func TestAcknowledgementCutShortLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	const evA, evB = "ev_ackcut_a", "ev_ackcut_b"
	if keys.Partition(evA) == keys.Partition(evB) {
		t.Fatal("test events share a partition; pick others")
	}
	for _, next := range []string{"A", "B"} {
		t.Run("then "+next, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			recs := []orders.Record{record(evA, 1), record(evA, 1), record(evB, 1), record(evB, 1)}
			for _, r := range recs {
				b.confirmHashed(t, r, "r", 1_700_000_000_000)
			}
			b.crashA(t, "written") // in Postgres, pending with A
			p := keys.Partition(evA)
			raw, err := b.rc.Do(context.Background(), b.rc.B().Xrange().Key(b.space.Paid(p)).Start("-").End("+").Build()).AsXRange()
			if err != nil {
				t.Fatal(err)
			}
			var es []entry
			for _, e := range raw {
				es = append(es, entry{stream: b.space.Paid(p), part: p, id: e.ID, fields: e.FieldValues})
			}
			if err := b.worker("A").ack(context.Background(), es); err != nil { // evA's stream only
				t.Fatal(err)
			}
			drain(t, b.worker(next))
			b.assertAllWritten(t, recs...)
			if s := b.backlog(t); s != (BacklogStats{}) {
				t.Fatalf("backlog after the drain: %+v, want zero", s)
			}
		})
	}
}

// A paid order's entry names the order; the worker reads its record from
// the order hash, writes it, and then drops the record from the hash and
// gives the hash its retention (confirm kept it without expiry until then).
func TestRecordIsReadFromTheOrderHashAndDroppedOnceWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := record("ev_hashed", 2)
	b.confirmHashed(t, rec, "psp-7", 1_700_000_000_000)
	w := b.worker("A")
	w.Retention = time.Hour
	drain(t, w)
	b.assertAllWritten(t, rec)
	ctx := context.Background()
	okey, _ := b.space.Order(rec.OrderID)
	left, err := b.rc.Do(ctx, b.rc.B().Hexists().Key(okey).Field("rec").Build()).AsBool()
	if err != nil || left {
		t.Fatalf("record still in the order hash after the write: %v %v", left, err)
	}
	ttl, err := b.rc.Do(ctx, b.rc.B().Pttl().Key(okey).Build()).AsInt64()
	if err != nil || ttl <= 0 || ttl > time.Hour.Milliseconds() {
		t.Fatalf("order hash TTL %d ms after the write, want the retention (1h)", ttl)
	}
	if tix, _ := b.rc.Do(ctx, b.rc.B().Hget().Key(okey).Field("tix").Build()).ToString(); tix == "" {
		t.Fatal("the tickets left the order hash: confirm replays need them")
	}
}

// An entry whose order hash lost its record (it cannot be written) is a
// dead letter, never a block on its stream.
func TestEntryWithoutRecordIsADeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := record("ev_lostrec", 1)
	b.xadd(t, rec.EventID, "order", rec.OrderID, "ref", "r", "paidAt", "1700000000000")
	drain(t, b.worker("A"))
	if n := b.count(t, `SELECT count(*) FROM dead_letters WHERE error LIKE '%record%'`); n != 1 {
		t.Fatalf("%d dead letters naming the record, want 1", n)
	}
	if s := b.backlog(t); s != (BacklogStats{}) {
		t.Fatalf("backlog: %+v, want zero", s)
	}
}

// A record stored as reserve stores it (orders.Record.Encode) reaches its
// row unchanged: the row's lines and tickets are the record's, as a
// stdlib encoding of them reads back.
func TestRowKeepsTheRecordReserveEncoded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rec := record("ev_encoded", 2)
	for i := range rec.Tickets {
		rec.Tickets[i].Kind, rec.Tickets[i].RefID = orders.LineTicket, "tk_ga"
	}
	js, tix, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	okey, _ := b.space.Order(rec.OrderID)
	if err := b.rc.Do(ctx, b.rc.B().Hset().Key(okey).FieldValue().FieldValue("st", "paid").
		FieldValue("rec", string(js)).FieldValue("tix", string(tix)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	b.xadd(t, rec.EventID, "order", rec.OrderID, "ref", "psp-1", "paidAt", "1700000000000")
	drain(t, b.worker("A"))
	b.assertAllWritten(t, rec)
	lines, err := stdjson.Marshal(rec.Lines)
	if err != nil {
		t.Fatal(err)
	}
	tickets, err := stdjson.Marshal(rec.Tickets)
	if err != nil {
		t.Fatal(err)
	}
	var sameLines, sameTickets bool
	if err := b.pool.QueryRow(ctx, `SELECT lines = $2::jsonb, tickets = $3::jsonb FROM orders WHERE id = $1`,
		rec.OrderID, string(lines), string(tickets)).Scan(&sameLines, &sameTickets); err != nil {
		t.Fatal(err)
	}
	if !sameLines || !sameTickets {
		t.Fatalf("row lines as the record's: %v, tickets: %v", sameLines, sameTickets)
	}
}

// Workers acknowledging out of order take exactly their written entries
// off the stream: a later batch goes while another worker still holds an
// older entry, which stays, as does an entry no worker read yet; the older
// batch's acknowledgement then takes the rest below the unread one. So
// the stream's length stays the backlog, and a pending entry is never
// lost to the trim.
func TestAckTakesExactlyTheWrittenEntriesOffTheStream(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ev := "ev_ack"
	part := keys.Partition(ev)
	stream := b.space.Paid(part)
	var ids []string
	for i := range 6 {
		ids = append(ids, b.xadd(t, ev, orders.StreamOrderID, "o"+strconv.Itoa(i)))
	}
	read := func(consumer string, n int64) []entry {
		t.Helper()
		res, err := b.rc.Do(ctx, b.rc.B().Xreadgroup().Group(DefaultGroup, consumer).Count(n).Streams().Key(stream).Id(">").Build()).AsXRead()
		if err != nil {
			t.Fatal(err)
		}
		var es []entry
		for _, e := range res[stream] {
			es = append(es, entry{stream: stream, part: part, id: e.ID, fields: e.FieldValues})
		}
		return es
	}
	left := func(want ...string) {
		t.Helper()
		es, err := b.rc.Do(ctx, b.rc.B().Xrange().Key(stream).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("stream holds %v, want %v", got, want)
		}
	}
	// ack settles es as consumer and checks how many went by id (XDEL)
	// rather than by the trim. (Loaded first: a call Redis answers
	// "Function not found" runs again outside the pipeline ackSizes sees.)
	if err := eval.LoadInto(ctx, b.rc, ackScript); err != nil {
		t.Fatal(err)
	}
	ack := func(consumer string, es []entry, byID int64) {
		t.Helper()
		acks := &ackSizes{Client: b.rc}
		w := b.worker(consumer)
		w.Redis = acks
		if err := w.ack(ctx, es); err != nil {
			t.Fatal(err)
		}
		if len(acks.byID) != 1 || acks.byID[0] != byID {
			t.Fatalf("%s's acknowledgement deleted %v entries by id, want %d", consumer, acks.byID, byID)
		}
	}
	older, later := read("a", 3), read("b", 2) // ids[5] stays unread
	ack("b", later, 2)                         // a still holds older entries
	left(ids[0], ids[1], ids[2], ids[5])
	ack("a", older, 0)
	left(ids[5])
	ack("c", read("c", 10), 0)
	b.assertStreamsEmpty(t)

	// A group gone between the read and the acknowledgement (Redis lost
	// it; the next read recreates it): the entries written go by id.
	ids = ids[:0]
	for i := range 3 {
		ids = append(ids, b.xadd(t, ev, orders.StreamOrderID, "p"+strconv.Itoa(i)))
	}
	written := read("c", 2)
	if err := b.rc.Do(ctx, b.rc.B().XgroupDestroy().Key(stream).Group(DefaultGroup).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	ack("c", written, 2)
	left(ids[2])

	// The group made again from the start (as the worker does when it
	// finds it gone) after a worker read entries from the old one: its ids
	// are above the new group's last delivered, and go by id too.
	ids = append(ids[:0], ids[2], b.xadd(t, ev, orders.StreamOrderID, "q"))
	regroup := func() {
		t.Helper()
		b.rc.Do(ctx, b.rc.B().XgroupDestroy().Key(stream).Group(DefaultGroup).Build())
		if err := b.rc.Do(ctx, b.rc.B().XgroupCreate().Key(stream).Group(DefaultGroup).Id("0").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	regroup()
	early := read("c", 10)
	regroup()
	ack("c", early[:1], 1)
	left(ids[1])
}

// ackSizes records how many entries each paid_ack settles, and how many
// of them its reply says it deleted by id.
type ackSizes struct {
	rueidis.Client
	mu    sync.Mutex
	sizes []int
	byID  []int64
}

func (c *ackSizes) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	var acks []int
	for i, cmd := range cmds {
		args := cmd.Commands()
		if args[0] != "FCALL" || !strings.HasPrefix(args[1], "paid_ack_") {
			continue
		}
		nk, _ := strconv.Atoi(args[2])
		c.mu.Lock()
		c.sizes = append(c.sizes, len(args)-3-nk-2) // ARGV: group, retention, ids
		c.mu.Unlock()
		acks = append(acks, i)
	}
	res := c.Client.DoMulti(ctx, cmds...)
	for _, i := range acks {
		if arr, err := res[i].ToArray(); err == nil && len(arr) == 3 {
			n, _ := arr[2].AsInt64()
			c.mu.Lock()
			c.byID = append(c.byID, n)
			c.mu.Unlock()
		}
	}
	return res
}

// A full batch of one stream is settled ackChunk entries a script, so no
// acknowledgement holds Redis long, and every entry is still written once
// and taken off its stream.
func TestAFullBatchIsAcknowledgedInChunks(t *testing.T) {
	b := setup(t)
	recs := b.confirmEach(t, 600, 1, "ev_chunks_", 1)
	sizes := &ackSizes{Client: b.rc}
	w := b.worker("w")
	w.Redis = sizes
	if n := drain(t, w); n != len(recs) {
		t.Fatalf("drained %d, want %d", n, len(recs))
	}
	b.assertAllWritten(t, recs...)
	total := 0
	for _, n := range sizes.sizes {
		if n > ackChunk {
			t.Errorf("one paid_ack settled %d entries, want at most %d", n, ackChunk)
		}
		total += n
	}
	if total != len(recs) || len(sizes.sizes) < 3 {
		t.Fatalf("paid_ack calls settled %v, want the 600 entries in at least 3", sizes.sizes)
	}
}

// A rebuild that raises the fence (sync/fence) after a round read its
// entries refuses that round's write: with Redis intact, the entries are
// read again under the new epoch and written, each once.
func TestAWriteReadBeforeARebuildIsReadAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 3, 2, "ev_fence_", 1)
	w := b.worker("w")
	reads := 0
	w.testHook = func(stage string) error {
		if stage == "read" {
			if reads++; reads == 1 {
				if _, err := fence.Raise(context.Background(), b.pool, b.space.Prefix); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if n := drain(t, w); n != 3 {
		t.Fatalf("drain = %d, want 3", n)
	}
	if reads < 2 {
		t.Fatalf("the entries were read %d times: the refused write was not read again", reads)
	}
	b.assertAllWritten(t, recs...)
}

// The entries a round read from a Redis whose state is then lost, and
// which a rebuild then replaces, never land in orders after the rebuild's
// read of Postgres: the write is refused (the fence), the entries are read
// again from the Redis the rebuild sees, where they are not. Postgres's
// orders then agree with the rebuilt Redis, which counts neither (the sold
// marks count them as lost, decisions.md), and each order's record is kept
// in dead_letters for the operator, so it is in some store.
func TestEntriesOfALostRedisDoNotLandAfterTheRebuildsRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs := b.confirmEach(t, 3, 2, "ev_lost_", 1)
	hashed := record("ev_lost_h", 2) // its record in the order hash, as confirm queues it now
	b.confirmHashed(t, hashed, "r", 1_700_000_000_000)
	recs = append(recs, hashed)
	w := b.worker("w")
	lost := false
	w.testHook = func(stage string) error {
		if stage != "read" || lost {
			return nil
		}
		lost = true
		ctx := context.Background()
		var gone []string
		for p := range keys.Partitions {
			gone = append(gone, b.space.Paid(p))
		}
		for _, k := range gone {
			if err := b.rc.Do(ctx, b.rc.B().Del().Key(k).Build()).Error(); err != nil {
				return err
			}
		}
		_, err := fence.Raise(ctx, b.pool, b.space.Prefix)
		return err
	}
	if n := drain(t, w); n != 0 {
		t.Fatalf("drain = %d, want 0: the entries were lost with Redis", n)
	}
	if !lost {
		t.Fatal("the worker read no entries")
	}
	if n := b.count(t, `SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("%d orders read from the lost Redis landed in Postgres after the rebuild's raise", n)
	}
	for _, r := range recs {
		if n := b.count(t, `SELECT count(*) FROM dead_letters WHERE fields->>'order' = $1 AND fields ? 'rec' AND error = $2`,
			r.OrderID, lostReason); n != 1 {
			t.Errorf("order %s: %d dead letters with its record and the lost reason, want 1", r.OrderID, n)
		}
	}
}
