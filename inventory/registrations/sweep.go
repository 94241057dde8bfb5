package registrations

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/reply"
)

// sweepBatch is the most expired members one sweep takes per partition; the
// rest wait for the next sweep.
const sweepBatch = 500

// sweepWorkers bounds the registrations one sweep handles at once.
const sweepWorkers = 16

// Expire gives back what a registration awaiting payment claimed, once its
// window has passed (Redis time). expired is false when there was nothing
// to do: not yet due, or not awaiting payment (then it also leaves the
// expiry zset). Idempotent.
func (s *Service) Expire(ctx context.Context, id string) (expired bool, err error) {
	if _, ok := keys.OrderEvent(id); !ok {
		return false, ErrNotFound
	}
	code, err := s.expire(ctx, id, "", "", "")
	return code == reply.OK, err
}

// expire runs reg_expire on a registration id: mode "" expires it once its
// window has passed; "release" releases it now (a newer registration of
// the buyer replaces it) when its checkout sessions are still sess (else
// reply.SessionsChanged), clearing the buyer's unpaid slot when it is no
// longer held. It returns the script's code.
func (s *Service) expire(ctx context.Context, id, mode, sess, buyer string) (reply.Code, error) {
	ev, _ := keys.OrderEvent(id)
	okey, _ := s.Space.Order(id)
	p := keys.Partition(ev)
	// Every key is the event's, whatever the registration's seats and
	// discount code (the script reads them from its hash).
	ks := []string{okey, s.Space.Sold(ev), s.Space.DiscountHolds(ev), s.Space.Buyers(ev), s.Space.Expiry(p),
		s.Space.Live(p), s.Space.Unpaid(ev), s.Space.IPRegistrations(ev), s.Space.RegSeats(ev), s.Space.DiscountHeld(ev)}
	arr, err := eval.Array(ctx, s.Redis, expireScript, ks, []string{id, ms(s.retention()), mode, sess, buyer})
	if err != nil {
		return 0, fmt.Errorf("expire %s: %w", id, err)
	}
	code, err := reply.Of(arr)
	switch {
	case err != nil, code == reply.OK, code == reply.NotPending, code == reply.NotDue:
	case mode == "release" && code == reply.SessionsChanged:
	default:
		err = reply.Unexpected("expire "+id, code)
	}
	return code, err
}

// keep pushes a registration's window out by the grace period, once; kept
// is false when it was not held or its grace was used. Its seats and
// discount use are held without expiry: nothing to take again.
func (s *Service) keep(ctx context.Context, id string) (kept bool, err error) {
	ev, _ := keys.OrderEvent(id)
	okey, _ := s.Space.Order(id)
	arr, err := eval.Array(ctx, s.Redis, graceScript, []string{okey, s.Space.Expiry(keys.Partition(ev))},
		[]string{id, ms(s.grace())})
	if err != nil {
		return false, fmt.Errorf("keep %s: %w", id, err)
	}
	code, err := reply.Of(arr)
	if err == nil && code != reply.OK && code != reply.NotPending {
		err = reply.Unexpected("keep "+id, code)
	}
	return code == reply.OK, err
}

// Sweep expires every registration whose window has passed, partition by
// partition (members of the expiry zsets scored up to Redis' now). One with
// checkout sessions has them closed through expirer first (nil: none),
// every time, as a session may be opened during the grace period too; when
// the processor reports one paid, the registration keeps its hold for the
// grace period, once, so the webhook on its way books it. When the
// processor cannot be asked (each call is cut at ExpireTimeout), the
// registration is tried again at the next sweep, and expired anyway once
// its window is a grace period past.
//
// Members leave the zsets only in the expire and pay scripts, so no sweep
// misses one; several nodes may sweep at once (the scripts are idempotent,
// a processor's expire too). While s.Gate refuses (the Redis state is not
// current) it does nothing and returns the gate's error. It returns how
// many it expired.
func (s *Service) Sweep(ctx context.Context, expirer Expirer) (int, error) {
	if g := s.gated(); g != nil {
		return 0, g
	}
	now, err := s.Redis.Do(ctx, s.Redis.B().Time().Build()).AsStrSlice()
	if err != nil || len(now) != 2 {
		return 0, fmt.Errorf("sweep: redis time: %v", err)
	}
	sec, _ := strconv.ParseInt(now[0], 10, 64)
	usec, _ := strconv.ParseInt(now[1], 10, 64)
	nowMs := sec*1000 + usec/1000
	zsets := make([]string, keys.Partitions)
	cmds := make(rueidis.Commands, keys.Partitions)
	for p := range keys.Partitions {
		zsets[p] = s.Space.Expiry(p)
		cmds[p] = s.Redis.B().Zrangebyscore().Key(zsets[p]).Min("-inf").Max(strconv.FormatInt(nowMs, 10)).
			Withscores().Limit(0, sweepBatch).Build()
	}
	res := s.Redis.DoMulti(ctx, cmds...)
	// Every due member runs side by side, whatever its partition (a
	// processor's expire is a network call), at most sweepWorkers at once.
	var (
		mu       sync.Mutex
		counts   = make([]int, keys.Partitions)
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, sweepWorkers)
	for p, r := range res {
		members, err := r.AsZScores()
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("sweep: read %s: %w", zsets[p], err)
			}
			mu.Unlock()
			continue
		}
		for _, m := range members {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				expired, err := s.sweepOne(ctx, expirer, zsets[p], m.Member, int64(m.Score), nowMs)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if expired {
					counts[p]++
				}
			}()
		}
	}
	wg.Wait()
	total := 0
	for p, n := range counts {
		if n > 0 {
			s.logger().Info("registrations: checkout holds expired; their inventory is back on sale", "partition", p, "count", n)
		}
		total += n
	}
	if ctx.Err() != nil {
		return total, ctx.Err()
	}
	return total, firstErr
}

// gated is s.Gate's refusal, nil while the sweeper may run.
func (s *Service) gated() *apierr.Error {
	if s.Gate == nil {
		return nil
	}
	return s.Gate()
}

// sweepOne handles one due member of an expiry zset.
func (s *Service) sweepOne(ctx context.Context, expirer Expirer, zset, id string, expMs, nowMs int64) (bool, error) {
	okey, ok := s.Space.Order(id)
	if !ok {
		// Not a registration id: nothing a script of ours put there. The
		// expire script would refuse its keys; drop it directly.
		return false, s.Redis.Do(ctx, s.Redis.B().Zrem().Key(zset).Member(id).Build()).Error()
	}
	if expirer != nil {
		vals, err := s.Redis.Do(ctx, s.Redis.B().Hmget().Key(okey).Field("st", "sess", "grace").Build()).ToArray()
		if err != nil {
			return false, fmt.Errorf("sweep %s: %w", id, err)
		}
		st, _ := vals[0].ToString()
		sess, _ := vals[1].ToString()
		graced := !vals[2].IsNil()
		if st == "held" && sess != "" {
			// Closed at every sweep: a session opened during the grace
			// period must not be paid after the hold is given back.
			paid, err := closeSessions(ctx, expirer, sess, s.expireTimeout())
			switch {
			case paid && !graced:
				kept, err := s.keep(ctx, id)
				if err != nil || kept {
					return false, err
				}
			case err != nil && nowMs < expMs+s.grace().Milliseconds():
				s.logger().Warn("registrations: a processor could not close a checkout session; trying again at the next sweep",
					"registration", id, "err", err)
				return false, nil
			}
		}
	}
	return s.Expire(ctx, id)
}

// closeSessions closes every session of a registration ("proc:id ..."),
// each call cut at timeout; paid is true when any was paid already.
func closeSessions(ctx context.Context, expirer Expirer, sess string, timeout time.Duration) (paid bool, err error) {
	for _, e := range strings.Fields(sess) {
		proc, sid, _ := strings.Cut(e, ":")
		cctx, cancel := context.WithTimeout(ctx, timeout)
		p, xerr := expirer.Expire(cctx, proc, sid)
		cancel()
		if xerr != nil {
			err = fmt.Errorf("%s session: %w", proc, xerr)
			continue
		}
		paid = paid || p
	}
	return paid, err
}

// Run sweeps every interval (about a second) until ctx ends, closing
// sessions through s.Expirer. Every node may run it. While s.Gate refuses
// it skips its sweeps (the monitor says why).
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if s.gated() == nil {
			if _, err := s.Sweep(ctx, s.Expirer); err != nil && ctx.Err() == nil {
				s.logger().Warn("registrations: sweep failed; trying again", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
