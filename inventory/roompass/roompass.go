// Package roompass holds what the scripts that burn a waiting room's pass
// answer, for every package that runs one: a registration (reg_register)
// and, on a seated event, the hold token a pass makes (seat_token) and the
// holds that token takes (seat_hold). It sits below inventory/room and
// inventory/seats, which both use it, so neither imports the other.
package roompass

import (
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/reply"
)

// Pass is a pass whose signature was checked (room.Service.CheckPass): the
// place it admits and when it lapses. Whether it is still live and unused
// is the script's to say, by Redis' clock and state.
type Pass struct {
	QueueID   string
	ExpiresAt time.Time
}

// Arg is the pass as the scripts take it: "<queue id> <expiry ms>", ""
// for none.
func (p *Pass) Arg() string {
	if p == nil {
		return ""
	}
	return p.QueueID + " " + strconv.FormatInt(p.ExpiresAt.UnixMilli(), 10)
}

// The refusals of a pass.
var (
	ErrRequired = apierr.Of("QUEUE_REQUIRED",
		"this event sells through its waiting room: join it (POST /v1/storefront/queue/{eventId}/join) and send the pass it gives in the x-queue-pass header (on a seated event, of hold-token or best-available: the hold token it makes then carries the pass)")
	ErrBad    = apierr.Of("QUEUE_PASS_INVALID", "the x-queue-pass header is not a pass of this event's waiting room")
	ErrBuyer  = apierr.Of("QUEUE_PASS_INVALID", "this pass was given to another buyer: register with the e-mail address you joined the waiting room with")
	ErrUnits  = apierr.Of("QUEUE_PASS_INVALID", "this pass covers fewer tickets than the cart holds")
	ErrUsed   = apierr.Of("QUEUE_PASS_USED", "this pass was used already: a pass makes one registration (on a seated event, one hold token)")
	ErrLapsed = apierr.Of("QUEUE_PASS_EXPIRED", "this pass expired (or its holder left the waiting room): join again")
)

// Refusal is the error of a script's pass refusal arr (reply PASS_*), nil
// when arr is not one.
func Refusal(arr []rueidis.RedisMessage) error {
	code, err := reply.Of(arr)
	if err != nil {
		return nil
	}
	switch code {
	case reply.PassRequired:
		return ErrRequired
	case reply.PassUsed:
		return ErrUsed
	case reply.PassExpired:
		return ErrLapsed
	case reply.PassInvalid:
		why, _ := eval.Str(arr, 1)
		switch why {
		case "buyer":
			return ErrBuyer
		case "units":
			return ErrUnits
		}
		return ErrBad
	}
	return nil
}
