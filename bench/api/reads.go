package api

import (
	"context"
	"fmt"
	"net/url"

	"github.com/ticketd/ticketd/inventory/money"
)

// Remaining is what an event's detail says is left: per ticket type and,
// when the event has a capacity, for the event.
type Remaining struct {
	Tickets map[string]int64
	// Event is nil when the event has no event-level capacity.
	Event *int64
}

// Remaining reads GET /v1/channel/events/{id}.
func (c *Client) Remaining(ctx context.Context, key Key, eventID string) (Remaining, error) {
	var d struct {
		Remaining *int64 `json:"remaining"`
		Tickets   []struct {
			ID        string `json:"id"`
			Remaining *int64 `json:"remaining"`
		} `json:"tickets"`
	}
	if err := c.Do(ctx, "GET", "/v1/channel/events/"+url.PathEscape(eventID), &key, nil, nil, &d); err != nil {
		return Remaining{}, err
	}
	r := Remaining{Tickets: map[string]int64{}, Event: d.Remaining}
	for _, t := range d.Tickets {
		if t.Remaining == nil {
			return Remaining{}, fmt.Errorf("api: event %s: ticket %s has no remaining count", eventID, t.ID)
		}
		r.Tickets[t.ID] = *t.Remaining
	}
	return r, nil
}

// Availability is the seat picker's view of a seated event.
type Availability struct {
	Held   []string `json:"held"`
	Booked []string `json:"booked"`
}

// Availability reads GET /v1/channel/seating/events/{id}/availability.
func (c *Client) Availability(ctx context.Context, key Key, eventID string) (Availability, error) {
	var a Availability
	err := c.Do(ctx, "GET", "/v1/channel/seating/events/"+url.PathEscape(eventID)+"/availability", &key, nil, nil, &a)
	return a, err
}

// OrderStatus is the answer of POST /v1/channel/orders/status.
type OrderStatus struct {
	OrderID string      `json:"orderId"`
	Status  string      `json:"status"`
	Amount  money.Cents `json:"amount"`
}

// Status reads an order's authoritative state.
func (c *Client) Status(ctx context.Context, key Key, orderID string) (OrderStatus, error) {
	var s OrderStatus
	err := c.Do(ctx, "POST", "/v1/channel/orders/status", &key, nil, map[string]string{"orderId": orderID}, &s)
	return s, err
}

// BaselineStats is the baseline server's own record of an event.
type BaselineStats struct {
	PaidOrders int64            `json:"paidOrders"`
	Tickets    int64            `json:"tickets"`
	Sold       map[string]int64 `json:"sold"`
}

// BaselineStats reads GET /v1/baseline/stats/{eventId} of the baseline server.
func (c *Client) BaselineStats(ctx context.Context, eventID string) (BaselineStats, error) {
	var s BaselineStats
	err := c.Do(ctx, "GET", "/v1/baseline/stats/"+url.PathEscape(eventID), nil,
		map[string]string{"Authorization": "Bearer " + c.AdminToken}, nil, &s)
	return s, err
}
