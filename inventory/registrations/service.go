package registrations

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/along"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/checkout"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/roompass"
	"github.com/ticketd/ticketd/inventory/seats"
)

// Service runs the registration scripts (lua/reg_*.lua) on the Redis state
// the partner surface sells from.
type Service struct {
	Redis rueidis.Client
	Space keys.Space
	// Orders mints the registration ids (orders.Service.NewID, owner
	// "sf:<tenant>"), so its IDKey tells ticketd's ids from others.
	Orders *orders.Service
	// CheckoutTTL is the checkout window of a paid registration once a
	// checkout session is opened for it, counted from the registration
	// (TICKETD_CHECKOUT_TTL, default 15m).
	CheckoutTTL time.Duration
	// HoldTTL is how long a paid registration holds its inventory until a
	// checkout session is opened for it (TICKETD_REGISTER_HOLD_TTL, default
	// 3m; never longer than CheckoutTTL).
	HoldTTL time.Duration
	// Retention is how long a registration stays in Redis once it is
	// expired, refunded, or paid and written to Postgres (default
	// orders.DefaultRetention).
	Retention time.Duration
	// StreamCap is orders.Service.StreamCap: 0 when a sync worker drains
	// the paid streams.
	StreamCap int64
	// Archive answers for paid registrations that aged out of Redis
	// (sync/orderdb); nil: Redis only.
	Archive orders.Archive
	// Expirer closes checkout sessions for Run's sweeps; nil: none are
	// attached (free and test setups).
	Expirer Expirer
	// Grace is how much longer a registration whose session the processor
	// reports paid keeps its hold, once (default 10m).
	Grace time.Duration
	// ExpireTimeout bounds each call to the Expirer (default 5s): a
	// processor that hangs delays the sweep of its registration, not the
	// others'.
	ExpireTimeout time.Duration
	// Event tells an event's tenant and whether it is cancelled (ok false:
	// the catalog does not know it); CatalogEvents builds it from the
	// catalog snapshot. nil: no event is cancelled, and a payment of a
	// registration ticketd knows nowhere has only Payment.TenantID.
	Event func(eventID string) (tenantID string, cancelled bool, ok bool)
	// Gate says whether the Redis state is current (redisstate.Monitor's
	// Gate): the sweeper does nothing while it answers an error, as a Redis
	// back from an older snapshot must give nothing back. nil: always.
	Gate   func() *apierr.Error
	Logger *slog.Logger
}

// CatalogEvents is a Service.Event reading the current catalog snapshot
// (catalogstore.Store.Current).
func CatalogEvents(current func() *catalog.Snapshot) func(string) (string, bool, bool) {
	return func(eventID string) (string, bool, bool) {
		snap := current()
		if snap == nil {
			return "", false, false
		}
		e := snap.Events[eventID]
		if e == nil || e.Event == nil {
			return "", false, false
		}
		return e.TenantID, e.Status == catalog.StatusCancelled, true
	}
}

// event is s.Event's answer, or nothing known.
func (s *Service) event(eventID string) (tenantID string, cancelled bool, ok bool) {
	if s.Event == nil {
		return "", false, false
	}
	return s.Event(eventID)
}

// Defaults of the Service's zero fields.
const (
	DefaultCheckoutTTL   = 15 * time.Minute
	DefaultHoldTTL       = 3 * time.Minute
	DefaultGrace         = 10 * time.Minute
	DefaultExpireTimeout = 5 * time.Second
	// MaxSessions bounds the checkout sessions one registration may open.
	MaxSessions = 10
)

func (s *Service) checkoutTTL() time.Duration { return orDefault(s.CheckoutTTL, DefaultCheckoutTTL) }
func (s *Service) retention() time.Duration   { return orDefault(s.Retention, orders.DefaultRetention) }
func (s *Service) grace() time.Duration       { return orDefault(s.Grace, DefaultGrace) }
func (s *Service) expireTimeout() time.Duration {
	return orDefault(s.ExpireTimeout, DefaultExpireTimeout)
}
func (s *Service) holdTTL() time.Duration {
	return min(orDefault(s.HoldTTL, DefaultHoldTTL), s.checkoutTTL())
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Owner is the order owner ("ch" field, minting owner) of a tenant's
// registrations (orders.StorefrontOwner).
func Owner(tenantID string) string { return orders.StorefrontOwner(tenantID) }

var ownerPrefix = orders.StorefrontOwner("")

// Source is the orders row source of a registration.
const Source = orders.SourceStorefront

var (
	registerScript = eval.Load("reg_register")
	payScript      = eval.Load("reg_pay")
	expireScript   = eval.Load("reg_expire")
	graceScript    = eval.Load("reg_grace")
	lostScript     = eval.Load("reg_lost")
	statusScript   = eval.Load("reg_status")
)

// Errors callers branch on.
var (
	ErrNotFound = apierr.Of("NOT_FOUND", "no such registration")
)

// NotPayable is the 409 of a checkout session asked for a registration that
// no longer awaits payment; reason is its state ("paid", "expired",
// "refund", "too_many_sessions").
func NotPayable(reason string) *apierr.Error {
	msg := map[string]string{
		"paid":              "the registration is paid already",
		"expired":           "the registration's checkout window has passed; register again",
		"refund":            "the registration needs a refund and can no longer be paid",
		"too_many_sessions": "too many checkout sessions were opened for this registration; register again",
	}[reason]
	if msg == "" {
		msg = "the registration cannot be paid"
	}
	return apierr.Of("REGISTRATION_NOT_PAYABLE", "%s", msg).WithReason(reason)
}

// replaceTries bounds how often one Register releases a registration of
// the same buyer and tries again: more means other registrations of the
// buyer are being made at the same time.
const replaceTries = 4

// errBuyerBusy answers a Register that kept finding a newer registration
// of its buyer: several are being made at once.
var errBuyerBusy = apierr.InProgress(
	"another registration for this e-mail address is being made for this event at the same time; try again in a moment")

// PaymentRefused is the 409 PAYMENT_MISMATCH of a payment that does not
// match what ticketd opened for the registration (Pay); reason is
// "session" (no checkout session ticketd opened for it), "amount" or
// "currency" (not the registration's total in USD), or "livemode" (a
// Stripe event of test mode in a live deployment, or the reverse).
func PaymentRefused(reason string) *apierr.Error {
	msg := map[string]string{
		"session":  "ticketd opened no such checkout session for this registration",
		"amount":   "the amount paid is not the registration's total",
		"currency": "the currency paid is not the registration's",
		"livemode": "the processor's event is of another mode (live or test) than this deployment's payments",
	}[reason]
	if msg == "" {
		msg = "the payment does not match the registration"
	}
	return apierr.Of("PAYMENT_MISMATCH", "payment refused: %s; nothing was booked", msg).WithReason(reason)
}

// Register creates a registration: a free one is confirmed at once (paid
// stream, tickets, e-mails through the worker); a paid one claims the
// cart's inventory for the register hold (HoldTTL, then the checkout
// window once a session is opened for it) and awaits payment.
//
// A buyer (normalised e-mail) has one registration awaiting payment per
// event: a paid one of a buyer who has one already releases that one first
// (replace), so a buyer who retries is never blocked; if that one was paid
// meanwhile, the new one is refused with PREVIOUS_REGISTRATION_PAID. It
// counts for req.Client until it leaves "held"; beyond the client's limit
// it is refused with HOLD_LIMIT_REACHED.
func (s *Service) Register(ctx context.Context, req Request) (Registration, error) {
	ev := req.EventID
	if !keys.ValidID(ev) || req.TenantID == "" {
		return Registration{}, apierr.Invalid("a registration needs an event and its tenant")
	}
	if e := s.Orders.HeldError(ev); e != nil {
		return Registration{}, e
	}
	q := req.Quote
	if len(q.SeatLabels) > 0 {
		if e := seats.CheckToken(req.HoldToken); e != nil {
			return Registration{}, e
		}
	}
	id := s.Orders.NewID(ev, Owner(req.TenantID))
	rec := s.record(req, id)
	tix := rec.Tickets
	recJSON, tixJSON, err := rec.Encode()
	if err != nil {
		return Registration{}, fmt.Errorf("register: %w", err)
	}
	okey, _ := s.Space.Order(id)
	p := keys.Partition(ev)
	rm := keys.RoomID(ev, req.ShowingID) // a showing's sale burns a pass of the showing's room
	pass := passArg(req)
	ks := append(s.Orders.SaleKeys(ev, okey, req.HoldToken, 9),
		s.Space.Expiry(p), s.Space.Paid(p), s.Space.Unpaid(ev), s.Space.IPRegistrations(ev), s.Space.IPTokens(ev, req.Client.Key))
	if pass != "" { // reg_register.lua reads the room's keys only to burn a pass
		ks = append(ks, s.Space.Room(ev), s.Space.RoomPlaces(rm), s.Space.RoomPasses(rm), s.Space.RoomAudit(rm))
	}
	buyer := orders.BuyerKey(req.Buyer.Email)
	free := "0"
	if q.Total == 0 {
		free = "1"
	}
	args := make([]string, 0, 16+2*len(q.Claims)+len(q.SeatLabels)+6)
	args = append(args, id, ms(s.holdTTL()), ms(s.retention()), req.HoldToken, q.DiscountCode,
		strconv.FormatInt(q.DiscountMaxUses, 10), strconv.FormatInt(max(req.MaxPerBuyer, 0), 10), buyer,
		strconv.FormatInt(q.Claims["ev"], 10), free, strconv.FormatInt(s.StreamCap, 10),
		ms(s.checkoutTTL()), req.Client.Key, req.Client.LimitArg(), pass)
	args, claims := orders.ClaimArgs(args, q.Claims, q.SeatLabels)
	owner := Owner(req.TenantID)
	args = orders.SaleFieldArgs(args, q.Total, owner, owner, claims, tixJSON, recJSON)
	reg := Registration{ID: id, EventID: ev, TenantID: req.TenantID, Total: q.Total, Currency: rec.Currency,
		ShowingID: rec.ShowingID, Lines: q.Lines, BuyerName: req.Buyer.Name, BuyerEmail: req.Buyer.Email}
	run := eval.Array
	if q.Total == 0 {
		// A free registration is paid as it is made: it is answered once
		// the replicas hold it, as a payment is.
		run = func(ctx context.Context, c rueidis.Client, sc *eval.Script, ks, args []string) ([]rueidis.RedisMessage, error) {
			return s.replication().ArrayPatient(ctx, c, sc, ks, args, confirmedFree, freePatience)
		}
	}
	var since int64 // Redis' time (us) when this Register first found an unpaid registration of its buyer
	for range replaceTries {
		arr, err := run(ctx, s.Redis, registerScript, ks, args)
		if err != nil {
			return Registration{}, fmt.Errorf("register: %w", err)
		}
		code, err := reply.Of(arr)
		if err != nil {
			return Registration{}, err
		}
		switch code {
		case reply.OK:
			exp, _ := eval.Int(arr, 1)
			reg.Status, reg.PaymentStatus, reg.ExpiresAt = StatusAwaitingPayment, PaymentUnpaid, time.UnixMilli(exp)
			// As the script counts it, from Redis' now (exp - the hold TTL).
			reg.PayBy = reg.ExpiresAt.Add(s.checkoutTTL() - s.holdTTL())
			return reg, nil
		case reply.Paid:
			if err := s.Orders.ReportPaid(ev, arr, 2); err != nil {
				return Registration{}, err
			}
			reg.Status, reg.PaymentStatus, reg.Tickets = StatusConfirmed, PaymentNotRequired, tix
			return reg, nil
		case reply.Exists:
			// A fresh id exists already: a collision of 72 random bits.
			return Registration{}, fmt.Errorf("register: %w: id %s exists", eval.ErrReply, id)
		case reply.BuyerUnpaid:
			prev, _ := eval.Str(arr, 1)
			if since == 0 {
				since, _ = eval.Int(arr, 2)
			}
			if err := s.replace(ctx, prev, buyer, since); err != nil {
				return Registration{}, err
			}
			continue // nothing was written: the same id runs again
		case reply.ClientLimit:
			return Registration{}, holds.LimitError(req.Client.Limit)
		}
		if err := roompass.Refusal(arr); err != nil {
			return Registration{}, err
		}
		if err := orders.RefusalError(arr); err != nil {
			return Registration{}, err
		}
		return Registration{}, reply.Unexpected("register", code)
	}
	return Registration{}, errBuyerBusy
}

// passArg is reg_register's ARGV[15]: the pass ("<queue id> <expiry ms>"),
// "@hold" when the hold token carries it, "" for none.
func passArg(req Request) string {
	if req.PassInHold {
		return "@hold"
	}
	return req.Pass.Arg()
}

// replication is the orders' (Orders.Replication): a payment waits for the
// same replicas a partner's confirm does.
func (s *Service) replication() *redisstate.Replication {
	if s.Orders == nil {
		return nil
	}
	return s.Orders.Replication
}

// freePatience is how long a free registration waits for the replicas
// (within its request's deadline) before its buyer is told to retry.
const freePatience = 3 * time.Second

// confirmedFree says reg_register's reply is {Paid, …}: a free
// registration, confirmed as it was made.
func confirmedFree(arr []rueidis.RedisMessage) bool { return reply.Is(arr, reply.Paid) }

// errPreviousPaid refuses a registration whose buyer's earlier one was
// paid while this one was made: its tickets are on their way.
var errPreviousPaid = apierr.Of("PREVIOUS_REGISTRATION_PAID",
	"this buyer has just paid for an earlier registration of this event, and its tickets are on their way by e-mail; "+
		"register again only to buy more")

// replace releases prev, a registration awaiting payment of the buyer
// (buyer key) who is registering again: its checkout sessions are closed
// first through s.Expirer, as the sweep closes them (one paid answers
// errPreviousPaid: the old registration is kept, its webhook is on its
// way), then everything it held is given back at once. A registration no
// longer held only leaves the buyer's unpaid slot.
//
// Only a registration made before since (Redis time in microseconds: when
// the calling Register first met one of its buyer) is released: one made
// meanwhile is another Register of the same buyer running at the same time
// (a double click), which wins; this one answers errBuyerBusy. So
// registers of one buyer at once never release each other in turn and end
// with one held.
func (s *Service) replace(ctx context.Context, prev, buyer string, since int64) error {
	okey, ok := s.Space.Order(prev)
	if !ok {
		return fmt.Errorf("register: %w: the buyer's unpaid registration %q is not a registration id", eval.ErrReply, prev)
	}
	for range replaceTries {
		vals, err := s.Redis.Do(ctx, s.Redis.B().Hmget().Key(okey).Field("sess", "at", "st").Build()).ToArray()
		if err != nil {
			return fmt.Errorf("register: replace %s: %w", prev, err)
		}
		sess, _ := vals[0].ToString()
		if at, err := vals[1].AsInt64(); err == nil && at > since {
			return errBuyerBusy
		}
		// Only a registration still held has sessions to close: one paid,
		// expired or refunded (the slot outlived it) is only taken out of
		// the buyer's slot, by the release below.
		if st, _ := vals[2].ToString(); st == "held" && sess != "" {
			if s.Expirer == nil {
				return fmt.Errorf("register: replace %s: it has checkout sessions and no processor can close them", prev)
			}
			paid, err := closeSessions(ctx, s.Expirer, sess, s.expireTimeout())
			if err != nil {
				s.logger().Warn("registrations: a processor could not close an earlier registration's checkout session",
					"registration", prev, "err", err)
				return payments.ErrProcessor
			}
			if paid {
				return errPreviousPaid
			}
		}
		code, err := s.expire(ctx, prev, "release", sess, buyer)
		if err != nil {
			return fmt.Errorf("register: replace: %w", err)
		}
		if code != reply.SessionsChanged {
			return nil // released, or no longer held
		}
		// A session was attached meanwhile: close it too.
	}
	return errBuyerBusy
}

// ReleaseStale gives back what a registration still held in Redis claims,
// without asking any processor: for the rebuild, which writes back as paid
// a registration an older snapshot of Redis still holds (its payment came
// after the snapshot). Its seats, discount hold, expiry entry, client
// count and buyer slot are released (its sold counts were taken under an
// older generation, so none are given back), so nothing it held outlives
// it. A registration not held is left alone but for its buyer's slot.
func (s *Service) ReleaseStale(ctx context.Context, id string) error {
	okey, ok := s.Space.Order(id)
	if !ok {
		return fmt.Errorf("release %q: not a registration id", id)
	}
	for range replaceTries {
		vals, err := s.Redis.Do(ctx, s.Redis.B().Hmget().Key(okey).Field("sess", "ub").Build()).ToArray()
		if err != nil {
			return fmt.Errorf("release %s: %w", id, err)
		}
		sess, _ := vals[0].ToString()
		buyer, _ := vals[1].ToString()
		code, err := s.expire(ctx, id, "release", sess, buyer)
		if err != nil || code != reply.SessionsChanged {
			return err
		}
	}
	return fmt.Errorf("release %s: its sessions keep changing", id)
}

// record is what the sync worker writes to Postgres once the registration
// is paid, its tickets' ids given (stored as Record.Encode stores it, as
// reserve stores a partner order's).
func (s *Service) record(req Request, id string) orders.Record {
	ev := &catalog.CompiledEvent{Event: &catalog.Event{ID: req.EventID, TenantID: req.TenantID}}
	rec := checkout.NewRecord(ev, req.Quote, req.Buyer,
		checkout.Origin{Source: Source, ShowingID: req.ShowingID})
	rec.Caller, rec.CreatedAtMs = Owner(req.TenantID), time.Now().UnixMilli()
	for i := range rec.Tickets {
		rec.Tickets[i].TicketID = orders.TicketID(id, i)
	}
	return rec
}

// Get reads a registration; found is false when ticketd does not know it.
func (s *Service) Get(ctx context.Context, id string) (Registration, bool, error) {
	return s.GetAlong(ctx, id, along.Along{})
}

// GetAlong is Get with a sent ahead of the read, in its round trip (the
// read's rate limit): a's refusal is the answer, whatever became of the
// read. Nothing is sent when id is not a registration id.
func (s *Service) GetAlong(ctx context.Context, id string, a along.Along) (reg Registration, found bool, err error) {
	okey, ok := s.Space.Order(id)
	if !ok {
		return Registration{}, false, nil
	}
	if err := a.Early(); err != nil {
		return Registration{}, false, err
	}
	read := eval.Pipeline(s.Redis, statusScript, []string{okey}, nil)
	rest, err := a.Split(s.Redis.DoMulti(ctx, a.With(read.Cmd)...))
	if err != nil {
		return Registration{}, false, err
	}
	arr, err := read.Reply(ctx, rest[0])
	return s.parseStatus(ctx, id, arr, err)
}

// parseStatus reads reg_status' reply arr (err: its failure) for id.
func (s *Service) parseStatus(ctx context.Context, id string, arr []rueidis.RedisMessage, err error) (reg Registration, found bool, _ error) {
	if err != nil {
		return Registration{}, false, fmt.Errorf("registration %s: %w", id, err)
	}
	if c, err := reply.Of(arr); err != nil || c == reply.NotFound {
		if err != nil {
			return Registration{}, false, err
		}
		return s.archived(ctx, id)
	}
	v := make([]string, 13)
	for i := range v {
		v[i], _ = eval.Str(arr, 2+i)
	}
	now, _ := eval.Int(arr, 1)
	st, total, ch, exp, tix, why, ref, rec, amt, sess := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]
	cexp, claims := v[11], v[12]
	if !strings.HasPrefix(ch, ownerPrefix) {
		return Registration{}, false, nil // a partner order
	}
	ev, _ := keys.OrderEvent(id)
	reg = Registration{ID: id, EventID: ev, TenantID: strings.TrimPrefix(ch, ownerPrefix), Currency: "USD", Reason: why,
		ShowingID: orders.ClaimsShowing(claims)}
	t, _ := strconv.ParseInt(total, 10, 64)
	reg.Total = money.Cents(t)
	// What the processor charged: a refund_required registration shows
	// what is to be refunded.
	if a, err := strconv.ParseInt(amt, 10, 64); err == nil && (st == "paid" || st == "refund") {
		reg.Paid = money.Cents(a)
	}
	e, _ := strconv.ParseInt(exp, 10, 64)
	if st == "held" {
		reg.ExpiresAt, reg.PayBy = time.UnixMilli(e), time.UnixMilli(e)
		if c, err := strconv.ParseInt(cexp, 10, 64); err == nil && c > e {
			reg.PayBy = time.UnixMilli(c)
		}
	}
	if rec != "" {
		var r orders.Record
		if json.Unmarshal([]byte(rec), &r) == nil {
			reg.BuyerName, reg.BuyerEmail, reg.Lines = r.BuyerName, r.BuyerEmail, r.Lines
			reg.Discount, reg.DiscountCode, reg.Fee, reg.VAT, reg.RefundProtection = r.Discount, r.DiscountCode, r.Fee, r.VAT, r.RefundProtection
		}
	}
	if fs := strings.Fields(sess); len(fs) > 0 {
		reg.Processor, reg.SessionID, _ = strings.Cut(fs[len(fs)-1], ":")
	}
	switch st {
	case "held":
		reg.Status, reg.PaymentStatus = StatusAwaitingPayment, PaymentUnpaid
		if now >= e {
			reg.Status = StatusExpired
		}
	case "paid":
		reg.Status, reg.PaymentStatus = StatusConfirmed, PaymentPaid
		if reg.Total == 0 {
			reg.PaymentStatus = PaymentNotRequired
		}
		if err := json.Unmarshal([]byte(tix), &reg.Tickets); err != nil {
			return Registration{}, false, fmt.Errorf("registration %s: %w: tickets: %v", id, eval.ErrReply, err)
		}
		if ref != "" { // the payment that booked it
			reg.Processor, reg.SessionID, _ = strings.Cut(ref, ":")
		}
	case "expired":
		reg.Status, reg.PaymentStatus = StatusExpired, PaymentUnpaid
	default: // refund
		reg.Status, reg.PaymentStatus = StatusRefundRequired, PaymentRefundRequired
	}
	return reg, true, nil
}

// archived answers for a registration Redis no longer holds: a paid one is
// in Postgres.
func (s *Service) archived(ctx context.Context, id string) (Registration, bool, error) {
	if s.Archive == nil {
		return Registration{}, false, nil
	}
	o, ok, err := s.Archive.Order(ctx, id)
	if err != nil || !ok {
		return Registration{}, false, err
	}
	if o.ChannelID != "" || !strings.HasPrefix(o.Caller, ownerPrefix) {
		return Registration{}, false, nil // a partner order
	}
	tix, err := s.Archive.Tickets(ctx, id)
	if err != nil {
		return Registration{}, false, err
	}
	ev, _ := keys.OrderEvent(id)
	reg := Registration{ID: id, EventID: ev, TenantID: strings.TrimPrefix(o.Caller, ownerPrefix),
		Status: StatusConfirmed, PaymentStatus: PaymentPaid, Total: o.Amount, Paid: o.Amount, Currency: "USD", Tickets: tix,
		BuyerName: o.BuyerName, BuyerEmail: o.BuyerEmail, ShowingID: o.ShowingID}
	if o.Amount == 0 {
		reg.PaymentStatus, reg.Paid = PaymentNotRequired, 0
	}
	reg.Processor, reg.SessionID, _ = strings.Cut(o.PartnerReference, ":")
	return reg, true, nil
}

// AttachSession records a session another processor opened for a
// registration awaiting payment (OpenCheckout's script, with no session
// to open or close): the sweeper closes it before giving the hold back.
// The registration then holds until its PayBy (the checkout window
// counted from the registration), no longer only for the register hold.
func (s *Service) AttachSession(ctx context.Context, id, processor, sessionID string) error {
	okey, ok := s.Space.Order(id)
	if !ok {
		return ErrNotFound
	}
	if !validName(processor) || sessionID == "" || len(sessionID) > 255 || strings.ContainsAny(sessionID, " \t\r\n") {
		return fmt.Errorf("attach session: processor %q or session id not usable", processor)
	}
	ev, _ := keys.OrderEvent(id)
	arr, err := eval.Array(ctx, s.Redis, checkoutScript, []string{okey, s.Space.Expiry(keys.Partition(ev)), okey, okey},
		[]string{processor, sessionID, strconv.Itoa(MaxSessions), id, "*", "0", "0", ""})
	if err != nil {
		return fmt.Errorf("attach session: %w", err)
	}
	return checkoutReply(arr)
}

// validName is a processor name: lowercase letters, digits, '_' and '-'.
func validName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
