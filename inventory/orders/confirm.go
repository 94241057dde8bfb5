package orders

import (
	"context"
	"fmt"
	"strconv"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
)

// Tolerance is how far a charged amount may differ from the order total.
const Tolerance = money.Cents(1)

// Confirmation is the answer to a successful confirm.
type Confirmation struct {
	OrderID   string   `json:"orderId"`
	Status    string   `json:"status"`
	Tickets   []Ticket `json:"tickets"`
	Duplicate bool     `json:"duplicate,omitempty"`
}

var confirmScript = eval.Load("order_confirm")

// ErrNotFound is the answer for an order that is not the caller's.
var ErrNotFound = apierr.Of("NOT_FOUND", "no such order for this caller")

// AmountMismatch is a confirm's AMOUNT_MISMATCH: the charged amount is not
// the order's total, which the reply carries as serverTotal.
func AmountMismatch(total money.Cents) *apierr.Error {
	return apierr.Of("AMOUNT_MISMATCH", "charged amount differs from the order total %s; refund and re-quote", total).
		With("serverTotal", total)
}

// ConfirmFailed is the 409 telling the partner to refund.
func ConfirmFailed(reason string) *apierr.Error {
	msg := map[string]string{
		"failed":       "the order has failed",
		"expired":      "the order expired before it was confirmed",
		"cancelled":    "the organiser cancelled the event",
		"sold_out":     "the inventory of this order sold out meanwhile",
		"seat_lost":    "a seat of this order was lost",
		"already_paid": "the order was already paid under another partnerReference; this charge is not needed",
		"buyer_limit":  "the buyer reached the event's maxTicketsPerBuyer meanwhile",
		"lost":         "ticketd no longer knows this order: it was lost with Redis' state, or expired long ago",
	}[reason]
	if msg == "" {
		msg = "the order cannot be confirmed"
	}
	return apierr.Of("CONFIRM_FAILED", "%s; refund the buyer, no ticket was issued", msg).WithReason(reason).With("refundRequired", true)
}

// ConfirmRequest is a partner's confirm of a charge it took.
type ConfirmRequest struct {
	ChannelID string
	OrderID   string
	Amount    money.Cents
	Reference string // the partner's reference of the charge
	// EventCancelled fails a pending order instead of paying it.
	EventCancelled bool
}

// Confirm marks a pending order of the caller's channel paid, claiming its
// inventory. It is idempotent: confirming a paid order again with the same
// reference answers the same tickets with Duplicate set.
func (s *Service) Confirm(ctx context.Context, req ConfirmRequest) (Confirmation, error) {
	orderID := req.OrderID
	ev, ok := keys.OrderEvent(orderID)
	if !ok {
		return Confirmation{}, ErrNotFound
	}
	// Every key is the event's, whatever the order's seats and discount
	// code: the script reads them from the order hash.
	arr, err := s.runConfirm(ctx, ev, req)
	if err != nil {
		return Confirmation{}, fmt.Errorf("confirm: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return Confirmation{}, err
	}
	switch code {
	case reply.OK:
		dup, _ := eval.Int(arr, 1)
		tix, _ := eval.Str(arr, 2)
		if err := s.ReportPaid(ev, arr, 3); err != nil {
			return Confirmation{}, err
		}
		c := Confirmation{OrderID: orderID, Status: StatusPaid, Duplicate: dup == 1}
		if err := json.Unmarshal([]byte(tix), &c.Tickets); err != nil {
			return Confirmation{}, fmt.Errorf("confirm: %w: tickets: %v", eval.ErrReply, err)
		}
		return c, nil
	case reply.NotFound:
		return Confirmation{}, ErrNotFound
	case reply.Unpayable:
		reason, _ := eval.Str(arr, 1)
		return Confirmation{}, ConfirmFailed(reason)
	case reply.AmountMismatch:
		total, _ := eval.Int(arr, 1)
		return Confirmation{}, AmountMismatch(money.Cents(total))
	case reply.Stopped:
		return Confirmation{}, redisstate.ErrSalesStopped
	}
	return Confirmation{}, reply.Unexpected("confirm", code)
}

func (s *Service) runConfirm(ctx context.Context, ev string, req ConfirmRequest) ([]rueidis.RedisMessage, error) {
	okey, _ := s.Space.Order(req.OrderID)
	ks := withOrder(s.keysOf(ev, false).confirm, okey, 0)
	cancelled := "0"
	if req.EventCancelled {
		cancelled = "1"
	}
	return s.Replication.Array(ctx, s.Redis, confirmScript, ks, []string{
		req.OrderID, req.ChannelID, strconv.FormatInt(int64(req.Amount), 10), strconv.FormatInt(int64(Tolerance), 10),
		req.Reference, cancelled, strconv.FormatInt(s.StreamCap, 10)}, Paid)
}

// Paid says a paying script's reply is {OK, …}: the order is paid, now or
// by an earlier run (order_confirm, reg_pay).
func Paid(arr []rueidis.RedisMessage) bool { return reply.Is(arr, reply.OK) }

// Order states.
const (
	StatusPending = "pending"
	StatusPaid    = "paid"
	StatusFailed  = "failed"
)

// State is an order's authoritative state.
type State struct {
	OrderID   string
	Status    string
	Amount    money.Cents
	ChannelID string
	// Caller is who reserved it ("ch:<channel>" or "ss:<session>"); empty
	// for orders Postgres holds from before it kept it.
	Caller    string
	ExpiresAt time.Time
	// PartnerReference is the charge a paid order was confirmed with; set
	// for orders read back from Postgres.
	PartnerReference string
	// BuyerName and BuyerEmail are set for orders read back from Postgres
	// (a refund notice of a registration Redis no longer holds needs them).
	BuyerName, BuyerEmail string
	// ShowingID is the showing a sale was for, set for orders read back
	// from Postgres ("" for an event without showings).
	ShowingID string
}

// Archive is the record of paid orders that outlives their Redis copies
// (Postgres). Status and confirm replays ask it for orders Redis no longer
// has.
type Archive interface {
	Order(ctx context.Context, orderID string) (State, bool, error)
	Tickets(ctx context.Context, orderID string) ([]Ticket, error)
}

var statusScript = eval.Load("order_status")

// Status reads an order from Redis. found is false when Redis no longer (or
// never) had it; the caller may then ask Postgres.
func (s *Service) Status(ctx context.Context, orderID string) (st State, found bool, err error) {
	okey, ok := s.Space.Order(orderID)
	if !ok {
		return State{}, false, nil
	}
	arr, err := eval.Array(ctx, s.Redis, statusScript, []string{okey}, nil)
	if err != nil {
		return State{}, false, fmt.Errorf("status: %w", err)
	}
	if c, err := reply.Of(arr); err != nil || c == reply.NotFound {
		return State{}, false, err
	}
	st.OrderID = orderID
	st.Status, _ = eval.Str(arr, 1)
	total, _ := eval.Int(arr, 2)
	st.Amount = money.Cents(total)
	st.ChannelID, _ = eval.Str(arr, 3)
	exp, _ := eval.Int(arr, 4)
	now, _ := eval.Int(arr, 5)
	st.Caller, _ = eval.Str(arr, 6)
	st.ExpiresAt = time.UnixMilli(exp)
	if st.Status == StatusPending && now >= exp {
		st.Status = StatusFailed
	}
	return st, true, nil
}
