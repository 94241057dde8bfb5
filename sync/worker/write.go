package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/sync/fence"
	"github.com/ticketd/ticketd/sync/outbox"
)

// StatusPaid is the status of every order the worker writes.
const StatusPaid = "paid"

// paid is an entry decoded into the record to write.
type paid struct {
	e   entry
	rec orders.Record
}

// deadLetter is an entry that will never be written, and why.
type deadLetter struct {
	e      entry
	reason string
}

// write stores a batch: every paid order it holds, and every entry it
// cannot store in dead_letters, in one transaction. When Postgres refuses a
// value (a data or constraint error), the orders are written one by one to
// find the refused ones, which become dead letters too. It returns how many
// entries were written or dead-lettered. epoch is the fence's epoch the
// entries were read under (commit).
func (w *Worker) write(ctx context.Context, es []entry, epoch int64) (int, error) {
	var good []paid
	var dead []deadLetter
	seen := make(map[string]bool, len(es))
	n := 0
	for _, e := range es {
		if e.fields == nil {
			continue // deleted from the stream while pending
		}
		n++
		rec, err := orders.DecodePaid(e.fields)
		if err != nil {
			dead = append(dead, deadLetter{e: e, reason: err.Error()})
			continue
		}
		if seen[rec.OrderID] {
			continue // queued twice; the first copy is written
		}
		seen[rec.OrderID] = true
		good = append(good, paid{e: e, rec: rec})
	}
	err := w.commit(ctx, good, dead, epoch)
	if isDataError(err) && len(good) > 0 {
		for _, o := range good {
			err := w.commit(ctx, []paid{o}, nil, epoch)
			if isDataError(err) {
				dead = append(dead, deadLetter{e: o.e, reason: "postgres refused the order: " + err.Error()})
			} else if err != nil {
				return 0, fmt.Errorf("worker: write order %s: %w", o.rec.OrderID, err)
			}
		}
		err = w.commit(ctx, nil, dead, epoch)
	}
	if fence.Moved(err) {
		// A rebuild began after these entries were read, maybe from the
		// Redis it replaces: nothing is written; the next round reads its
		// epoch and the entries again, from the Redis the rebuild sees.
		// Those that Redis lost are kept as dead letters (keepLost).
		if kerr := w.keepLost(ctx, good); kerr != nil {
			w.logger().Error("sync worker: could not check the entries a rebuild's fence refused against the Redis it sees; "+
				"the ones it lost are in no store", "err", kerr)
		}
		return 0, fmt.Errorf("worker: write batch: read before a rebuild of the Redis state, read again: %w", err)
	}
	if err != nil {
		return 0, fmt.Errorf("worker: write batch: %w", err)
	}
	for _, d := range dead {
		w.logger().Warn("sync worker: paid-stream entry moved to dead_letters",
			"stream", d.e.stream, "entry", d.e.id, "reason", d.reason)
	}
	return n, nil
}

// isDataError reports whether Postgres refused the values themselves (SQL
// state classes 22, data exception, and 23, integrity constraint
// violation): writing the same values again can never succeed.
func isDataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
}

// rows holds a batch column by column, for INSERT ... SELECT FROM unnest:
// one statement a table whatever the batch size.
type rows struct {
	id, eventID, tenantID, channelID, source, buyerName, buyerEmail, buyerPhone []string
	showingID, discountCode, currency, ref, streamID                            []string
	caller, idemKey, fingerprint                                                []string
	lines, tickets                                                              []string
	subtotal, discount, extras, fee, vat, refundProtection, total               []int64
	createdAt, paidAt                                                           []time.Time

	outOrder, outRecipient, outRateKey []string
	hostOrder, hostTenant              []string

	deadStream, deadID, deadFields, deadError []string
}

// addOrder adds o's row. Its lines and tickets go as the jsonb the row
// keeps them in: the record's own JSON, as reserve encoded it when the
// entry carries it (orders.Record.LinesJSON, TicketsJSON), else encoded here.
func (r *rows) addOrder(o paid) error {
	rec := o.rec
	lines, err := rowJSON(rec.LinesJSON, rec.Lines)
	if err != nil {
		return fmt.Errorf("encode lines of %s: %w", rec.OrderID, err)
	}
	tix := rec.TicketsJSON
	if !issued(rec.Tickets) {
		tix = ""
	}
	tickets, err := rowJSON(tix, issuedTickets(rec))
	if err != nil {
		return fmt.Errorf("encode tickets of %s: %w", rec.OrderID, err)
	}
	paidAt := time.UnixMilli(rec.PaidAtMs)
	r.id = append(r.id, rec.OrderID)
	r.eventID = append(r.eventID, rec.EventID)
	r.tenantID = append(r.tenantID, rec.TenantID)
	r.channelID = append(r.channelID, rec.ChannelID)
	r.source = append(r.source, rec.Source)
	r.buyerName = append(r.buyerName, rec.BuyerName)
	r.buyerEmail = append(r.buyerEmail, rec.BuyerEmail)
	r.buyerPhone = append(r.buyerPhone, rec.BuyerPhone)
	r.showingID = append(r.showingID, rec.ShowingID)
	r.discountCode = append(r.discountCode, rec.DiscountCode)
	r.currency = append(r.currency, rec.Currency)
	r.ref = append(r.ref, rec.PartnerReference)
	r.streamID = append(r.streamID, o.e.id)
	r.caller = append(r.caller, rec.Caller)
	r.idemKey = append(r.idemKey, rec.IdempotencyKey)
	r.fingerprint = append(r.fingerprint, rec.Fingerprint)
	r.subtotal = append(r.subtotal, int64(rec.Subtotal))
	r.discount = append(r.discount, int64(rec.Discount))
	r.extras = append(r.extras, int64(rec.Extras))
	r.fee = append(r.fee, int64(rec.Fee))
	r.vat = append(r.vat, int64(rec.VAT))
	r.refundProtection = append(r.refundProtection, int64(rec.RefundProtection))
	r.total = append(r.total, int64(rec.Total))
	r.createdAt = append(r.createdAt, time.UnixMilli(rec.CreatedAtMs))
	r.paidAt = append(r.paidAt, paidAt)

	r.lines = append(r.lines, lines)
	r.tickets = append(r.tickets, tickets)
	if rec.BuyerEmail != "" {
		// The outbox row says what to send to whom; the mailer renders the
		// tickets e-mail from the order's row. A copy of the record in
		// it doubled what Postgres parses and logs for every paid order.
		r.outOrder = append(r.outOrder, rec.OrderID)
		r.outRecipient = append(r.outRecipient, rec.BuyerEmail)
		r.outRateKey = append(r.outRateKey, outbox.RateKey(rec.BuyerEmail))
	}
	if rec.Source == orders.SourceStorefront {
		r.hostOrder = append(r.hostOrder, rec.OrderID)
		r.hostTenant = append(r.hostTenant, rec.TenantID)
	}
	return nil
}

// issuedTickets is rec's tickets as the row keeps them. One without an id
// (a record queued before reserve minted them) gets orders.TicketID's, so
// a redelivered order issues the same ids; one without a kind is a ticket.
func issuedTickets(rec orders.Record) []orders.Ticket {
	if issued(rec.Tickets) {
		return rec.Tickets
	}
	out := slices.Clone(rec.Tickets)
	for i := range out {
		if out[i].TicketID == "" {
			out[i].TicketID = orders.TicketID(rec.OrderID, i)
		}
		if out[i].Kind == "" {
			out[i].Kind = orders.LineTicket
		}
	}
	return out
}

// issued reports whether every ticket has its id and kind, as reserve and
// register issue them: their stored JSON is then the row's as it is.
func issued(ts []orders.Ticket) bool {
	return !slices.ContainsFunc(ts, func(t orders.Ticket) bool { return t.TicketID == "" || t.Kind == "" })
}

// rowJSON is a list as the row keeps it: raw, the JSON it was stored as,
// when given, else v encoded; an empty array for none.
func rowJSON[T any](raw string, v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	if raw != "" {
		return raw, nil
	}
	return jsonArray(v)
}

// jsonArray is v as JSON, an empty array for none.
func jsonArray[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func (r *rows) addDead(d deadLetter) error {
	fields := make(map[string]string, len(d.e.fields))
	for k, v := range d.e.fields {
		fields[storable(k)] = storable(v)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("encode dead letter %s: %w", d.e.id, err)
	}
	r.deadStream = append(r.deadStream, d.e.stream)
	r.deadID = append(r.deadID, d.e.id)
	r.deadFields = append(r.deadFields, string(b))
	r.deadError = append(r.deadError, storable(d.reason))
	return nil
}

// storable makes any bytes acceptable to a Postgres text or jsonb value,
// which refuse invalid UTF-8 and NUL: a dead letter must always be
// storable, or it would block its stream.
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

const (
	// One row an order: its lines and tickets are jsonb columns of it
	// (migration 008), so no child rows and no foreign keys to check.
	insertOrders = `INSERT INTO orders (id, event_id, tenant_id, channel_id, source, status, buyer_name, buyer_email,
	buyer_phone, showing_id, discount_code, currency, subtotal_cents, discount_cents, extras_cents, fee_cents, vat_cents,
	refund_protection_cents, total_cents, partner_reference, created_at, paid_at, stream_id,
	caller, idempotency_key, fingerprint, lines, tickets)
SELECT id, event_id, tenant_id, NULLIF(channel_id, ''), source, '` + StatusPaid + `', buyer_name, buyer_email,
	NULLIF(buyer_phone, ''), NULLIF(showing_id, ''), NULLIF(discount_code, ''), currency, subtotal, discount, extras, fee, vat,
	refund_protection, total, NULLIF(ref, ''), created_at, paid_at, stream_id,
	NULLIF(caller, ''), NULLIF(idem_key, ''), NULLIF(fingerprint, ''), lines, tickets
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
	$9::text[], $10::text[], $11::text[], $12::int8[], $13::int8[], $14::int8[], $15::int8[], $16::int8[],
	$17::int8[], $18::int8[], $19::text[], $20::timestamptz[], $21::timestamptz[], $22::text[],
	$23::text[], $24::text[], $25::text[], $26::jsonb[], $27::jsonb[])
	AS u(id, event_id, tenant_id, channel_id, source, buyer_name, buyer_email, buyer_phone,
	showing_id, discount_code, currency, subtotal, discount, extras, fee, vat,
	refund_protection, total, ref, created_at, paid_at, stream_id, caller, idem_key, fingerprint, lines, tickets)
ON CONFLICT (id) DO NOTHING`

	// rate_key: the mailer queues an address's rows by it (sync/mailer
	// rate.go) without claiming each one.
	insertOutbox = `INSERT INTO outbox (order_id, kind, recipient, payload, rate_key)
SELECT order_id, '` + outbox.BuyerTickets + `', recipient, '{}'::jsonb, rate_key
FROM unnest($1::text[], $2::text[], $3::text[]) AS u(order_id, recipient, rate_key)
ON CONFLICT (order_id, kind, ref) DO NOTHING`

	// The host's address is the tenant's notifyEmail at the time of the
	// sale; a tenant without one gets no row.
	insertHostNotify = `INSERT INTO outbox (order_id, kind, recipient, payload)
SELECT u.order_id, '` + outbox.HostNotify + `', t.doc->>'notifyEmail', '{}'::jsonb
FROM unnest($1::text[], $2::text[]) AS u(order_id, tenant_id)
JOIN tenants t ON t.id = u.tenant_id
WHERE coalesce(t.doc->>'notifyEmail', '') <> ''
ON CONFLICT (order_id, kind, ref) DO NOTHING`

	insertDead = `INSERT INTO dead_letters (stream, entry_id, fields, error)
SELECT stream, entry_id, fields::jsonb, error
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(stream, entry_id, fields, error)
ON CONFLICT (stream, entry_id) DO NOTHING`
)

// commit writes orders and dead letters in one transaction: the batch's
// implicit one, so the whole write is a single round trip (no BEGIN and
// COMMIT of their own). Every insert does nothing on conflict, so committing
// the same batch twice changes nothing the second time. The fence's check
// comes first (sync/fence): the write aborts if a rebuild raised the epoch
// since seen, and a rebuild's raise waits for it to end.
func (w *Worker) commit(ctx context.Context, good []paid, dead []deadLetter, seen int64) error {
	var r rows
	for _, o := range good {
		if err := r.addOrder(o); err != nil {
			return err
		}
	}
	for _, d := range dead {
		if err := r.addDead(d); err != nil {
			return err
		}
	}
	b := &pgx.Batch{}
	b.Queue(fence.CheckSQL, w.Space.Prefix, seen)
	if len(r.id) > 0 {
		b.Queue(insertOrders, r.id, r.eventID, r.tenantID, r.channelID, r.source, r.buyerName, r.buyerEmail,
			r.buyerPhone, r.showingID, r.discountCode, r.currency, r.subtotal, r.discount, r.extras, r.fee, r.vat,
			r.refundProtection, r.total, r.ref, r.createdAt, r.paidAt, r.streamID, r.caller, r.idemKey, r.fingerprint,
			r.lines, r.tickets)
	}
	if len(r.outOrder) > 0 {
		b.Queue(insertOutbox, r.outOrder, r.outRecipient, r.outRateKey)
	}
	if len(r.hostOrder) > 0 {
		b.Queue(insertHostNotify, r.hostOrder, r.hostTenant)
	}
	if len(r.deadID) > 0 {
		b.Queue(insertDead, r.deadStream, r.deadID, r.deadFields, r.deadError)
	}
	if b.Len() == 1 {
		return nil // the check alone: nothing to write
	}
	err := w.Pool.SendBatch(ctx, b).Close()
	if fence.Moved(err) {
		w.epochKnown.Store(false) // read again before the next read
	}
	return err
}

// lostReason is the dead letter of a paid entry read from a Redis whose
// state a rebuild replaced before it was written (keepLost).
const lostReason = "paid on a Redis whose state was lost: read before a rebuild began, not written before it, and not on the " +
	"rebuilt Redis nor in orders, so no store counts it (the event's sold marks do): refund the buyer or honour the order by hand"

// keepLost keeps, as dead letters, the paid orders of a write the fence
// refused that are gone from their stream in the Redis a rebuild now
// builds (its state was lost) and are not in orders (another worker did
// not write them meanwhile): neither Postgres nor the rebuilt Redis counts
// them, and without this their records (buyer, amounts, payment reference)
// would be in no store. Entries still on their stream are left to the next
// read, which writes them. The dead letters are written under the epoch
// now, so a rebuild after this one fences them as it fences orders.
func (w *Worker) keepLost(ctx context.Context, refused []paid) error {
	if len(refused) == 0 {
		return nil
	}
	epoch, err := w.fenceEpoch(ctx)
	if err != nil {
		return err
	}
	cmds := make(rueidis.Commands, len(refused))
	for i, o := range refused {
		cmds[i] = w.Redis.B().Xrange().Key(o.e.stream).Start(o.e.id).End(o.e.id).Build()
	}
	gone := make(map[string]paid)
	for i, r := range w.Redis.DoMulti(ctx, cmds...) {
		es, err := r.AsXRange()
		if err != nil {
			return fmt.Errorf("look for %s on %s: %w", refused[i].e.id, refused[i].e.stream, err)
		}
		if len(es) == 0 {
			gone[refused[i].rec.OrderID] = refused[i]
		}
	}
	if len(gone) == 0 {
		return nil
	}
	rows, err := w.Pool.Query(ctx, `SELECT id FROM orders WHERE id = ANY($1)`, slices.Collect(maps.Keys(gone)))
	if err != nil {
		return fmt.Errorf("look for the orders in Postgres: %w", err)
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("look for the orders in Postgres: %w", err)
	}
	for _, id := range written {
		delete(gone, id)
	}
	if len(gone) == 0 {
		return nil
	}
	dead := make([]deadLetter, 0, len(gone))
	for _, o := range gone {
		dead = append(dead, deadLetter{e: o.e, reason: lostReason})
	}
	if err := w.commit(ctx, nil, dead, epoch); err != nil {
		return fmt.Errorf("keep them as dead letters: %w", err)
	}
	for id, o := range gone {
		w.logger().Error("sync worker: a paid order read from a Redis whose state was lost was not written before the rebuild; "+
			"kept in dead_letters for the operator", "order", id, "stream", o.e.stream, "entry", o.e.id)
	}
	return nil
}
