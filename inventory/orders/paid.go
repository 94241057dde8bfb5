package orders

import (
	"errors"
	"fmt"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/keys"
)

// DecodePaid reads a paid-stream entry (its fields) as the paid order it
// carries, checked against what order_confirm.lua writes:
// order <id> rec <Record JSON> ref <partner reference> paidAt <ms>.
func DecodePaid(fields map[string]string) (Record, error) {
	var rec Record
	for _, f := range []string{StreamOrderID, StreamRecord, StreamRef, StreamPaidAt} {
		if _, ok := fields[f]; !ok {
			return rec, fmt.Errorf("missing field %q", f)
		}
	}
	if err := json.Unmarshal([]byte(fields[StreamRecord]), &rec); err != nil {
		return rec, fmt.Errorf("field %q is not an order record: %w", StreamRecord, err)
	}
	if tix, ok := fields[StreamTickets]; ok && len(rec.Tickets) == 0 {
		if err := json.Unmarshal([]byte(tix), &rec.Tickets); err != nil {
			return rec, fmt.Errorf("field %q is not a ticket list: %w", StreamTickets, err)
		}
	}
	// Reserve leaves the order and event ids out of the record: the
	// entry's order id carries both. A record that names them must agree.
	id := fields[StreamOrderID]
	ev, ok := keys.OrderEvent(id)
	if !ok {
		return rec, fmt.Errorf("field %q = %q is not an order id", StreamOrderID, id)
	}
	if rec.OrderID == "" {
		rec.OrderID = id
	}
	if rec.EventID == "" {
		rec.EventID = ev
	}
	if rec.OrderID != id || rec.EventID != ev {
		return rec, fmt.Errorf("record orderId %q, eventId %q do not match field %q = %q", rec.OrderID, rec.EventID, StreamOrderID, id)
	}
	if rec.TenantID == "" {
		return rec, errors.New("record has no tenantId")
	}
	paidAt, err := strconv.ParseInt(fields[StreamPaidAt], 10, 64)
	if err != nil || paidAt <= 0 {
		return rec, fmt.Errorf("field %q = %q is not a time in milliseconds", StreamPaidAt, fields[StreamPaidAt])
	}
	rec.PaidAtMs = paidAt
	rec.PartnerReference = fields[StreamRef]
	if rec.CreatedAtMs <= 0 {
		rec.CreatedAtMs = paidAt
	}
	return rec, nil
}
