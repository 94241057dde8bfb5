// Package ratelimit limits requests per bucket (a credential or client IP and
// an endpoint class) with GCRA, the generic cell rate algorithm, run as one
// Lua script. The clock is Redis TIME, so every API node shares one view of
// each bucket; a bucket is one key that expires once it has refilled.
//
// Small limits (interface.md's 60 to 600 a minute) ask Redis on every
// request, so they are exact. A limit raised for a partner's flash sale
// (LeaseFrom a minute and more) would cost a Redis call per request for
// nothing: a node then takes a tenth of a second's share of the bucket at
// once and serves it from memory. Requests still come out of the one
// bucket in Redis, so all nodes together never pass more than the limit;
// leased requests a node does not use within LeaseLife are dropped, which
// can only refuse early, never admit too many.
//
// Local is the same algorithm counted in one node's memory alone, for the
// requests a node answers without Redis (the waiting room's far polls):
// per node, so only an approximation of a limit across nodes.
//
// guard.Refuse builds the 429 every refusal answers with, this limiter's
// and the lockout's after failed authentications.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/reply"
)

var script = eval.Load("ratelimit")

// LeaseFrom is the per-minute limit from which a node leases slices of the
// bucket instead of asking Redis for every request (100 a second).
const LeaseFrom = 6000

// LeaseLife is how long a node keeps leased requests it has not used.
const LeaseLife = 100 * time.Millisecond

// Limiter takes requests from buckets kept in Redis. One Limiter serves
// every goroutine of a node; its only state is the leases of large limits.
type Limiter struct {
	Redis rueidis.Client
	Space keys.Space

	leases sync.Map     // bucket -> *lease
	calls  atomic.Int64 // script runs, for tests and metrics
}

// lease is the part of a large bucket this node took and has not used yet.
type lease struct {
	mu      sync.Mutex
	left    int64
	expires time.Time
	// refusedUntil is when the bucket, empty at the last ask, has a
	// request again; until then Redis would refuse too, whatever other
	// nodes do, so the node refuses without asking.
	refusedUntil time.Time
	// refilled is closed when the refill in flight ends (nil when none
	// is): one goroutine asks Redis for the next slice, the others wait
	// for it instead of each taking one (a script and a write apiece).
	refilled chan struct{}
}

// Result is the outcome of one Allow.
type Result struct {
	// Allowed reports whether the request may go on.
	Allowed bool
	// Remaining is how many more requests the bucket allows right now
	// (0 when refused, -1 when the limit is off).
	Remaining int64
	// RetryAfter is, for a refused request, the wait until one request is
	// allowed again: the Retry-After of the 429. Zero when allowed.
	RetryAfter time.Duration
}

// unlimited is the answer for a limit of zero or less.
var unlimited = Result{Allowed: true, Remaining: -1}

const period = int64(time.Minute / time.Microsecond)

// Allow takes one request from bucket, which allows perMinute requests a
// minute: a fresh bucket allows perMinute at once (the burst), then one
// every minute/perMinute. perMinute <= 0 means no limit and makes no Redis
// call. A refused request takes nothing from the bucket. Errors come only
// from Redis; the caller decides whether to fail open or closed.
func (l *Limiter) Allow(ctx context.Context, bucket string, perMinute int64) (Result, error) {
	if perMinute <= 0 {
		return unlimited, nil
	}
	if perMinute < LeaseFrom {
		r, _, err := l.take(ctx, bucket, perMinute, 1)
		return r, err
	}
	v, ok := l.leases.Load(bucket)
	if !ok {
		v, _ = l.leases.LoadOrStore(bucket, &lease{})
	}
	ls := v.(*lease)
	for {
		now := time.Now()
		ls.mu.Lock()
		if ls.left > 0 && now.Before(ls.expires) {
			ls.left--
			left := ls.left
			ls.mu.Unlock()
			return Result{Allowed: true, Remaining: left}, nil
		}
		if wait := ls.refusedUntil.Sub(now); wait > 0 {
			ls.mu.Unlock()
			return Result{RetryAfter: wait}, nil
		}
		if ch := ls.refilled; ch != nil {
			ls.mu.Unlock()
			select {
			case <-ch: // look again: the slice, a refusal, or a refill to do
			case <-ctx.Done():
				return Result{}, fmt.Errorf("ratelimit %s: %w", bucket, ctx.Err())
			}
			continue
		}
		ch := make(chan struct{})
		ls.refilled = ch
		ls.mu.Unlock()
		r, granted, err := l.take(ctx, bucket, perMinute, perMinute/600)
		ls.mu.Lock()
		switch {
		case err == nil && !r.Allowed:
			ls.refusedUntil = now.Add(r.RetryAfter)
		case err == nil && granted > 1:
			if !now.Before(ls.expires) {
				ls.left = 0
			}
			ls.left += granted - 1
			ls.expires = now.Add(LeaseLife)
		}
		ls.refilled = nil
		close(ch)
		ls.mu.Unlock()
		return r, err
	}
}

// take runs the script: up to n requests from bucket, at least one or none.
func (l *Limiter) take(ctx context.Context, bucket string, perMinute, n int64) (Result, int64, error) {
	p := l.takeCmd(bucket, perMinute, n)
	arr, err := eval.Array(ctx, l.Redis, script, p.keys, p.args)
	return taken(bucket, arr, err)
}

// takeArgs are the script's keys and arguments of a take.
type takeArgs struct{ keys, args []string }

func (l *Limiter) takeCmd(bucket string, perMinute, n int64) takeArgs {
	// Round the interval up so that rounding never lets more than perMinute
	// through in a minute.
	interval := period / perMinute
	if interval*perMinute < period {
		interval++
	}
	l.calls.Add(1)
	return takeArgs{keys: []string{l.Space.RateLimit(bucket)},
		args: []string{strconv.FormatInt(interval, 10), strconv.FormatInt(perMinute, 10), strconv.FormatInt(n, 10)}}
}

// taken reads the script's reply arr (err: its failure): the result and
// how many requests it granted.
func taken(bucket string, arr []rueidis.RedisMessage, err error) (Result, int64, error) {
	if err != nil {
		return Result{}, 0, fmt.Errorf("ratelimit %s: %w", bucket, err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return Result{}, 0, fmt.Errorf("ratelimit %s: %w", bucket, err)
	}
	v, err := eval.Int(arr, 1)
	if err != nil {
		return Result{}, 0, fmt.Errorf("ratelimit %s: %w", bucket, err)
	}
	switch code {
	case reply.OK:
		granted, err := eval.Int(arr, 2)
		if err != nil {
			return Result{}, 0, fmt.Errorf("ratelimit %s: %w", bucket, err)
		}
		return Result{Allowed: true, Remaining: v}, granted, nil
	case reply.Limited:
		return Result{RetryAfter: time.Duration(v) * time.Microsecond}, 0, nil
	}
	return Result{}, 0, reply.Unexpected("ratelimit "+bucket, code)
}

// Ask is one request's take from a bucket in two steps, so that it rides
// in one pipeline with the request's first Redis read (design rule 7: a
// read's round trip carries its rate limit). Cmds is what to send (none
// when the node decides alone: no limit, or a leased slice); Result reads
// the answer. A refused request throws the read away: only a read may go
// along, or a write the caller undoes on refusal (a reserve's
// Idempotency-Key claim, given back: orders.Service.Reserve).
type Ask struct {
	l      *Limiter
	bucket string
	cmd    eval.Pipelined
	remote bool
	local  Result
	err    error
}

// Prepare is Allow's first step for one request from bucket.
func (l *Limiter) Prepare(ctx context.Context, bucket string, perMinute int64) Ask {
	if perMinute <= 0 || perMinute >= LeaseFrom {
		r, err := l.Allow(ctx, bucket, perMinute)
		return Ask{local: r, err: err}
	}
	t := l.takeCmd(bucket, perMinute, 1)
	return Ask{l: l, bucket: bucket, cmd: eval.Pipeline(l.Redis, script, t.keys, t.args), remote: true}
}

// Cmds are the commands to send along (zero or one).
func (a Ask) Cmds() []rueidis.Completed {
	if !a.remote {
		return nil
	}
	return []rueidis.Completed{a.cmd.Cmd}
}

// Result is the outcome, given Redis' answers to Cmds (res: as many).
func (a Ask) Result(ctx context.Context, res []rueidis.RedisResult) (Result, error) {
	if !a.remote {
		return a.local, a.err
	}
	if len(res) != 1 {
		return Result{}, fmt.Errorf("ratelimit %s: %d answers to one take", a.bucket, len(res))
	}
	arr, err := a.cmd.Reply(ctx, res[0])
	r, _, err := taken(a.bucket, arr, err)
	return r, err
}
