package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/idempotency"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
)

var errEventNotFound = apierr.Of("EVENT_NOT_FOUND", "no such event in this channel's catalog")

// reserveView is the reserve response, as ticketd writes it.
type reserveView struct {
	OrderID   string      `json:"orderId"`
	Amount    money.Cents `json:"amount"`
	Currency  string      `json:"currency"`
	Duplicate bool        `json:"duplicate,omitempty"`
}

// checkout is POST /v1/channel/events/{id}/checkout: check capacity without
// claiming it and insert a pending order with its lines.
func (a *app) checkout(ctx *fasthttp.RequestCtx, s *snapshot, ch *channel) {
	id, _ := ctx.UserValue("id").(string)
	ev := s.events[id]
	if ev == nil {
		httpx.Fail(ctx, errEventNotFound)
		return
	}
	// The request checks are ticketd's own (inventory/idempotency, inventory/checkout), so both
	// servers refuse the same requests and do the same work on them.
	key, e := idempotency.Check(ctx.Request.Header.Peek(idempotency.Header))
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	var body reserveBody
	if e := httpx.Decode(ctx, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	b, e := checkout.ValidateBuyer(checkout.PartnerFields, body.BuyerName, body.BuyerEmail, body.BuyerPhone)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	p, e := price(ev, &body)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	// The same key with another request is KEY_CONFLICT, as in ticketd.
	canon, _ := json.Marshal(body)
	fp := sha256.Sum256(append([]byte(ev.id+"\n"), canon...))
	o := newOrder{id: newOrderID(), channelID: ch.id, key: key, fingerprint: hex.EncodeToString(fp[:16]),
		eventID: ev.id, buyer: b, p: p}

	rctx, cancel := reqCtx()
	defer cancel()
	res, err := a.reserve(rctx, &o)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, res)
}

var lowerB32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newOrderID is "o" and 24 random base32 characters, the length of ticketd's.
func newOrderID() string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return "o" + lowerB32.EncodeToString(b)
}

type newOrder struct {
	id, channelID, key, fingerprint, eventID string
	buyer                                    checkout.Buyer
	p                                        priced
}

// reserve runs the capacity check and then the insert. The check is a plain
// read: reserve claims nothing, so it takes no lock; confirm re-checks under
// row locks.
func (a *app) reserve(ctx context.Context, o *newOrder) (reserveView, error) {
	if e, err := a.checkCapacity(ctx, o); err != nil {
		return reserveView{}, err
	} else if e != nil {
		// A retried reserve whose stock sold out since still gets its order.
		if v, found, err := a.replay(ctx, o); err != nil || found {
			return v, err
		}
		return reserveView{}, e
	}
	// One statement, so one implicit transaction and one round trip: the
	// order and its lines, or nothing if the key was used before.
	pos := make([]int32, len(o.p.lines))
	tids := make([]string, len(o.p.lines))
	names := make([]string, len(o.p.lines))
	qtys := make([]int64, len(o.p.lines))
	prices := make([]int64, len(o.p.lines))
	for i, l := range o.p.lines {
		pos[i], tids[i], names[i], qtys[i], prices[i] = int32(i), l.ticketID, l.name, l.quantity, int64(l.price)
	}
	tag, err := a.pool.Exec(ctx, `
		WITH o AS (
			INSERT INTO baseline.orders (id, channel_id, idempotency_key, fingerprint, event_id, total_cents,
				buyer_name, buyer_email, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + $9 * interval '1 millisecond')
			ON CONFLICT (channel_id, idempotency_key) DO NOTHING
			RETURNING id)
		INSERT INTO baseline.order_lines (order_id, pos, ticket_type_id, name, quantity, unit_price_cents)
		SELECT o.id, l.pos, l.tid, l.name, l.qty, l.price
		FROM o, unnest($10::int[], $11::text[], $12::text[], $13::bigint[], $14::bigint[]) AS l(pos, tid, name, qty, price)`,
		o.id, o.channelID, o.key, o.fingerprint, o.eventID, int64(o.p.total), o.buyer.Name, o.buyer.Email,
		a.orderTTL.Milliseconds(), pos, tids, names, qtys, prices)
	if err != nil {
		return reserveView{}, fmt.Errorf("reserve: insert order: %w", err)
	}
	if tag.RowsAffected() > 0 {
		return reserveView{OrderID: o.id, Amount: o.p.total, Currency: "USD"}, nil
	}
	v, found, err := a.replay(ctx, o)
	if err == nil && !found {
		err = errors.New("reserve: idempotency key conflicted but no order holds it")
	}
	return v, err
}

// checkCapacity compares the cart with what is left (capacity - sold) at
// event level first, then per ticket type in id order, the order ticketd
// checks its counters in, so both name the same sold-out field with
// ticketd's own codes (orders.CapacityError).
func (a *app) checkCapacity(ctx context.Context, o *newOrder) (*apierr.Error, error) {
	ids := make([]string, len(o.p.lines))
	for i, l := range o.p.lines {
		ids[i] = l.ticketID
	}
	rows, err := a.pool.Query(ctx, `
		SELECT e.capacity - e.sold, t.id, t.capacity - t.sold
		FROM baseline.events e JOIN baseline.ticket_types t ON t.event_id = e.id
		WHERE e.id = $1 AND t.id = ANY($2)`, o.eventID, ids)
	if err != nil {
		return nil, fmt.Errorf("reserve: read capacity: %w", err)
	}
	var evLeft *int64
	left := make(map[string]int64, len(ids))
	for rows.Next() {
		var tid string
		var n int64
		if err := rows.Scan(&evLeft, &tid, &n); err != nil {
			return nil, fmt.Errorf("reserve: read capacity: %w", err)
		}
		left[tid] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reserve: read capacity: %w", err)
	}
	if evLeft != nil && o.p.admissions > *evLeft {
		return orders.CapacityError("ev", *evLeft), nil
	}
	sorted := append([]line(nil), o.p.lines...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ticketID < sorted[j].ticketID })
	for _, l := range sorted {
		n, ok := left[l.ticketID]
		if !ok { // removed from the database behind the snapshot's back
			return apierr.Of("TICKET_NOT_FOUND", "ticket %q is not on sale for this event", l.ticketID), nil
		}
		if l.quantity > n {
			return orders.CapacityError(capacity.TicketField(l.ticketID), n), nil
		}
	}
	return nil, nil
}

// replay answers a reserve whose Idempotency-Key was used before.
func (a *app) replay(ctx context.Context, o *newOrder) (reserveView, bool, error) {
	var id, fp string
	var total int64
	err := a.pool.QueryRow(ctx, `
		SELECT id, fingerprint, total_cents FROM baseline.orders WHERE channel_id = $1 AND idempotency_key = $2`,
		o.channelID, o.key).Scan(&id, &fp, &total)
	if errors.Is(err, pgx.ErrNoRows) {
		return reserveView{}, false, nil
	}
	if err != nil {
		return reserveView{}, false, fmt.Errorf("reserve: read replayed order: %w", err)
	}
	if fp != o.fingerprint {
		return reserveView{}, true, orders.ErrKeyConflict
	}
	return reserveView{OrderID: id, Amount: money.Cents(total), Currency: "USD", Duplicate: true}, true, nil
}
