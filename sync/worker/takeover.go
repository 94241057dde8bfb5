package worker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/reply"
)

// A running worker keeps its liveness key (keys.Space.WorkerAlive) set for
// aliveTTL, refreshed every aliveEvery by a goroutine of its own, so a slow
// round (Postgres stalling) never lets it lapse. A killed worker's key is
// gone aliveTTL after its last refresh at the latest; a stopped one deletes
// it. The TTL is short because it is what a restart waits for; a worker cut
// off from Redis for that long cannot read anyway, and at worst an entry it
// had read is written twice.
const (
	aliveTTL   = 5 * time.Second
	aliveEvery = time.Second
	// recheckMargin is how long after another consumer's liveness key
	// expires the next takeover looks again.
	recheckMargin = 100 * time.Millisecond
)

func (w *Worker) aliveFor() time.Duration     { return orDefault(w.aliveTTL, aliveTTL) }
func (w *Worker) aliveRefresh() time.Duration { return orDefault(w.aliveEvery, aliveEvery) }

// beat sets the liveness key and notes until when it surely lives.
func (w *Worker) beat(ctx context.Context) error {
	start := time.Now()
	key := w.Space.WorkerAlive(w.consumerName())
	err := w.Redis.Do(ctx, w.Redis.B().Set().Key(key).Value("1").Px(w.aliveFor()).Build()).Error()
	if err != nil {
		return fmt.Errorf("worker: liveness key: %w", err)
	}
	w.aliveUntil.Store(start.Add(w.aliveFor()).UnixNano())
	return nil
}

// ensureAlive refreshes the liveness key unless it surely has half its TTL
// left. Every read goes through it first, so this consumer never holds an
// entry while other workers could take it for stopped.
func (w *Worker) ensureAlive(ctx context.Context) error {
	if time.Until(time.Unix(0, w.aliveUntil.Load())) >= w.aliveFor()/2 {
		return nil
	}
	return w.beat(ctx)
}

// keepAlive refreshes the liveness key until the returned stop is called;
// stop deletes the key, so that whatever this consumer still holds (a
// round that failed) is taken over at once by the other workers. Failures
// are not logged here: the next read fails too and says so.
func (w *Worker) keepAlive(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.aliveRefresh())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				bctx, cancel := context.WithTimeout(ctx, w.aliveFor()/2)
				_ = w.beat(bctx)
				cancel()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		w.aliveUntil.Store(0)
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Redis.Do(dctx, w.Redis.B().Del().Key(w.Space.WorkerAlive(w.consumerName())).Build()).Error()
	}
}

var takeoverScript = eval.Load("worker_takeover")

// consumerPart is one consumer of one partition's group.
type consumerPart struct {
	part     int
	consumer string
}

// takeOver looks for consumers of the paid streams whose worker has stopped
// (no liveness key), takes over the entries they left pending, writes and
// acknowledges them, and removes those consumers from the groups. It
// returns how many entries it wrote and, when another consumer that holds
// entries is alive now, how long until its liveness key would expire
// unrefreshed: the soonest it could be found stopped.
func (w *Worker) takeOver(ctx context.Context) (int, time.Duration, error) {
	if err := w.ensureAlive(ctx); err != nil {
		return 0, 0, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), roundTimeout)
	parts, pending, err := w.consumers(rctx)
	var dead map[string]bool
	var recheck time.Duration
	if err == nil {
		dead, recheck, err = w.stopped(rctx, pending)
	}
	cancel()
	if err != nil {
		return 0, 0, err
	}
	n, err := w.takeOverFrom(ctx, dead, parts, pending)
	if err != nil {
		return n, 0, err
	}
	if err := w.hook("takeover"); err != nil {
		return n, 0, err
	}
	return n, recheck, nil
}

// takeOverFrom runs takeover rounds on every stream of the dead consumers
// (parts: the partitions each is a consumer of; pending: what each holds)
// and logs what it took and removed.
func (w *Worker) takeOverFrom(ctx context.Context, dead map[string]bool, parts map[string][]int, pending map[string]int64) (int, error) {
	var play []consumerPart
	for c := range dead {
		for _, p := range parts[c] {
			play = append(play, consumerPart{part: p, consumer: c})
		}
	}
	sort.Slice(play, func(i, j int) bool {
		if play[i].consumer != play[j].consumer {
			return play[i].consumer < play[j].consumer
		}
		return play[i].part < play[j].part
	})
	// A consumer wrongly taken for stopped (a worker of an older version,
	// without liveness keys) may keep reading: bound the rounds by what the
	// stopped consumers held, and leave the rest to the next look.
	var most int64
	for c := range dead {
		most = max(most, pending[c])
	}
	rounds := 2 + int(most/int64(w.batch()))
	total := 0
	taken := map[string]int64{}
	defer func() { w.logTakeover(dead, taken, play) }()
	for ; len(play) > 0 && rounds > 0; rounds-- {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		if err := w.ensureAlive(ctx); err != nil {
			return total, err
		}
		n, next, err := w.takeoverRound(context.WithoutCancel(ctx), play, taken)
		total += n
		if err != nil {
			return total, err
		}
		play = next
	}
	return total, nil
}

// logTakeover says, for each stopped consumer, how many entries were taken
// from it and whether it is removed (it is not while left holds one of its
// streams: a failed round, or a consumer still reading).
func (w *Worker) logTakeover(dead map[string]bool, taken map[string]int64, left []consumerPart) {
	removed := make(map[string]bool, len(dead))
	for c := range dead {
		removed[c] = true
	}
	for _, cp := range left {
		removed[cp.consumer] = false
	}
	names := make([]string, 0, len(dead))
	for c := range dead {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		switch {
		case taken[c] > 0:
			w.logger().Warn("sync worker: took over the entries a stopped worker left pending",
				"consumer", c, "entries", taken[c], "removed", removed[c])
		case removed[c]:
			w.logger().Info("sync worker: removed a stopped worker's consumer", "consumer", c)
		}
	}
}

// consumers lists the other consumers of the group on every paid stream
// (XINFO CONSUMERS, pipelined: the streams sit in different cluster
// slots): the partitions each appears in and how many entries it holds.
func (w *Worker) consumers(ctx context.Context) (map[string][]int, map[string]int64, error) {
	cmds := make(rueidis.Commands, keys.Partitions)
	for p := range keys.Partitions {
		cmds[p] = w.Redis.B().XinfoConsumers().Key(w.Space.Paid(p)).Group(w.group()).Build()
	}
	parts := map[string][]int{}
	pending := map[string]int64{}
	for p, r := range w.Redis.DoMulti(ctx, cmds...) {
		list, err := r.ToArray()
		if isNoGroup(err) || isNoKey(err) {
			continue // recreated by the next read; it has no consumers
		}
		if err != nil {
			return nil, nil, fmt.Errorf("worker: consumers of %s: %w", w.Space.Paid(p), err)
		}
		for _, c := range list {
			info, err := c.AsMap()
			if err != nil {
				return nil, nil, fmt.Errorf("worker: consumers of %s: %w", w.Space.Paid(p), err)
			}
			nameMsg, pendingMsg := info["name"], info["pending"]
			name, err := nameMsg.ToString()
			if err != nil {
				return nil, nil, fmt.Errorf("worker: consumers of %s: name: %w", w.Space.Paid(p), err)
			}
			n, err := pendingMsg.AsInt64()
			if err != nil {
				return nil, nil, fmt.Errorf("worker: consumers of %s: pending: %w", w.Space.Paid(p), err)
			}
			if name == w.consumerName() {
				continue
			}
			parts[name] = append(parts[name], p)
			pending[name] += n
		}
	}
	return parts, pending, nil
}

// stopped returns which of the consumers have no liveness key, and the
// smallest time to live of the keys of those alive that hold entries (0
// when none do).
func (w *Worker) stopped(ctx context.Context, pending map[string]int64) (map[string]bool, time.Duration, error) {
	names := make([]string, 0, len(pending))
	for c := range pending {
		names = append(names, c)
	}
	if len(names) == 0 {
		return nil, 0, nil
	}
	cmds := make(rueidis.Commands, len(names))
	for i, c := range names {
		cmds[i] = w.Redis.B().Pttl().Key(w.Space.WorkerAlive(c)).Build()
	}
	dead := map[string]bool{}
	var recheck time.Duration
	for i, r := range w.Redis.DoMulti(ctx, cmds...) {
		ttl, err := r.AsInt64()
		if err != nil {
			return nil, 0, fmt.Errorf("worker: liveness of %s: %w", names[i], err)
		}
		switch {
		case ttl == -2: // no key
			dead[names[i]] = true
		case ttl >= 0 && pending[names[i]] > 0:
			if d := time.Duration(ttl)*time.Millisecond + recheckMargin; recheck == 0 || d < recheck {
				recheck = d
			}
		}
	}
	return dead, recheck, nil
}

// takeoverRound runs the takeover script once on each stream of each
// stopped consumer in play, writes and acknowledges what it took, adds the
// count taken to taken, and returns the pairs to run again (those that
// gave entries; the others' consumer is removed).
func (w *Worker) takeoverRound(ctx context.Context, play []consumerPart, taken map[string]int64) (int, []consumerPart, error) {
	ctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	runs := make([]eval.Run, len(play))
	batch := strconv.Itoa(w.batch())
	for i, cp := range play {
		runs[i] = eval.Run{
			Keys: []string{w.Space.Paid(cp.part)},
			Args: []string{w.group(), cp.consumer, w.consumerName(), batch},
		}
	}
	var all []entry
	var next []consumerPart
	seen, err := w.fenceEpoch(ctx) // before the read: a rebuild after it refuses the write
	if err != nil {
		return 0, nil, err
	}
	for i, r := range eval.Multi(ctx, w.Redis, takeoverScript, runs...) {
		cp := play[i]
		es, n, err := w.parseTakeover(cp.part, r)
		if err != nil {
			return 0, nil, fmt.Errorf("worker: take over %s from %s: %w", w.Space.Paid(cp.part), cp.consumer, err)
		}
		if n == 0 {
			continue
		}
		taken[cp.consumer] += n
		all = append(all, es...)
		next = append(next, cp)
	}
	if len(all) == 0 {
		return 0, next, nil
	}
	n, err := w.settle(ctx, all, seen)
	return n, next, err
}

// parseTakeover reads one takeover script reply: the entries taken and how
// many ids were taken (0: the consumer is removed).
func (w *Worker) parseTakeover(p int, r rueidis.RedisResult) ([]entry, int64, error) {
	arr, err := eval.Reply(r)
	if err != nil {
		return nil, 0, err
	}
	code, err := reply.Of(arr)
	if err != nil || code == reply.OK {
		return nil, 0, err
	}
	n, err := eval.Int(arr, 2)
	if err != nil {
		return nil, 0, err
	}
	raw, err := arr[1].AsXRange()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: entries: %v", eval.ErrReply, err)
	}
	key := w.Space.Paid(p)
	out := make([]entry, len(raw))
	for i, e := range raw {
		out[i] = entry{stream: key, part: p, id: e.ID, fields: e.FieldValues}
	}
	return out, n, nil
}
