package room

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/batch"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
)

// A rush of joins is where a room's Redis time goes: a hundred thousand
// buyers each join once in the first minute. A script call costs Redis
// tens of microseconds before its first command, so a node sends the joins
// of one room in batches, one room_join call each: the joins that arrive
// while the room's last call runs go together in the next (one goroutine
// a room sends them, batch after batch, while any wait), and a join that
// finds no call in flight in a busy room (its last batch, less than
// joinBusy ago, held several joins) waits joinLinger for others before its
// batch goes (joinLingerEarly until t0Margin before T0). A room joined one
// at a time sends each join at once, alone.

// joinBatchMax is the most joins one room_join call takes (a call of 32
// runs about a third of a millisecond of Redis).
const joinBatchMax = 32

// joinLinger is how long the first join of a busy room's batch waits for
// others: at 2,000 joins a second, a batch of about ten, for 5 ms more on
// each join's answer.
const joinLinger = 5 * time.Millisecond

// joinLingerEarly is joinLinger until t0Margin before T0, while the
// pre-queue fills: no pass can come before T0, so a join's answer waits a
// little longer for a larger batch. A call's own cost is about that of one
// join in it (room_join of 1 join cost Redis 57 us of CPU, of 3 joins 114
// us, alone on a 2-core machine), and a pre-queue of 600 joins a second went
// in batches of 3 at 5 ms: this makes them about 12.
const joinLingerEarly = 20 * time.Millisecond

// joinBusy is how recent a room's last batch of several joins makes it
// busy.
const joinBusy = 50 * time.Millisecond

// joinTimeout bounds one batch's call: a batch serves several requests, so
// it runs under none of their deadlines (a join whose own deadline passes
// stops waiting; its place, if the batch made it, is its identity's and a
// retry answers it). It carries the values of its first join's context.
const joinTimeout = 5 * time.Second

// joinArgs is one join's five arguments of room_join.
type joinArgs [5]string

// joinCall is one join of a batch: its arguments and, once its batch is
// answered, its answer.
type joinCall struct {
	args joinArgs
	ans  []rueidis.RedisMessage // the join's answer (lib/room_join's)
	figs []rueidis.RedisMessage // its batch's reply: the room's figures from figsAt
}

// joinQueue is one room's joins (batch.Queue), under one set of common
// arguments.
type joinQueue struct {
	batch.Queue[*joinCall]
	sent   atomic.Int64 // when the last batch of several joins went (Unix ns)
	t0     time.Time    // the room's T0 (its sales start)
	keys   []string
	common []string // room_join's first five arguments
}

// joinCommon is room_join's first five arguments, every join's of room
// roomID under cfg.
func (s *Service) joinCommon(cfg *catalog.Room, roomID string) []string {
	return []string{strconv.FormatInt(cfg.SalesStartAt.UnixMilli(), 10),
		strconv.FormatInt(cfg.PassTTL.Milliseconds(), 10), strconv.Itoa(s.admitPerCall()), cfg.Spec(),
		keys.RoomFields(roomID)}
}

// joinQueueOf is the queue of room rm's joins under cfg, by their common
// arguments (a catalog change starts a new queue: joins of one batch share
// them).
func (s *Service) joinQueueOf(rm string, cfg *catalog.Room) *joinQueue {
	common := s.joinCommon(cfg, rm)
	id := rm + "\x00" + strings.Join(common, "\x00")
	if v, ok := s.joins.Load(id); ok {
		return v.(*joinQueue)
	}
	ev, _ := keys.SplitRoom(rm)
	q := &joinQueue{common: common, t0: cfg.SalesStartAt, keys: []string{s.Space.Room(rm), s.Space.RoomWho(rm), s.Space.RoomLine(rm),
		s.Space.RoomPlaces(rm), s.Space.Live(keys.Partition(ev)), s.Space.Sold(ev), s.Space.RoomPasses(rm),
		s.Space.RoomAudit(rm)}}
	q.Send = func(ctx context.Context, calls []*joinCall) error { return s.sendJoins(ctx, q, calls) }
	q.Max, q.Limit, q.Full, q.Timeout = joinBatchMax, joinQueueMax, errJoinsBusy, joinTimeout
	q.Linger = func() time.Duration {
		return lingerOf(time.Since(time.Unix(0, q.sent.Load())), q.t0.Sub(s.now()))
	}
	v, _ := s.joins.LoadOrStore(id, q)
	return v.(*joinQueue)
}

// joinQueueMax is the most joins a room's queue holds on a node; a join
// beyond it is refused at once (503, retry): joins that come faster than
// batches can take them would otherwise wait out their deadlines.
const joinQueueMax = 4096

// errJoinsBusy refuses a join the room's queue has no room for.
var errJoinsBusy = apierr.Unavailable("the waiting room is taking more joins than it can answer; retry shortly")

// figsAt is where the room's figures (lib/room room_figures) start in
// room_join's reply.
const figsAt = 1

// join sends one join in its room's next batch and gives its answer:
// {code, queueId, place...} or {R.SHORT}, with its batch's reply, whose
// room figures start at figsAt; or the error of its batch ({R.STOPPED} is
// errStopped). It stops waiting when ctx ends; a join whose ctx ended
// before its batch went is not sent.
func (s *Service) join(ctx context.Context, q *joinQueue, args joinArgs) (ans, figs []rueidis.RedisMessage, err error) {
	c := &joinCall{args: args}
	if err := q.Do(ctx, c); err != nil {
		return nil, nil, err
	}
	return c.ans, c.figs, nil
}

// lingerOf is how long the first join of a batch waits for others, in a
// room whose last batch of several joins went idle ago and whose T0 is
// toT0 away (negative once past): none when the room is not busy.
func lingerOf(idle, toT0 time.Duration) time.Duration {
	switch {
	case idle >= joinBusy:
		return 0
	case beforeT0Margin(toT0):
		return joinLingerEarly
	}
	return joinLinger
}

// sendJoins runs one room_join call for batch and answers each join.
func (s *Service) sendJoins(ctx context.Context, q *joinQueue, batch []*joinCall) error {
	if len(batch) > 1 {
		q.sent.Store(time.Now().UnixNano())
	}
	args := make([]string, 0, len(q.common)+5*len(batch))
	args = append(args, q.common...)
	for _, c := range batch {
		args = append(args, c.args[:]...)
	}
	s.joinCalls.Add(1)
	arr, err := eval.Array(ctx, s.Redis, joinScript, q.keys, args)
	if err != nil {
		return err
	}
	return joinAnswers(arr, batch)
}

// joinAnswers gives each join of the batch its answer from room_join's
// reply.
func joinAnswers(arr []rueidis.RedisMessage, batch []*joinCall) error {
	if err := okOrStopped(arr, "room_join"); err != nil {
		return err
	}
	at := figsAt + figuresLen // the first join's answer
	if len(arr) != at+len(batch) {
		return fmt.Errorf("room_join answered %d values for %d joins", len(arr), len(batch))
	}
	for i, c := range batch {
		var err error
		if c.ans, err = arr[at+i].ToArray(); err != nil {
			return fmt.Errorf("room_join's answer %d: %w", i, err)
		}
		c.figs = arr
	}
	return nil
}
