// Package ratelimit limits requests per bucket (a credential or client IP and
// an endpoint class) with GCRA, the generic cell rate algorithm, run as one
// Lua script. The clock is Redis TIME, so every API node shares one view of
// each bucket; a bucket is one key that expires once it has refilled.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/lua"
)

var script = lua.Load("ratelimit")

// Limiter takes requests from buckets kept in Redis. It holds no state of
// its own, so one Limiter serves every goroutine.
type Limiter struct {
	Redis rueidis.Client
	Space keys.Space
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
	// Round the interval up so that rounding never lets more than perMinute
	// through in a minute.
	interval := period / perMinute
	if interval*perMinute < period {
		interval++
	}
	arr, err := lua.Array(ctx, l.Redis, script,
		[]string{l.Space.RateLimit(bucket)},
		[]string{strconv.FormatInt(interval, 10), strconv.FormatInt(perMinute, 10)})
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit %s: %w", bucket, err)
	}
	code, err := lua.Int(arr, 0)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit %s: %w", bucket, err)
	}
	v, err := lua.Int(arr, 1)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit %s: %w", bucket, err)
	}
	switch code {
	case 0:
		return Result{Allowed: true, Remaining: v}, nil
	case 1:
		return Result{RetryAfter: time.Duration(v) * time.Microsecond}, nil
	}
	return Result{}, fmt.Errorf("ratelimit %s: %w: status %d", bucket, lua.ErrReply, code)
}
