// Package reply is the Go side of lua/lib/reply.lua: the codes a script
// answers first in its reply array, one name and one number for one
// meaning in every script. The wrappers of the scripts switch on these
// names, never on bare numbers; a test holds this table and the Lua one
// to each other, name for name and number for number.
package reply

import (
	"fmt"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
)

// Code is a script's reply code: the first element of its reply.
type Code int64

// The codes, as lua/lib/reply.lua numbers them (its comments say what
// each means; a script's header says what its reply carries after it).
const (
	OK              Code = 0  // done: the rest of the reply is the script's result
	Exists          Code = 1  // what the call would create exists already (a replay, or an id taken)
	Short           Code = 2  // a capacity field has fewer than requested left
	HoldGone        Code = 3  // the hold token is gone
	SeatTaken       Code = 4  // seats booked or held by someone else
	SeatNotHeld     Code = 5  // seats the hold token does not hold
	DiscountUsedUp  Code = 6  // the discount code has no uses left
	Stopped         Code = 7  // the partition's marker is missing: sales stop
	BuyerLimit      Code = 8  // the buyer would pass the event's maxTicketsPerBuyer
	Paid            Code = 9  // paid at once (a free registration)
	BuyerUnpaid     Code = 10 // the buyer has another registration awaiting payment
	ClientLimit     Code = 11 // the client holds its limit of holds already
	NotFound        Code = 12 // no such thing (for this caller)
	NotOwner        Code = 13 // the caller holds it no longer
	Unpayable       Code = 14 // it cannot be paid; the reply says why
	AmountMismatch  Code = 15 // the amount is not the order's, beyond the tolerance
	PaymentRefused  Code = 16 // a payment refused: of no session ticketd opened, not its amount or currency, or a test card that may not pay
	NotPending      Code = 17 // not in the state the call acts on
	NotDue          Code = 18 // its time has not come
	SessionsChanged Code = 19 // its checkout sessions are not those the caller read
	TooManySessions Code = 20 // it has the most checkout sessions already
	TokenLimit      Code = 21 // the hold token would hold more seats than it may
	Stranded        Code = 22 // the single-seat rule refuses
	InUse           Code = 23 // it holds seats: left alone
	Limited         Code = 24 // the rate limit refuses
	BelowSold       Code = 25 // a capacity is below its sold count
	Live            Code = 26 // the partition's marker is there: sales run
	More            Code = 27 // part of the work done: call again
	PassInvalid     Code = 28 // the waiting room's pass is not one it gave, or not for this buyer or these units
	PassUsed        Code = 29 // the waiting room's pass was used already
	PassExpired     Code = 30 // the waiting room's pass expired unused (or its holder left)
	PassRequired    Code = 31 // the event sells through its waiting room and no pass (or hold token a pass made) came
)

// names are the codes' names in lua/lib/reply.lua, for errors and the test.
var names = map[Code]string{
	OK: "OK", Exists: "EXISTS", Short: "SHORT", HoldGone: "HOLD_GONE", SeatTaken: "SEAT_TAKEN",
	SeatNotHeld: "SEAT_NOT_HELD", DiscountUsedUp: "DISCOUNT_USED_UP", Stopped: "STOPPED", BuyerLimit: "BUYER_LIMIT",
	Paid: "PAID", BuyerUnpaid: "BUYER_UNPAID", ClientLimit: "CLIENT_LIMIT", NotFound: "NOT_FOUND", NotOwner: "NOT_OWNER",
	Unpayable: "UNPAYABLE", AmountMismatch: "AMOUNT_MISMATCH", PaymentRefused: "PAYMENT_REFUSED",
	NotPending: "NOT_PENDING", NotDue: "NOT_DUE", SessionsChanged: "SESSIONS_CHANGED",
	TooManySessions: "TOO_MANY_SESSIONS", TokenLimit: "TOKEN_LIMIT", Stranded: "STRANDED", InUse: "IN_USE",
	Limited: "LIMITED", BelowSold: "BELOW_SOLD", Live: "LIVE", More: "MORE",
	PassInvalid: "PASS_INVALID", PassUsed: "PASS_USED", PassExpired: "PASS_EXPIRED", PassRequired: "PASS_REQUIRED",
}

// String is the code's name in lua/lib/reply.lua ("code 99" for none).
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("code %d", int64(c))
}

// Of returns the code of a script's reply arr (its first element).
func Of(arr []rueidis.RedisMessage) (Code, error) {
	c, err := eval.Int(arr, 0)
	return Code(c), err
}

// Is says whether arr is a reply with code c (false for a reply without
// one).
func Is(arr []rueidis.RedisMessage, c Code) bool {
	got, err := Of(arr)
	return err == nil && got == c
}

// Unexpected is the error of a reply code its wrapper does not expect.
func Unexpected(op string, c Code) error {
	return fmt.Errorf("%s: %w: %v", op, eval.ErrReply, c)
}
