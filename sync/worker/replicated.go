package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
)

// errNotReplicated reports a stream whose entries fewer replicas than
// Replication asks for hold: they stay pending, written once the replicas
// have them.
var errNotReplicated = errors.New("worker: the paid entries are not yet on the Redis replicas TICKETD_REDIS_WAIT_REPLICAS asks for; " +
	"they are written to Postgres once they are")

// errNotPending reports a stream whose replicas could not be asked: the
// entry claimed for the WAIT was no longer pending (acknowledged, or taken
// by another worker, between the read and the claim), so the claim wrote
// nothing for the WAIT to cover. The stream's entries wait for the next
// round.
var errNotPending = errors.New("worker: an entry read is no longer pending, so its stream's replicas could not be asked")

// unreplicated returns the partitions of es whose streams fewer replicas
// than Replication asks for hold (or whose replicas could not be asked),
// and why (nil when there are none): their entries are not written yet.
//
// Postgres must never hold a sale the Redis a failover promotes lacks: a
// payment whose WAIT timed out (answered 503, or never answered: the master
// died) is on the master alone, and if the worker wrote it, the promoted
// replica would sell its units again (oversold in Postgres, and no
// rollback to find: every acknowledged sale is on the replica). So, per
// stream, the worker re-claims one entry it read to itself (XCLAIM
// JUSTID: a write made after the read, so propagated after every entry
// read and the script that queued each, whichever entry it names) and
// WAITs for that write on the same connection; the replication stream is
// ordered, so a replica that holds the claim holds the entries. An entry never replicated is never written: a failover
// loses it as it loses its payment, which no buyer was told of.
func (w *Worker) unreplicated(ctx context.Context, es []entry) (map[int]bool, error) {
	if !w.Replication.On() {
		return nil, nil
	}
	// one entry still in the stream a partition (a deleted one's claim
	// would write nothing)
	last := map[int]string{}
	for _, e := range es {
		if e.fields != nil {
			last[e.part] = e.id
		}
	}
	type result struct {
		part int
		err  error
	}
	res := make(chan result, len(last))
	for p, id := range last {
		go func() { res <- result{p, w.waitReplicas(ctx, p, id)} }()
	}
	var short map[int]bool
	var err error
	for range last {
		r := <-res
		if r.err != nil {
			if short == nil {
				short = map[int]bool{}
			}
			short[r.part] = true
			err = errors.Join(err, r.err)
		}
	}
	return short, err
}

// waitReplicas claims entry id of partition p's stream to this consumer
// and waits for the replicas to hold the claim.
func (w *Worker) waitReplicas(ctx context.Context, p int, id string) error {
	key := w.Space.Paid(p)
	n, timeout := w.Replication.Replicas, eval.WaitMillis(w.Replication.WaitTimeout())
	var acked int64
	err := w.Redis.Dedicated(func(d rueidis.DedicatedClient) error {
		res := d.DoMulti(ctx,
			d.B().Xclaim().Key(key).Group(w.group()).Consumer(w.consumerName()).MinIdleTime("0").Id(id).Justid().Build(),
			d.B().Wait().Numreplicas(n).Timeout(timeout).Build())
		claimed, err := res[0].ToArray()
		if err != nil {
			return err
		}
		if len(claimed) == 0 {
			// Not pending with anyone (acknowledged meanwhile): the claim
			// wrote nothing for the WAIT to cover.
			return fmt.Errorf("%w (entry %s)", errNotPending, id)
		}
		acked, err = res[1].AsInt64()
		return err
	})
	if err != nil {
		return fmt.Errorf("worker: wait for the replicas of %s: %w", key, err)
	}
	if acked < n {
		return fmt.Errorf("%w (%s: %d of %d)", errNotReplicated, key, acked, n)
	}
	return nil
}
