package rebuild

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/reply"
)

var restoreScript = eval.Load("event_restore")

// errSalesRun means a partition's marker is back while this rebuild
// writes: another rebuild took the lock and published.
var errSalesRun = errors.New("sales run again: another rebuild published meanwhile")

// writeEvents gives every event its counters back: the catalog's events
// and any other event a paid order names (its event never reached the
// catalog of record: counted, but nothing sells it).
func (r *Rebuilder) writeEvents(ctx context.Context, st *state, rep *Report) error {
	caps := map[string]map[string]int64{}
	for ti := range st.tenants {
		for ei := range st.tenants[ti].Events {
			ev := &st.tenants[ti].Events[ei]
			ev.TenantID = st.tenants[ti].ID
			c, uncapped := catalogstore.EventCaps(ev)
			// A sold counter of an object no longer in the event is frozen
			// at its count, as a catalog apply freezes it (catalog_caps.lua):
			// nothing more of it sells.
			live := map[string]bool{}
			for _, f := range uncapped {
				live[f] = true
			}
			for f, n := range st.sold[ev.ID] {
				if _, ok := c[f]; !ok && !live[f] {
					c[f] = n
				}
			}
			caps[ev.ID] = c
		}
	}
	events := map[string]bool{}
	for _, evs := range []iter.Seq[string]{maps.Keys(caps), maps.Keys(st.sold), maps.Keys(st.booked), maps.Keys(st.used),
		maps.Keys(st.buyers), maps.Keys(st.paid), maps.Keys(st.loss.lost)} {
		for ev := range evs {
			events[ev] = true
		}
	}
	for ev := range events {
		sold := lossCounts(st.sold[ev], ev, st)
		args := counts(nil, caps[ev])
		args = counts(args, sold)
		args = pairs(args, st.booked[ev])
		args = counts(args, st.used[ev])
		args = counts(args, st.buyers[ev])
		ks := []string{r.Space.Caps(ev), r.Space.Sold(ev), r.Space.Booked(ev), r.Space.DiscountUsed(ev),
			r.Space.Live(keys.Partition(ev)), r.Space.Buyers(ev)}
		arr, err := eval.Array(ctx, r.Redis, restoreScript, ks, args)
		if err != nil {
			return fmt.Errorf("rebuild: restore event %s: %w", ev, err)
		}
		switch c, err := reply.Of(arr); {
		case err == nil && c == reply.Live:
			return fmt.Errorf("rebuild: restore event %s: %w", ev, errSalesRun)
		case err != nil || c != reply.OK:
			return fmt.Errorf("rebuild: restore event %s: %w", ev, eval.ErrReply)
		}
		rep.Events++
		rep.SoldCounters += len(st.sold[ev])
		rep.Admissions += sold["ev"]
		rep.BookedSeats += len(st.booked[ev])
		rep.DiscountCodes += len(st.used[ev])
		rep.Buyers += len(st.buyers[ev])
	}
	return nil
}

// pairs appends a count and the field, value pairs of m, by field.
func pairs(args []string, m map[string]string) []string {
	args = append(args, strconv.Itoa(len(m)))
	for _, f := range slices.Sorted(maps.Keys(m)) {
		args = append(args, f, m[f])
	}
	return args
}

// counts is pairs for counters.
func counts(args []string, m map[string]int64) []string {
	args = append(args, strconv.Itoa(len(m)))
	for _, f := range slices.Sorted(maps.Keys(m)) {
		args = append(args, f, strconv.FormatInt(m[f], 10))
	}
	return args
}

// batch is how many commands one pipelined round trip carries.
const batch = 3000

// writeOrders puts back the Redis copies of recently paid orders (status
// and confirm replays answer from them, as before the loss) and their
// reserves' idempotency records, so a retried reserve replays the paid
// order instead of making a second one. A key's record is replaced
// whatever Redis holds: once its order is paid, a claim by any other
// attempt (an older snapshot's) is stale. A key whose 24 hours are over is
// not restored.
func (r *Rebuilder) writeOrders(ctx context.Context, st *state, rep *Report) error {
	if err := r.releaseStale(ctx, st); err != nil {
		return err
	}
	retention := orDefault(r.Retention, orders.DefaultRetention)
	idemTTL := orDefault(r.IdempotencyTTL, orders.DefaultIdempotencyTTL)
	now := time.Now()
	cmds := make(rueidis.Commands, 0, batch)
	flush := func() error {
		for _, res := range r.Redis.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return fmt.Errorf("rebuild: restore paid orders: %w", err)
			}
		}
		cmds = cmds[:0]
		return nil
	}
	for _, o := range st.recent {
		okey, ok := r.Space.Order(o.orderID)
		if !ok {
			continue
		}
		tix, err := ticketsJSON(o.tickets)
		if err != nil {
			return fmt.Errorf("rebuild: encode tickets of %s: %w", o.orderID, err)
		}
		paid := strconv.FormatInt(o.paidAt.UnixMilli(), 10)
		cmds = append(cmds,
			r.Redis.B().Hset().Key(okey).FieldValue().FieldValue("st", orders.StatusPaid).
				FieldValue("total", strconv.FormatInt(o.total, 10)).FieldValue("ch", o.owner).
				FieldValue("by", o.caller).FieldValue("ref", o.ref).FieldValue("tix", tix).
				FieldValue("paid", paid).FieldValue("exp", paid).Build())
		if strings.HasPrefix(o.owner, orders.StorefrontOwner("")) {
			// A copy releaseStale released says why it expired: it is paid.
			cmds = append(cmds, r.Redis.B().Hdel().Key(okey).Field("why").Build())
		}
		// An order only the stream has (o.record: read from this hash,
		// or from an entry of the older format that carries it) keeps its
		// record where it is until the sync worker has written it, as
		// confirm leaves it: nothing is written back, for a
		// worker that wrote it since (after the fence, sync/fence) dropped
		// the record and set the expiry, and a record and PERSIST written
		// over that would keep the hash for good.
		if o.record == "" {
			cmds = append(cmds,
				r.Redis.B().Hdel().Key(okey).Field(orders.StreamRecord).Build(),
				r.Redis.B().Pexpireat().Key(okey).MillisecondsTimestamp(o.paidAt.Add(retention).UnixMilli()).Build())
		}
		rep.Orders++
		if until := o.createdAt.Add(idemTTL); o.idemKey != "" && until.After(now) {
			cmds = append(cmds, r.Redis.B().Set().Key(r.Space.Idempotency(o.idemKey)).
				Value(orders.IdempotencyRecord(o.caller, o.fingerprint, o.orderID)).
				Pxat(until).Build())
			rep.IdempotencyKeys++
		}
		if len(cmds) >= batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// releaseStale releases every recently paid registration that Redis still
// holds unpaid: Redis came back from a snapshot older than its payment.
// Writing it back as paid over the held copy would leave what the held
// copy claims outside the counts (its seats in the registration seats
// hash, its discount hold, its client's count and its buyer's unpaid
// slot) for good: the sweep passes
// over a registration that is no longer held. Released first
// (registrations.Service.ReleaseStale), it leaves nothing behind; then the
// paid copy is written as for any order.
func (r *Rebuilder) releaseStale(ctx context.Context, st *state) error {
	regs := &registrations.Service{Redis: r.Redis, Space: r.Space, Retention: r.Retention, Logger: r.Logger}
	var ids []string
	var cmds rueidis.Commands
	check := func() error {
		for i, res := range r.Redis.DoMulti(ctx, cmds...) {
			v, err := res.ToString()
			if err != nil && !rueidis.IsRedisNil(err) {
				return fmt.Errorf("rebuild: read registrations: %w", err)
			}
			if v != "held" {
				continue
			}
			if err := regs.ReleaseStale(ctx, ids[i]); err != nil {
				return fmt.Errorf("rebuild: release %s: %w", ids[i], err)
			}
		}
		ids, cmds = ids[:0], cmds[:0]
		return nil
	}
	for _, o := range st.recent {
		okey, ok := r.Space.Order(o.orderID)
		if !ok || !strings.HasPrefix(o.owner, orders.StorefrontOwner("")) {
			continue
		}
		ids = append(ids, o.orderID)
		cmds = append(cmds, r.Redis.B().Hget().Key(okey).Field("st").Build())
		if len(cmds) >= batch {
			if err := check(); err != nil {
				return err
			}
		}
	}
	return check()
}
