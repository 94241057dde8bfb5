package guard

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// Deferred is a request's rate limit left to ride in its handler's first
// Redis read (Route.Deferred): one round trip for both, as design rule 7
// wants of a read. The handler sends Cmds along with its read and asks
// Settle before it writes anything; a handler that made no read has the
// limit taken when it returns, and a refusal then replaces its answer, so
// a refused request is answered 429 whatever it sent.
type Deferred struct {
	ask ratelimit.Ask
	// sent: Cmds handed the commands out (rueidis recycles a command once
	// answered, so they are never sent twice); settled: Settle ran.
	sent, settled bool
}

type deferredKey struct{}

// DeferredOf is the deferred limit the request context carries, or nil.
func DeferredOf(rctx context.Context) *Deferred {
	d, _ := rctx.Value(deferredKey{}).(*Deferred)
	return d
}

// Cmds are the commands to send along with the read, handed out once:
// none when d is nil, handed out or settled already, or when the node
// decides the limit alone. Sent, they count in Redis whatever becomes of
// the read; Settle reads their answers.
func (d *Deferred) Cmds() []rueidis.Completed {
	if d == nil || d.sent || d.settled {
		return nil
	}
	d.sent = true
	return d.ask.Cmds()
}

// Settle takes the limit from answers, Redis' replies to Cmds (as many):
// the 429 (Retry-After set on ctx) when refused, err when Redis failed.
// A nil or settled d allows.
func (d *Deferred) Settle(ctx *fasthttp.RequestCtx, rctx context.Context, answers []rueidis.RedisResult) (*apierr.Error, error) {
	if d == nil || d.settled {
		return nil, nil
	}
	d.settled = true
	res, err := d.ask.Result(rctx, answers)
	if err != nil {
		return nil, err
	}
	if !res.Allowed {
		return Refuse(ctx, res.RetryAfter), nil
	}
	return nil, nil
}

// Ride is the deferred limit as an inventory call takes it along with its
// first Redis round trip: the commands to send and the function given
// their answers, which returns the refusal (the 429, Retry-After set on
// ctx) or Redis' failure. Both are nil when d is nil.
func (d *Deferred) Ride(ctx *fasthttp.RequestCtx, rctx context.Context) ([]rueidis.Completed, func([]rueidis.RedisResult) error) {
	if d == nil {
		return nil, nil
	}
	return d.Cmds(), func(answers []rueidis.RedisResult) error {
		e, err := d.Settle(ctx, rctx, answers)
		if e != nil {
			return e
		}
		return err
	}
}
