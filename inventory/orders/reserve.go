package orders

import (
	"context"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/along"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/seats"
)

// Service runs the order scripts.
type Service struct {
	Redis rueidis.Client
	Space keys.Space
	// OrderTTL is how long a pending order waits for confirm (TICKETD_ORDER_TTL).
	OrderTTL time.Duration
	// Retention is how long an order stays in Redis after its expiry, for
	// status polls and idempotent replays; later, Postgres answers.
	Retention time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered (24h).
	IdempotencyTTL time.Duration
	// InProgress is how long a claimed key whose order does not exist yet
	// counts as "still running" before a retry may take the attempt over.
	InProgress time.Duration
	// StreamCap bounds each paid stream (approximately) when no sync worker
	// drains it (write-through off); 0 leaves it unbounded.
	StreamCap int64
	// IDKey keys the MAC inside order ids (see Minted); every node of a
	// deployment must have the same. Without it order ids are all random
	// and an order ticketd no longer knows is not found.
	IDKey []byte
	// Replication is how many Redis replicas must hold a payment before
	// Confirm answers it (nil: none).
	Replication *redisstate.Replication
	// Marks, when set, is told an event's units ever paid each time a
	// script marks one of its orders paid (the node's book of sold marks,
	// inventory/soldmarks); ReportPaid calls it.
	// added: the units the payment added (0 for a retry); it answers
	// whether one of them was handed out before (soldmarks.Book.Saw).
	Marks func(eventID string, paid, added int64) (reused bool)
	// Paid, when set, is told the partition of every sale ReportPaid
	// sees marked paid (its paid stream has an entry to write): the
	// node's sync worker reads that stream at once (worker.Nudge).
	Paid func(partition int)
	// RolledBack, when set, is told why when ReportPaid finds Redis went
	// back (redisstate.Monitor.RolledBack: sales stop for a rebuild).
	RolledBack func(reason string)
	// Held, when set, answers the 503 SALES_HELD of an event whose sales
	// are held after a loss (inventory/salesholds), nil otherwise: Reserve
	// and a storefront registration refuse it (HeldError).
	Held func(eventID string) *apierr.Error
	// Archive, when set, answers confirm replays and status for orders
	// Redis no longer has (sync/orderdb): ConfirmOrder and Lookup.
	Archive Archive

	sold    soldOut
	evKeys  keyCache
	macOnce sync.Once
	macs    sync.Pool // of HMACs keyed with IDKey (hmac.New hashes the key each time)
}

// Defaults of Retention and IdempotencyTTL, which the sync worker and a
// rebuild of Redis follow too.
const (
	DefaultRetention      = 24 * time.Hour
	DefaultIdempotencyTTL = 24 * time.Hour
)

func (s *Service) orderTTL() time.Duration  { return orDefault(s.OrderTTL, 30*time.Minute) }
func (s *Service) retention() time.Duration { return orDefault(s.Retention, DefaultRetention) }
func (s *Service) idemTTL() time.Duration   { return orDefault(s.IdempotencyTTL, DefaultIdempotencyTTL) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

var lowerB32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ReserveRequest is a priced, validated cart ready to become a pending order.
type ReserveRequest struct {
	EventID string
	// Caller owns the idempotency key ("ch:<channel>" or "ss:<session>").
	Caller string
	// ChannelID owns the order: only it may confirm.
	ChannelID      string
	IdempotencyKey string
	// Fingerprint identifies the request; the same key with another
	// fingerprint is KEY_CONFLICT.
	Fingerprint string
	Total       money.Cents
	// Claims are the capacity counters confirm will claim (field -> qty).
	Claims          map[string]int64
	SeatLabels      []string
	HoldToken       string
	DiscountCode    string
	DiscountMaxUses int64
	// MaxPerBuyer is the event's maxTicketsPerBuyer (0: no limit): the
	// buyer's admissions (Record.BuyerEmail, Claims["ev"]) are checked here
	// and counted at confirm.
	MaxPerBuyer int64
	// CatalogVersion is the version of the catalog the cart was priced
	// with: what this process learns about sold-out counters holds only
	// under it.
	CatalogVersion int64
	// Record is written to Postgres once the order is paid; OrderID,
	// Tickets' ids and CreatedAtMs are filled in here.
	Record Record
	// Along goes in Reserve's first round trip (the request's rate limit:
	// handlers/guard.Deferred.Ride); its Settle's error is Reserve's (a
	// refusal: what the first round trip claimed is given back).
	Along along.Along
}

// Reservation is the answer to a reserve.
type Reservation struct {
	OrderID   string
	Amount    money.Cents
	Duplicate bool
}

var (
	reserveScript     = eval.Load("order_reserve")
	idemReleaseScript = eval.Load("idem_release")
)

// Errors of reserve the handlers branch on.
var (
	ErrKeyConflict = apierr.Of("KEY_CONFLICT",
		"this Idempotency-Key was used for a different request or by a different caller; use a new key")
	ErrInProgress = apierr.InProgress(
		"the first request with this Idempotency-Key is still running; wait and poll status")
	ErrDiscountUsedUp = apierr.Of("INVALID_DISCOUNT_CODE", "the discount code has no uses left")
)

// idemSep separates the parts of an idempotency record; it cannot occur
// in a caller id, a hex fingerprint or an order id.
const idemSep = "\x1f"

// IdempotencyRecord is what an Idempotency-Key's key holds once claimed:
// who claimed it, the request's fingerprint and the order it creates.
func IdempotencyRecord(caller, fingerprint, orderID string) string {
	return caller + idemSep + fingerprint + idemSep + orderID
}

// Reserve creates a pending order, or returns the order an earlier request
// with the same Idempotency-Key created.
//
// The key is claimed with one plain SET NX GET (no script): the record is
// "caller|fingerprint|order id" and lives IdempotencyTTL; its remaining TTL
// tells how old a claim is.
//
// Round trips (design rule 7: two): a sale that holds nothing sends
// req.Along first, then the claim and the order script pipelined; one that
// takes seats or a discount use sends the claim with req.Along, then the
// order script (or a replay's read), and gives the claim back when Settle
// refuses.
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (Reservation, error) {
	if e := s.HeldError(req.EventID); e != nil {
		// the limit counts a held event's requests too (a refusal wins)
		if _, err := req.Along.Do(ctx, s.Redis); err != nil {
			return Reservation{}, err
		}
		return Reservation{}, e
	}
	idem := s.Space.Idempotency(req.IdempotencyKey)
	if field, ok := s.sold.first(req.EventID, req.Claims, req.CatalogVersion); ok {
		return s.answerSoldOut(ctx, req, idem, field)
	}
	orderID := s.newOrderID(req.EventID, req.ChannelID)
	record := IdempotencyRecord(req.Caller, req.Fingerprint, orderID)
	claim := s.Redis.B().Set().Key(idem).Value(record).Nx().Get().Px(s.idemTTL()).Build()
	if len(req.SeatLabels) == 0 && (req.DiscountCode == "" || req.DiscountMaxUses <= 0) {
		if _, err := req.Along.Do(ctx, s.Redis); err != nil {
			return Reservation{}, err
		}
		return s.reserveHoldingNothing(ctx, req, orderID, idem, record, claim)
	}
	// The claim rides with req.Along: a write where Ask wants reads, so a
	// refusal gives the key back (when this attempt claimed it) before it
	// is answered, and a retry after Retry-After finds the key free.
	answers, err := req.Along.Do(ctx, s.Redis, claim)
	if err != nil {
		if len(answers) > 0 && rueidis.IsRedisNil(answers[0].Error()) {
			s.release(ctx, idem, record)
		}
		return Reservation{}, err
	}
	prev, claimErr := answers[0].ToString()
	switch {
	case rueidis.IsRedisNil(claimErr):
		// claimed: this attempt creates the order
	case claimErr != nil:
		return Reservation{}, fmt.Errorf("reserve: claim idempotency key: %w", claimErr)
	default:
		return s.claimedBefore(ctx, req, idem, prev)
	}
	res, err := s.create(ctx, req, orderID)
	if err != nil {
		s.release(ctx, idem, record)
	}
	return res, err
}

// reserveHoldingNothing reserves an order that takes no seats and no
// discount use (GA: the flash-sale case) in one round trip, the key claim
// and the order script pipelined. When the claim finds an earlier attempt,
// the order this request just created is deleted: it holds nothing and
// nobody has seen its id; the earlier attempt is answered as usual.
func (s *Service) reserveHoldingNothing(ctx context.Context, req ReserveRequest, orderID, idem, record string, claim rueidis.Completed) (Reservation, error) {
	ks, args, err := s.reserveArgs(req, orderID)
	if err != nil {
		return Reservation{}, err
	}
	reserve := eval.Pipeline(s.Redis, reserveScript, ks, args)
	res := s.Redis.DoMulti(ctx, claim, reserve.Cmd)
	prev, claimErr := res[0].ToString()
	if rueidis.IsRedisNil(claimErr) {
		arr, err := reserve.Reply(ctx, res[1])
		r, err := s.reserved(req, orderID, arr, err)
		if err != nil {
			s.release(ctx, idem, record)
		}
		return r, err
	}
	// An earlier claim: a script whose library was not loaded made no order to
	// delete, and is not run again.
	if arr, err := eval.Reply(res[1]); err == nil {
		if reply.Is(arr, reply.OK) {
			okey, _ := s.Space.Order(orderID)
			_ = s.Redis.Do(ctx, s.Redis.B().Del().Key(okey).Build()).Error()
		}
	}
	if claimErr != nil {
		return Reservation{}, fmt.Errorf("reserve: claim idempotency key: %w", claimErr)
	}
	return s.claimedBefore(ctx, req, idem, prev)
}

// claimedBefore answers a request whose key holds an earlier claim prev:
// a replay when it is the same caller and request, else KEY_CONFLICT.
func (s *Service) claimedBefore(ctx context.Context, req ReserveRequest, idem, prev string) (Reservation, error) {
	caller, rest, _ := strings.Cut(prev, idemSep)
	fp, prevOrder, _ := strings.Cut(rest, idemSep)
	if caller != req.Caller || fp != req.Fingerprint {
		return Reservation{}, ErrKeyConflict
	}
	return s.replay(ctx, req, idem, prevOrder)
}

// release gives the key back after its attempt failed without creating an
// order, so a retry of the attempt runs again. The context may be the
// failed one, so it uses a short fresh one.
func (s *Service) release(ctx context.Context, idem, record string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = eval.Array(rctx, s.Redis, idemReleaseScript, []string{idem}, []string{record})
}

// replay answers a request whose key was claimed before with the same request.
func (s *Service) replay(ctx context.Context, req ReserveRequest, idem, orderID string) (Reservation, error) {
	okey, ok := s.Space.Order(orderID)
	if !ok {
		return Reservation{}, ErrKeyConflict
	}
	res := s.Redis.DoMulti(ctx,
		s.Redis.B().Hget().Key(okey).Field("total").Build(),
		s.Redis.B().Pttl().Key(idem).Build())
	total, err := res[0].AsInt64()
	if err == nil {
		return Reservation{OrderID: orderID, Amount: money.Cents(total), Duplicate: true}, nil
	}
	if !rueidis.IsRedisNil(err) {
		return Reservation{}, fmt.Errorf("reserve: read replayed order: %w", err)
	}
	left, err := res[1].AsInt64()
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve: age of idempotency key: %w", err)
	}
	// left < 0: the key went since its claim was read (its attempt failed
	// or was refused, and gave it back): that attempt made no order, and a
	// retry claims the key afresh. Taking it over here, without the key,
	// would let that retry make a second order.
	if age := s.idemTTL() - time.Duration(left)*time.Millisecond; left < 0 || age < orDefault(s.InProgress, 30*time.Second) {
		return Reservation{}, ErrInProgress
	}
	// The first attempt died between claiming the key and creating the
	// order: take it over. The script's existence check makes a race
	// between two takers create one order, and the order is new: there is
	// no earlier result to replay.
	return s.create(ctx, req, orderID)
}

func (s *Service) create(ctx context.Context, req ReserveRequest, orderID string) (Reservation, error) {
	ks, args, err := s.reserveArgs(req, orderID)
	if err != nil {
		return Reservation{}, err
	}
	arr, err := eval.Array(ctx, s.Redis, reserveScript, ks, args)
	return s.reserved(req, orderID, arr, err)
}

// reserveArgs are the keys and arguments of order_reserve.lua for req.
func (s *Service) reserveArgs(req ReserveRequest, orderID string) (ks, args []string, err error) {
	ev := req.EventID
	now := time.Now()
	rec := req.Record
	rec.OrderID = orderID
	rec.CreatedAtMs = now.UnixMilli()
	rec.Caller, rec.IdempotencyKey, rec.Fingerprint = req.Caller, req.IdempotencyKey, req.Fingerprint
	for i := range rec.Tickets {
		rec.Tickets[i].TicketID = TicketID(orderID, i)
	}
	recJSON, tixJSON, err := rec.Encode()
	if err != nil {
		return nil, nil, fmt.Errorf("reserve: %w", err)
	}
	okey, _ := s.Space.Order(orderID)
	ks = s.SaleKeys(ev, okey, req.HoldToken, 0)

	buyer := ""
	if req.MaxPerBuyer > 0 {
		buyer = BuyerKey(req.Record.BuyerEmail)
	}
	args = make([]string, 0, 11+2*len(req.Claims)+len(req.SeatLabels)+6) // fixed, claims, seats, hash fields
	args = append(args, orderID, ms(s.orderTTL()), ms(s.retention()),
		req.HoldToken, req.DiscountCode, strconv.FormatInt(req.DiscountMaxUses, 10),
		strconv.FormatInt(max(req.MaxPerBuyer, 0), 10), buyer, strconv.FormatInt(req.Claims["ev"], 10))
	args, claims := ClaimArgs(args, req.Claims, req.SeatLabels)
	args = SaleFieldArgs(args, req.Total, req.ChannelID, req.Caller, claims, tixJSON, recJSON)
	if len(req.SeatLabels) == 0 && req.DiscountCode == "" && req.MaxPerBuyer <= 0 {
		ks = ks[:plainSaleKeys]
	}
	return ks, args, nil
}

// reserved maps order_reserve.lua's reply to the reservation or its error,
// and remembers a counter it reports used up.
func (s *Service) reserved(req ReserveRequest, orderID string, arr []rueidis.RedisMessage, err error) (Reservation, error) {
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return Reservation{}, err
	}
	switch code {
	case reply.OK:
		return Reservation{OrderID: orderID, Amount: req.Total}, nil
	case reply.Exists:
		total, _ := eval.Int(arr, 1)
		return Reservation{OrderID: orderID, Amount: money.Cents(total), Duplicate: true}, nil
	case reply.Short:
		field, _ := eval.Str(arr, 1)
		if left, _ := eval.Int(arr, 2); left <= 0 {
			s.sold.note(req.EventID, field, req.CatalogVersion)
		}
	}
	if err := RefusalError(arr); err != nil {
		return Reservation{}, err
	}
	return Reservation{}, reply.Unexpected("reserve", code)
}

// RefusalError maps the refusals that order_reserve.lua and reg_register.lua
// share (capacity, hold token gone, seat conflict, seats not held, discount
// used up, sales stopped, buyer limit) to the client's error; nil for any
// other reply.
func RefusalError(arr []rueidis.RedisMessage) error {
	code, _ := reply.Of(arr)
	switch code {
	case reply.Short:
		field, _ := eval.Str(arr, 1)
		left, _ := eval.Int(arr, 2)
		return CapacityError(field, left)
	case reply.HoldGone:
		return seats.ErrHoldExpired
	case reply.SeatTaken:
		labels, _ := eval.Strs(arr, 1)
		return seats.ConflictError(labels)
	case reply.SeatNotHeld:
		labels, _ := eval.Strs(arr, 1)
		return SeatNotHeldError(labels)
	case reply.DiscountUsedUp:
		return ErrDiscountUsedUp
	case reply.Stopped:
		return redisstate.ErrSalesStopped
	case reply.BuyerLimit:
		limit, _ := eval.Int(arr, 1)
		left, _ := eval.Int(arr, 2)
		return BuyerLimitError(limit, left)
	}
	return nil
}

// SeatNotHeldError is the 409 of a cart whose seats its hold token does not hold.
func SeatNotHeldError(labels []string) *apierr.Error {
	return apierr.Of("SEAT_NOT_HELD", "seats are not held by this hold token: %s; hold them first", strings.Join(labels, ", ")).
		WithReason("not_held").WithData(map[string]any{"seats": labels})
}

// CapacityError maps a capacity field with too few left to interface.md's code.
func CapacityError(field string, left int64) *apierr.Error {
	kind, id := capacity.Split(field)
	soldOut := left <= 0
	switch kind {
	case capacity.KindChannel:
		// beside a waiting room: the channel's allocation is what it sells
		if soldOut {
			return apierr.Of("EVENT_SOLD_OUT", "this channel's allocation of the event is sold out")
		}
		return apierr.Of("QUANTITY_EXCEEDS_CAPACITY", "only %d admissions remain in this channel's allocation of the event", left).With("remaining", left)
	case capacity.KindEvent, capacity.KindShowing, capacity.KindStorefront:
		if soldOut {
			return apierr.Of("EVENT_SOLD_OUT", "the event has no remaining capacity")
		}
		return apierr.Of("QUANTITY_EXCEEDS_CAPACITY", "only %d admissions remain for this event", left).With("remaining", left)
	case capacity.KindTable:
		return seats.ConflictError([]string{id})
	case capacity.KindExtra:
		if soldOut {
			return apierr.Of("EXTRA_SOLD_OUT", "extra %s is sold out", id)
		}
		return apierr.Of("EXTRA_QUANTITY_EXCEEDS_CAPACITY", "only %d of extra %s remain", left, id).With("remaining", left)
	}
	if soldOut {
		return apierr.Of("TICKET_SOLD_OUT", "%s is sold out", id)
	}
	return apierr.Of("TICKET_QUANTITY_EXCEEDS_CAPACITY", "only %d of %s remain", left, id).With("remaining", left)
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

var discountLeftScript = eval.Load("discount_left")

// DiscountLeft returns how many uses of a limited discount code remain
// (paid uses and live pending orders' holds taken off maxUses), so a quote
// refuses a used-up code as the reserve of the same cart would.
func (s *Service) DiscountLeft(ctx context.Context, eventID, code string, maxUses int64) (int64, error) {
	arr, err := eval.Array(ctx, s.Redis, discountLeftScript,
		[]string{s.Space.DiscountHolds(eventID), s.Space.DiscountUsed(eventID), s.Space.DiscountHeld(eventID)},
		[]string{code, strconv.FormatInt(maxUses, 10)})
	if err != nil {
		return 0, fmt.Errorf("discount %s: %w", code, err)
	}
	return eval.Int(arr, 0)
}
