package guard

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/along"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// Deferred is a request's rate limit left to ride in its handler's first
// Redis read (Route.Deferred): one round trip for both, as design rule 7
// wants of a read. The handler sends Cmds along with its read and asks
// Settle before it writes anything (the one write that rides along, a
// partner reserve's Idempotency-Key claim, is given back on a refusal:
// orders.Service.Reserve); a handler that made no read has the
// limit taken when it returns, and a refusal then replaces its answer, so
// a refused request is answered 429 whatever it sent. A handler whose
// first Redis call writes takes it alone first (Take), and one that
// answers from the node's memory counts it there (Local) and costs Redis
// nothing.
type Deferred struct {
	// ask is made when first needed (prepare): an answer from the node's
	// memory (Local) never builds the Redis command.
	ask   ratelimit.Ask
	ready bool
	quota Quota
	l     *ratelimit.Limiter
	rctx  context.Context // the request's, for a leased limit's refill
	// sent: the commands went out, handed out by Cmds or by the Along of
	// Ride when its call sent them (rueidis recycles a command once
	// answered, so they are never sent twice); ridden: Ride gave them to
	// an Along, once; settled: Settle ran; local: Local counted the
	// request in the node's memory instead.
	sent, ridden, settled, local bool
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
	d.prepare()
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
	d.prepare()
	res, err := d.ask.Result(rctx, answers)
	if err != nil {
		return nil, err
	}
	if !res.Allowed {
		return Refuse(ctx, res.RetryAfter), nil
	}
	return nil, nil
}

// Take takes the limit now, in a round trip of its own, for a handler
// whose first Redis call cannot carry it (a script that writes) once it
// knows it needs Redis; as Settle otherwise. A limit sent already (its
// answer unread) counted: it allows.
func (d *Deferred) Take(ctx *fasthttp.RequestCtx, rctx context.Context) (*apierr.Error, error) {
	if d == nil || d.settled || d.sent {
		return nil, nil
	}
	var answers []rueidis.RedisResult
	if cmds := d.Cmds(); len(cmds) > 0 {
		answers = d.l.Redis.DoMulti(rctx, cmds...)
	}
	return d.Settle(ctx, rctx, answers)
}

// Local counts the request in l, the node's own count of the same bucket
// and limit, when the handler answers it from the node's memory: the
// request then costs Redis nothing, and the route takes no Redis limit
// after it (unless the handler goes on to Take it). The 429 (Retry-After
// set on ctx) when refused; a nil d allows.
func (d *Deferred) Local(ctx *fasthttp.RequestCtx, l *ratelimit.Local) *apierr.Error {
	if d == nil {
		return nil
	}
	d.local = true
	if res := l.Allow(d.quota.Bucket, d.quota.Limit); !res.Allowed {
		return Refuse(ctx, res.RetryAfter)
	}
	return nil
}

func (d *Deferred) prepare() {
	if !d.ready {
		d.ask, d.ready = d.l.Prepare(d.rctx, d.quota.Bucket, d.quota.Limit), true
	}
}

// Ride is the deferred limit as an inventory call takes it along with its
// first Redis round trip (along.Along): the commands to send, and the
// function given their answers, which returns the refusal (the 429,
// Retry-After set on ctx) or Redis' failure. The commands count as sent
// when the call hands them out (along.Along.With), not before: a call
// that answers first (a bad request) leaves the limit to the route, which
// takes it after the handler. The zero Along when d is nil.
func (d *Deferred) Ride(ctx *fasthttp.RequestCtx, rctx context.Context) along.Along {
	if d == nil || d.sent || d.ridden || d.settled {
		return along.Along{} // one Along a request: its commands go once
	}
	d.ridden = true
	d.prepare()
	return along.Along{Cmds: d.ask.Cmds(), Sent: func() { d.sent = true }, Settle: func(answers []rueidis.RedisResult) error {
		e, err := d.Settle(ctx, rctx, answers)
		if e != nil {
			return e
		}
		return err
	}}
}
