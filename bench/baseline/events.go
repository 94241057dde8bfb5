package main

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/money"
)

type ticketLeft struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Price     money.Cents `json:"price"`
	Currency  string      `json:"currency"`
	Remaining int64       `json:"remaining"`
}

type eventLeft struct {
	ID        string       `json:"id"`
	Remaining *int64       `json:"remaining,omitempty"` // omitted when the event has no cap
	Tickets   []ticketLeft `json:"tickets"`
}

// eventDetail is GET /v1/channel/events/{id}: what is left, read from the
// counters confirm claims, so the bench checks both servers the same way.
func (a *app) eventDetail(ctx *fasthttp.RequestCtx, s *snapshot, _ *channel) {
	id, _ := ctx.UserValue("id").(string)
	if s.events[id] == nil {
		httpx.Fail(ctx, errEventNotFound)
		return
	}
	rctx, cancel := reqCtx()
	defer cancel()
	rows, err := a.pool.Query(rctx, `
		SELECT e.capacity - e.sold, t.id, t.name, t.price_cents, t.capacity - t.sold
		FROM baseline.events e JOIN baseline.ticket_types t ON t.event_id = e.id
		WHERE e.id = $1 ORDER BY t.id`, id)
	if err != nil {
		httpx.Error(ctx, fmt.Errorf("event detail: %w", err))
		return
	}
	v := eventLeft{ID: id, Tickets: []ticketLeft{}}
	for rows.Next() {
		t := ticketLeft{Currency: "USD"}
		var price int64
		if err := rows.Scan(&v.Remaining, &t.ID, &t.Name, &price, &t.Remaining); err != nil {
			httpx.Error(ctx, fmt.Errorf("event detail: %w", err))
			return
		}
		t.Price = money.Cents(price)
		v.Tickets = append(v.Tickets, t)
	}
	if err := rows.Err(); err != nil {
		httpx.Error(ctx, fmt.Errorf("event detail: %w", err))
		return
	}
	httpx.OK(ctx, v)
}

type statsView struct {
	PaidOrders int64            `json:"paidOrders"`
	Tickets    int64            `json:"tickets"`
	Sold       map[string]int64 `json:"sold"`
}

// stats is GET /v1/baseline/stats/{id}, for the bench's integrity check. It
// counts issued ticket rows rather than reading the sold counters, so it
// checks the counters against what was actually sold. It needs no key: it
// is a bench probe, not part of the partner API.
func (a *app) stats(ctx *fasthttp.RequestCtx) {
	id, _ := ctx.UserValue("id").(string)
	if a.cat.Load().events[id] == nil {
		httpx.Fail(ctx, errEventNotFound)
		return
	}
	rctx, cancel := reqCtx()
	defer cancel()
	v := statsView{Sold: map[string]int64{}}
	err := a.pool.QueryRow(rctx, `SELECT count(*) FROM baseline.orders WHERE event_id = $1 AND status = 'paid'`, id).Scan(&v.PaidOrders)
	if err != nil {
		httpx.Error(ctx, fmt.Errorf("stats: %w", err))
		return
	}
	rows, err := a.pool.Query(rctx, `
		SELECT t.id, count(k.id) FROM baseline.ticket_types t
		LEFT JOIN baseline.tickets k ON k.event_id = t.event_id AND k.ticket_type_id = t.id
		WHERE t.event_id = $1 GROUP BY t.id`, id)
	if err != nil {
		httpx.Error(ctx, fmt.Errorf("stats: %w", err))
		return
	}
	for rows.Next() {
		var tid string
		var n int64
		if err := rows.Scan(&tid, &n); err != nil {
			httpx.Error(ctx, fmt.Errorf("stats: %w", err))
			return
		}
		v.Sold[tid] = n
		v.Tickets += n
	}
	if err := rows.Err(); err != nil {
		httpx.Error(ctx, fmt.Errorf("stats: %w", err))
		return
	}
	httpx.OK(ctx, v)
}
