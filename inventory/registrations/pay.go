package registrations

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
)

// Pay books a payment: awaiting payment -> confirmed; after the window it
// claims anew, or the registration becomes refund_required.
//
// A payment is taken only for a checkout session ticketd opened for the
// registration (AttachSession), of its total in USD: any other (a session
// id ticketd never opened for it, another registration's, a wrong amount or
// currency) is refused with PaymentRefused, logged, and changes nothing:
// the registration is neither paid nor sent to a refund, and keeps its
// hold. A second payment of a
// confirmed registration leaves it confirmed and comes back with
// RefundReason "already_paid". A payment of a registration of a cancelled
// event (s.Event) needs a refund ("cancelled"), and a held one gives its
// hold back. A registration ticketd knows nowhere (lost with Redis' state,
// or aged out of both Redis and Postgres) comes back refund_required,
// Reason "lost", and a tombstone makes later reads say so.
func (s *Service) Pay(ctx context.Context, p Payment) (Outcome, error) {
	return s.PayMarked(ctx, p, Mark{})
}

// PayMarked is Pay that writes m with a booked payment (Outcome.Marked);
// the zero Mark writes nothing.
func (s *Service) PayMarked(ctx context.Context, p Payment, m Mark) (Outcome, error) {
	id := p.RegistrationID
	ev, ok := keys.OrderEvent(id)
	if !ok {
		return Outcome{}, ErrNotFound
	}
	if !validName(p.Processor) {
		return Outcome{}, fmt.Errorf("pay %s: processor %q not usable", id, p.Processor)
	}
	// The payment id and currency come from the processor's webhook body
	// and are stored in Postgres with the order or the refund: one ticketd
	// cannot store (a NUL, which Postgres refuses after the sale, sent the
	// paid order to dead_letters) is that request's fault, a 400, not a
	// 503 the processor would retry for days (found by FuzzWebhooksHTTP).
	if p.PaymentID == "" || len(p.PaymentID) > 255 || !utf8.ValidString(p.PaymentID) ||
		strings.ContainsAny(p.PaymentID, " \t\r\n") || checkout.HasControl(p.PaymentID) {
		return Outcome{}, apierr.Invalid("the payment id must be 1 to 255 printable characters without whitespace")
	}
	if !currencyCode(p.Currency) {
		return Outcome{}, apierr.Invalid("the currency must be a three-letter ISO 4217 code")
	}
	ref := p.Processor + ":" + p.PaymentID
	arr, err := s.runPay(ctx, ev, id, ref, p, m)
	if err != nil {
		return Outcome{}, fmt.Errorf("pay %s: %w", id, err)
	}
	switch code, _ := reply.Of(arr); code {
	case reply.OK:
		dup, _ := eval.Int(arr, 1)
		re, _ := eval.Int(arr, 2)
		if err := s.Orders.ReportPaid(ev, arr, 4); err != nil {
			return Outcome{}, err
		}
		return s.outcome(ctx, id, arr, payView, Outcome{Duplicate: dup == 1, Reclaimed: re == 1, Marked: m.Key != ""})
	case reply.NotFound:
		return s.payUnknown(ctx, id, ref, p)
	case reply.Unpayable:
		reason, _ := eval.Str(arr, 1)
		dup, _ := eval.Int(arr, 2)
		return s.outcome(ctx, id, arr, unpayableView, Outcome{Duplicate: dup == 1, RefundReason: reason})
	case reply.Stopped:
		return Outcome{}, redisstate.ErrSalesStopped
	case reply.PaymentRefused:
		why, _ := eval.Str(arr, 1)
		if why == "session" {
			// Never the session id: on a test processor it is what pays.
			s.logger().Warn("registrations: a payment ticketd did not open for this registration is refused; nothing changed",
				"registration", id, "processor", p.Processor, "reason", why)
		} else {
			// A session ticketd opened reported another amount or currency:
			// the processor took money that books nothing. The operator
			// refunds it by its payment id.
			s.logger().Error("registrations: a payment of a session ticketd opened is not the registration's total in USD; "+
				"refused, nothing booked: refund it through the processor",
				"registration", id, "processor", p.Processor, "payment", p.PaymentID, "reason", why,
				"amount", p.Amount.String(), "currency", strings.ToUpper(p.Currency))
		}
		return Outcome{}, PaymentRefused(why)
	default:
		return Outcome{}, fmt.Errorf("pay %s: %w: code %d", id, eval.ErrReply, code)
	}
}

// runPay runs reg_pay: every key is the event's, whatever the
// registration's seats and discount code (the script reads them from its
// hash).
func (s *Service) runPay(ctx context.Context, ev, id, ref string, p Payment, m Mark) ([]rueidis.RedisMessage, error) {
	okey, _ := s.Space.Order(id)
	part := keys.Partition(ev)
	ks := []string{okey, s.Space.Caps(ev), s.Space.Sold(ev), s.Space.Booked(ev), s.Space.DiscountHolds(ev),
		s.Space.DiscountUsed(ev), s.Space.Paid(part), s.Space.Live(part), s.Space.Buyers(ev), s.Space.Expiry(part),
		s.Space.Unpaid(ev), s.Space.IPRegistrations(ev), s.Space.SeatHolds(ev), s.Space.OrderSeats(ev), s.Space.RegSeats(ev),
		s.Space.DiscountHeld(ev), s.Space.Room(ev)}
	cancelled := "0"
	if _, c, ok := s.event(ev); ok && c {
		cancelled = "1"
	}
	args := []string{id, ref, strconv.FormatInt(int64(p.Amount), 10),
		strings.ToUpper(p.Currency), strconv.FormatInt(s.StreamCap, 10), ms(s.retention()), cancelled}
	if m.Key != "" {
		ks = append(ks, m.Key)
		args = append(args, m.Value, ms(m.TTL))
	}
	return s.replication().Array(ctx, s.Redis, payScript, ks, args, orders.Paid)
}

// Where reg_pay's reply carries the registration as the payment left it
// (lib/regview, reg_status' reply): after an OK's six elements, an
// UNPAYABLE's three.
const (
	payView       = 6
	unpayableView = 3
)

// outcome is o with the registration a payment changed: arr's element at,
// reg_pay's view of it.
func (s *Service) outcome(ctx context.Context, id string, arr []rueidis.RedisMessage, at int, o Outcome) (Outcome, error) {
	var view []rueidis.RedisMessage
	if at < len(arr) {
		view, _ = arr[at].ToArray()
	}
	reg, found, err := s.parseStatus(ctx, id, view, nil)
	if err != nil {
		return Outcome{}, err
	}
	if !found {
		return Outcome{}, fmt.Errorf("pay %s: the registration went while it was paid", id)
	}
	if o.RefundReason != "" && reg.BuyerEmail == "" && s.Archive != nil {
		// The worker dropped the record from the hash once Postgres had
		// it: the refund notice needs the buyer from there.
		if a, ok, err := s.Archive.Order(ctx, id); err == nil && ok {
			reg.BuyerName, reg.BuyerEmail = a.BuyerName, a.BuyerEmail
		}
	}
	o.Registration = reg
	return o, nil
}

// payUnknown answers a payment of a registration Redis does not hold:
// Postgres may have it (paid, aged out of Redis); else it is lost. The
// tenant is the payment's or, as webhooks do not know it, the event's in
// the catalog: when known, only an id ticketd minted for it is taken.
func (s *Service) payUnknown(ctx context.Context, id, ref string, p Payment) (Outcome, error) {
	reg, found, err := s.archived(ctx, id)
	if err != nil {
		return Outcome{}, fmt.Errorf("pay %s: %w", id, err)
	}
	if found {
		o := Outcome{Registration: reg, Duplicate: reg.Processor+":"+reg.SessionID == ref}
		if !o.Duplicate {
			o.RefundReason = "already_paid"
		}
		return o, nil
	}
	ev, _ := keys.OrderEvent(id)
	tenant := p.TenantID
	if tenant == "" {
		tenant, _, _ = s.event(ev)
	}
	if tenant != "" && (s.Orders == nil || !s.Orders.Minted(id, Owner(tenant))) {
		return Outcome{}, ErrNotFound // not an id ticketd made for this tenant
	}
	okey, _ := s.Space.Order(id)
	arr, err := eval.Array(ctx, s.Redis, lostScript, []string{okey},
		[]string{Owner(tenant), ref, strconv.FormatInt(int64(p.Amount), 10), ms(s.retention())})
	if err != nil {
		return Outcome{}, fmt.Errorf("pay %s: %w", id, err)
	}
	if !reply.Is(arr, reply.OK) {
		// Something else (a partner order) has this id.
		return Outcome{}, ErrNotFound
	}
	s.logger().Warn("registrations: a payment came for a registration ticketd no longer knows; it needs a refund",
		"registration", id, "processor", p.Processor)
	return Outcome{RefundReason: "lost", Registration: Registration{ID: id, EventID: ev, TenantID: tenant,
		Status: StatusRefundRequired, PaymentStatus: PaymentRefundRequired, Reason: "lost",
		Paid: p.Amount, Currency: "USD", Processor: p.Processor, SessionID: p.PaymentID}}, nil
}

// currencyCode reports whether c has the shape of an ISO 4217 code, in
// either case ("USD", Stripe's "usd").
func currencyCode(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if x := c[i] | 0x20; x < 'a' || x > 'z' {
			return false
		}
	}
	return true
}
