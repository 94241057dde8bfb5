package redisstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/batch"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
)

// Replication is how many Redis replicas must hold a paid order before
// ticketd answers it paid (TICKETD_REDIS_WAIT_REPLICAS and
// TICKETD_REDIS_WAIT_TIMEOUT). A failover promotes a replica, and an
// asynchronous replica lags: what it has not received is lost with the old
// primary. WAIT after the script that marks an order paid makes the answer
// wait until that many replicas hold the write, so a failover to one of
// them loses no acknowledged sale. A nil or zero Replication waits for none.
type Replication struct {
	Replicas int64
	Timeout  time.Duration // default DefaultWaitTimeout

	timeouts atomic.Int64
	batches  sync.Map // batchKey -> *batch.Queue[*eval.Call]: the paid scripts waiting for a batch (Array)
}

// DefaultWaitTimeout bounds a WAIT when TICKETD_REDIS_WAIT_TIMEOUT is unset.
const DefaultWaitTimeout = 500 * time.Millisecond

// ErrNotReplicated is the answer to a sale the replicas did not acknowledge
// in time: it is written on the primary, and a retry (confirm and payment
// are idempotent) answers it once the replicas have it.
var ErrNotReplicated = apierr.Unavailable("the sale is not yet on the Redis replicas TICKETD_REDIS_WAIT_REPLICAS asks for; retry shortly")

// On says whether any replica is waited for.
func (r *Replication) On() bool { return r != nil && r.Replicas > 0 }

// Timeouts is how many paid replies were refused for want of replicas.
func (r *Replication) Timeouts() int64 {
	if r == nil {
		return 0
	}
	return r.timeouts.Load()
}

// WaitTimeout is Timeout, or DefaultWaitTimeout when it is unset.
func (r *Replication) WaitTimeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultWaitTimeout
}

// Array runs s as eval.Array does; with replicas to wait for, WAIT follows
// it on the same connection, one WAIT for the payments that come together
// (batched). mustHold says whether a reply
// is one that must be on the replicas before it is answered (an order now
// paid, or found paid by a retry); such a reply that fewer replicas
// acknowledged is ErrNotReplicated. Other replies (a refusal) are
// answered as they are: they sell nothing.
//
// A retry that finds the order paid must itself write (the scripts touch
// the order), or its WAIT would only cover whatever its connection wrote
// last, not the payment another connection wrote.
func (r *Replication) Array(ctx context.Context, c rueidis.Client, s *eval.Script, keys, args []string,
	mustHold func([]rueidis.RedisMessage) bool) ([]rueidis.RedisMessage, error) {
	return r.array(ctx, c, s, keys, args, mustHold, 0)
}

// ArrayPatient is Array for a sale its buyer cannot retry as itself (a
// free registration: a second try makes a second registration): it waits
// for the replicas up to the request's deadline, at most patience, before
// it gives up. A registration given up on stays made; the buyer is told
// to retry (the per-buyer limit bounds what a retry adds).
func (r *Replication) ArrayPatient(ctx context.Context, c rueidis.Client, s *eval.Script, keys, args []string,
	mustHold func([]rueidis.RedisMessage) bool, patience time.Duration) ([]rueidis.RedisMessage, error) {
	return r.array(ctx, c, s, keys, args, mustHold, patience)
}

func (r *Replication) array(ctx context.Context, c rueidis.Client, s *eval.Script, keys, args []string,
	mustHold func([]rueidis.RedisMessage) bool, patience time.Duration) ([]rueidis.RedisMessage, error) {
	if !r.On() {
		return eval.Array(ctx, c, s, keys, args)
	}
	var arr []rueidis.RedisMessage
	var acked int64
	var err error
	if patience > 0 {
		arr, acked, err = eval.ArrayWait(ctx, c, s, keys, args, r.Replicas, r.WaitTimeout(), patience)
	} else {
		arr, acked, err = r.batched(ctx, c, s, keys, args)
	}
	if err != nil || acked >= r.Replicas || !mustHold(arr) {
		return arr, err
	}
	r.timeouts.Add(1)
	return nil, ErrNotReplicated
}

// Payments that come together share a WAIT. Each paid script with its
// WAIT on a dedicated connection of its own (eval.ArrayWait) made every
// payment a round trip and a blocking WAIT of its own: flash with one
// replica ran at 62-70% of the pairs/s without it (docs/decisions.md, The
// cost of waiting for a replica). A node now sends the paid scripts of one
// slot that arrive while its last batch of them is in flight as the next
// batch: the scripts down one dedicated connection, then one WAIT
// (eval.ArraysWait), which covers every write the connection made. A
// batch.Queue a slot (a hash tag, keys.HashTag) and client sends the
// batches while payments wait; a payment alone goes at once, alone. A
// batch runs under none of its payments' deadlines (the WAIT's timeout and
// batchMargin; with the first payment's context values): a payment whose
// deadline passes stops waiting (confirm and payment are idempotent: a
// retry answers the order as the batch left it), and one whose caller
// stopped waiting before its batch went is not sent. A payment that waited
// the WAIT's timeout for its batch to go (a replica slow to acknowledge
// holds every batch that long), or finds waitQueueMax waiting, is not sent
// either: it is ErrNotReplicated at once, as a payment whose WAIT timed out
// was, and its retry pays it.
const (
	waitBatchMax = 64
	waitQueueMax = 4096
	batchMargin  = 5 * time.Second
)

// batchKey names the batches of one client and slot: a dedicated
// connection of a Redis Cluster serves one slot's node.
type batchKey struct {
	c   rueidis.Client
	tag string
}

// batched runs s in the next batch of its slot's paid scripts and gives
// its reply and the replicas that acknowledged it.
func (r *Replication) batched(ctx context.Context, c rueidis.Client, s *eval.Script, ks, args []string) ([]rueidis.RedisMessage, int64, error) {
	k := batchKey{c: c, tag: keys.HashTag(ks[0])}
	v, ok := r.batches.Load(k)
	if !ok {
		v, _ = r.batches.LoadOrStore(k, r.newQueue(c))
	}
	call := &eval.Call{Script: s, Keys: ks, Args: args}
	if err := v.(*batch.Queue[*eval.Call]).Do(ctx, call); err != nil {
		if err == batch.ErrFull {
			r.timeouts.Add(1)
			return nil, 0, ErrNotReplicated
		}
		return nil, 0, err
	}
	return call.Arr, call.Acked, call.Err
}

// newQueue is the queue of c's paid scripts of one slot.
func (r *Replication) newQueue(c rueidis.Client) *batch.Queue[*eval.Call] {
	return &batch.Queue[*eval.Call]{
		Send: func(ctx context.Context, calls []*eval.Call) error {
			eval.ArraysWait(ctx, c, calls, r.Replicas, r.WaitTimeout())
			return nil
		},
		Max: waitBatchMax, Limit: waitQueueMax, // Full: batch.ErrFull
		Timeout: r.WaitTimeout() + batchMargin,
		Expire: func(waited time.Duration) error {
			if waited >= r.WaitTimeout() {
				r.timeouts.Add(1) // counted as it is refused, whether or not its caller still waits
				return ErrNotReplicated
			}
			return nil
		},
	}
}

// Replicas is what the masters ticketd writes to report of their replicas.
type Replicas struct {
	// Online is the fewest replicas in sync that any master has (each
	// master holds some events' sales, so the weakest is what some get).
	// In sync is online and acknowledged within InSyncLag.
	Online int
	// Lag is the longest time since any online replica acknowledged its
	// master, in whole seconds as Redis counts it.
	Lag time.Duration
}

// InSyncLag is how long a replica may go without acknowledging its master
// and still count as in sync (Redis' own min-replicas-max-lag default): a
// hung replica would make every sale wait out its WAIT, so past this the
// node stops sales at once instead.
const InSyncLag = 10 * time.Second

// ReadReplicas reads INFO replication of every master rc writes to.
func ReadReplicas(ctx context.Context, rc rueidis.Client) (Replicas, error) {
	masters, err := Masters(ctx, rc)
	if err != nil {
		return Replicas{}, err
	}
	out := Replicas{Online: -1}
	for _, addr := range sortedAddrs(masters) {
		n := masters[addr]
		info, err := n.Do(ctx, n.B().Info().Section("replication").Build()).ToString()
		if err != nil {
			return Replicas{}, fmt.Errorf("redisstate: read replication of %s: %w", cmpAddr(addr), err)
		}
		online, lag := replicasOf(info)
		if out.Online < 0 || online < out.Online {
			out.Online = online
		}
		out.Lag = max(out.Lag, lag)
	}
	return out, nil
}

func cmpAddr(a string) string {
	if a == "" {
		return "Redis"
	}
	return a
}

// replicasOf reads an INFO replication reply's replica lines
// ("slave0:ip=…,port=…,state=online,offset=…,lag=0"): the online ones, and
// the longest lag among them.
func replicasOf(info string) (online int, lag time.Duration) {
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || len(name) <= len("slave") || !strings.HasPrefix(name, "slave") || strings.TrimLeft(name[len("slave"):], "0123456789") != "" {
			continue
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				fields[k] = val
			}
		}
		s, err := strconv.Atoi(fields["lag"])
		if fields["state"] != "online" || err != nil {
			continue
		}
		lag = max(lag, time.Duration(s)*time.Second)
		if time.Duration(s)*time.Second <= InSyncLag {
			online++
		}
	}
	return online, lag
}
