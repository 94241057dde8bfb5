package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
)

// DecodePaid reads a paid-stream entry (its fields) as the paid order it
// carries, checked against what order_confirm.lua writes:
// order <id> rec <Record JSON> ref <partner reference> paidAt <ms>.
func DecodePaid(fields map[string]string) (Record, error) {
	var rec Record
	for _, f := range []string{StreamOrderID, StreamRef, StreamPaidAt} {
		if _, ok := fields[f]; !ok {
			return rec, fmt.Errorf("missing field %q", f)
		}
	}
	if _, ok := fields[StreamRecord]; !ok {
		return rec, errors.New("the order's record is neither in the entry nor in the order hash")
	}
	// The lines are kept as Encode spelt them (LinesJSON) as well as
	// decoded: the outer field takes "lines" from the embedded one.
	var d struct {
		Record
		Lines json.RawMessage `json:"lines"`
	}
	if err := json.Unmarshal([]byte(fields[StreamRecord]), &d); err != nil {
		return rec, fmt.Errorf("field %q is not an order record: %w", StreamRecord, err)
	}
	rec = d.Record
	if len(d.Lines) > 0 && string(d.Lines) != "null" {
		if err := json.Unmarshal(d.Lines, &rec.Lines); err != nil {
			return rec, fmt.Errorf("field %q is not an order record: lines: %w", StreamRecord, err)
		}
		rec.LinesJSON = string(d.Lines)
	}
	if tix, ok := fields[StreamTickets]; ok && len(rec.Tickets) == 0 {
		if err := json.Unmarshal([]byte(tix), &rec.Tickets); err != nil {
			return rec, fmt.Errorf("field %q is not a ticket list: %w", StreamTickets, err)
		}
		rec.TicketsJSON = tix
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

// FillRecords gives every paid-stream entry (its fields) that does not
// carry its order's record the record and tickets its order hash holds,
// reading all hashes in one round trip. An entry whose hash has lost them
// stays without (DecodePaid then says so); so does one without an order id.
func FillRecords(ctx context.Context, rc rueidis.Client, space keys.Space, entries []map[string]string) error {
	var cmds rueidis.Commands
	var at []map[string]string
	for _, f := range entries {
		if f == nil {
			continue
		}
		if _, ok := f[StreamRecord]; ok {
			continue
		}
		okey, ok := space.Order(f[StreamOrderID])
		if !ok {
			continue
		}
		cmds = append(cmds, rc.B().Hmget().Key(okey).Field(StreamRecord, StreamTickets).Build())
		at = append(at, f)
	}
	if len(cmds) == 0 {
		return nil
	}
	for i, r := range rc.DoMulti(ctx, cmds...) {
		vals, err := r.ToArray()
		if err != nil {
			return fmt.Errorf("orders: read paid records: %w", err)
		}
		for j, name := range []string{StreamRecord, StreamTickets} {
			if j < len(vals) && !vals[j].IsNil() {
				if v, err := vals[j].ToString(); err == nil {
					at[i][name] = v
				}
			}
		}
	}
	return nil
}
