package rebuild

import (
	"context"
	"fmt"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/catalogdb"
)

// state is what a rebuild writes back, counted from the record and the
// streams.
type state struct {
	tenants  []catalog.Tenant
	channels []catalog.StoredChannel

	sold   map[string]map[string]int64  // event -> counter field -> sold
	booked map[string]map[string]string // event -> seat label -> order id
	used   map[string]map[string]int64  // event -> discount code -> uses
	buyers map[string]map[string]int64  // event with a buyer limit -> buyer key -> admissions

	recent     []paidCopy // Redis copies of orders paid within the retention
	paidOrders int64
	streamOnly int

	paid map[string]int64 // event -> units ever paid (record and streams)
	loss lossState        // marks and holds (holds.go)
	gaps map[string]int64 // event -> lost units this rebuild found
}

// paidCopy is what the Redis copy of a paid order holds (see
// order_confirm.lua) and its reserve's idempotency record.
type paidCopy struct {
	// owner is the hash's "ch": the channel, or the storefront owner.
	orderID, owner, caller, ref string
	total                       int64
	tickets                     []orders.Ticket
	paidAt, createdAt           time.Time
	idemKey, fingerprint        string
	// record is the order's record as reserve stored it, for an order
	// only the streams hold: the sync worker still has to write it.
	record string
}

// streamedOrder is a paid order found on a paid stream, with its record
// as stored (from the entry, or the order hash it names).
type streamedOrder struct {
	rec orders.Record
	raw string
}

func (st *state) count(eventID, showingID, orderID, seller string, l orders.Line) {
	sold := st.sold[eventID]
	if sold == nil {
		sold = map[string]int64{}
		st.sold[eventID] = sold
	}
	orders.AddClaims(sold, l, showingID, seller)
	if l.Kind == orders.LineSeat {
		b := st.booked[eventID]
		if b == nil {
			b = map[string]string{}
			st.booked[eventID] = b
		}
		b[l.RefID] = orderID
	}
}

// admit counts a paid order's admissions for its buyer, on events with a
// buyer limit.
func (st *state) admit(eventID, email string, n int64) {
	b, ok := st.buyers[eventID]
	if !ok || n <= 0 {
		return
	}
	b[orders.BuyerKey(email)] += n
}

// owner is what the hash of a paid order names as its owner.
func owner(source, channelID, tenantID string) string {
	if source == orders.SourceStorefront {
		return orders.StorefrontOwner(tenantID)
	}
	return channelID
}

func (st *state) use(eventID, code string, n int64) {
	u := st.used[eventID]
	if u == nil {
		u = map[string]int64{}
		st.used[eventID] = u
	}
	u[code] += n
}

// streamPage is how many entries one XRANGE reads.
const streamPage = 1000

// readStreams returns the paid orders on the paid streams, by id. An entry
// that does not decode is left to the sync worker (it dead-letters it).
func (r *Rebuilder) readStreams(ctx context.Context) (map[string]streamedOrder, error) {
	out := map[string]streamedOrder{}
	from := map[int]string{}
	for p := range keys.Partitions {
		from[p] = "-"
	}
	bad := 0
	for len(from) > 0 {
		parts := make([]int, 0, len(from))
		cmds := make(rueidis.Commands, 0, len(from))
		for p, f := range from {
			parts = append(parts, p)
			cmds = append(cmds, r.Redis.B().Xrange().Key(r.Space.Paid(p)).Start(f).End("+").Count(streamPage).Build())
		}
		next := map[int]string{}
		var fields []map[string]string
		for i, res := range r.Redis.DoMulti(ctx, cmds...) {
			es, err := res.AsXRange()
			if err != nil {
				return nil, fmt.Errorf("rebuild: read %s: %w", r.Space.Paid(parts[i]), err)
			}
			for _, e := range es {
				fields = append(fields, e.FieldValues)
			}
			if len(es) == streamPage {
				next[parts[i]] = "(" + es[len(es)-1].ID
			}
		}
		// Entries name their orders; the records are in the order hashes.
		if err := orders.FillRecords(ctx, r.Redis, r.Space, fields); err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
		for _, f := range fields {
			rec, err := orders.DecodePaid(f)
			if err != nil {
				bad++
				continue
			}
			out[rec.OrderID] = streamedOrder{rec: rec, raw: f[orders.StreamRecord]}
		}
		from = next
	}
	if bad > 0 {
		r.logger().Warn("rebuild: paid-stream entries that are not paid orders were skipped (the sync worker dead-letters them)", "entries", bad)
	}
	return out, nil
}

// readRecord counts, from one snapshot of Postgres, everything capacity
// depends on, adds the paid orders only the streams hold, and collects the
// recently paid orders whose Redis copies come back.
func (r *Rebuilder) readRecord(ctx context.Context, streamed map[string]streamedOrder) (*state, error) {
	st := &state{sold: map[string]map[string]int64{}, booked: map[string]map[string]string{}, used: map[string]map[string]int64{},
		buyers: map[string]map[string]int64{}, paid: map[string]int64{}}
	var err error
	if st.tenants, st.channels, err = (&catalogdb.Store{Pool: r.Pool}).Load(ctx); err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	var limited []string
	for _, t := range st.tenants {
		for i := range t.Events {
			if t.Events[i].BuyerLimit() > 0 {
				limited = append(limited, t.Events[i].ID)
				st.buyers[t.Events[i].ID] = map[string]int64{}
			}
		}
	}
	now := time.Now()
	since := now.Add(-orDefault(r.Retention, orders.DefaultRetention))
	ids := make([]string, 0, len(streamed))
	for id := range streamed {
		ids = append(ids, id)
	}
	err = pgx.BeginTxFunc(ctx, r.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM orders WHERE id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		known, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range known {
			delete(streamed, id) // Postgres counts it
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM orders WHERE status = 'paid'`).Scan(&st.paidOrders); err != nil {
			return err
		}
		if err := readLines(ctx, tx, st); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT event_id, discount_code, count(*) FROM orders
			WHERE status = 'paid' AND discount_code IS NOT NULL GROUP BY event_id, discount_code`)
		if err != nil {
			return err
		}
		var ev, code string
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&ev, &code, &n}, func() error { st.use(ev, code, n); return nil }); err != nil {
			return err
		}
		if err := readBuyers(ctx, tx, st, limited); err != nil {
			return err
		}
		if err := readPaidUnits(ctx, tx, st); err != nil {
			return err
		}
		if st.loss, err = readLoss(ctx, tx, r.Space.Prefix, r.ownMarks()); err != nil {
			return err
		}
		return readRecent(ctx, tx, st, since)
	})
	if err != nil {
		return nil, fmt.Errorf("rebuild: read the record: %w", err)
	}
	for _, so := range streamed {
		rec := so.rec
		seller := orders.SellerOf(rec.Source, rec.ChannelID)
		for _, l := range rec.Lines {
			st.count(rec.EventID, rec.ShowingID, rec.OrderID, seller, l)
		}
		if rec.DiscountCode != "" {
			st.use(rec.EventID, rec.DiscountCode, 1)
		}
		adm := orders.ClaimsOf(rec.Lines, rec.ShowingID, "")["ev"] // "ev" alone: no share needed
		st.admit(rec.EventID, rec.BuyerEmail, adm)
		st.paid[rec.EventID] += adm
		st.paidOrders++
		st.streamOnly++
		if paid := time.UnixMilli(rec.PaidAtMs); paid.After(since) {
			st.recent = append(st.recent, paidCopy{orderID: rec.OrderID, owner: owner(rec.Source, rec.ChannelID, rec.TenantID), caller: rec.Caller,
				ref: rec.PartnerReference, total: int64(rec.Total), tickets: rec.Tickets, paidAt: paid,
				createdAt: time.UnixMilli(rec.CreatedAtMs), idemKey: rec.IdempotencyKey, fingerprint: rec.Fingerprint,
				record: so.raw})
		}
	}
	return st, nil
}

// readLines counts every line of every paid order, streaming the rows
// (an order's lines are a jsonb column of its row: migration 008).
func readLines(ctx context.Context, tx pgx.Tx, st *state) error {
	rows, err := tx.Query(ctx, `SELECT id, event_id, coalesce(showing_id, ''), source, coalesce(channel_id, ''), lines
		FROM orders WHERE status = 'paid'`)
	if err != nil {
		return err
	}
	var id, ev, showing, source, channel string
	var lines []orders.Line
	_, err = pgx.ForEachRow(rows, []any{&id, &ev, &showing, &source, &channel, &lines}, func() error {
		seller := orders.SellerOf(source, channel)
		for _, l := range lines {
			st.count(ev, showing, id, seller, l)
		}
		lines = nil // decoded afresh for the next row, no fields left over
		return nil
	})
	return err
}

// readBuyers counts the admissions of every buyer (by normalised e-mail) of
// the events with a buyer limit over their paid orders, both surfaces. An
// admission is a line's quantity, extras aside (as orders.AddClaims counts
// "ev").
func readBuyers(ctx context.Context, tx pgx.Tx, st *state, events []string) error {
	if len(events) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT o.event_id, o.buyer_email, sum((l->>'quantity')::int8)::int8
		FROM orders o CROSS JOIN LATERAL jsonb_array_elements(o.lines) l
		WHERE o.status = 'paid' AND o.event_id = ANY($1) AND l->>'kind' <> $2
		GROUP BY o.event_id, o.buyer_email`, events, orders.LineExtra)
	if err != nil {
		return err
	}
	var ev, email string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&ev, &email, &n}, func() error { st.admit(ev, email, n); return nil })
	return err
}

// readRecent collects the orders paid since since, with their tickets.
func readRecent(ctx context.Context, tx pgx.Tx, st *state, since time.Time) error {
	rows, err := tx.Query(ctx, `SELECT id, coalesce(channel_id, ''), source, tenant_id, coalesce(caller, ''), total_cents,
		coalesce(partner_reference, ''), paid_at, created_at, coalesce(idempotency_key, ''), coalesce(fingerprint, ''), tickets
		FROM orders WHERE status = 'paid' AND paid_at > $1 ORDER BY id`, since)
	if err != nil {
		return err
	}
	var c paidCopy
	var channel, source, tenantID string
	_, err = pgx.ForEachRow(rows, []any{&c.orderID, &channel, &source, &tenantID, &c.caller, &c.total, &c.ref, &c.paidAt, &c.createdAt,
		&c.idemKey, &c.fingerprint, &c.tickets}, func() error {
		c.owner = owner(source, channel, tenantID)
		st.recent = append(st.recent, c)
		c.tickets = nil // the next row decodes into a list of its own
		return nil
	})
	return err
}

// ticketsJSON is the tickets as the order hash keeps them ("tix").
func ticketsJSON(tix []orders.Ticket) (string, error) {
	if tix == nil {
		tix = []orders.Ticket{}
	}
	b, err := json.Marshal(tix)
	return string(b), err
}
