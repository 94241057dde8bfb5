package seats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/along"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/roompass"
)

// MaxBest is the most seats one best-available call picks.
const MaxBest = 10

// bestTries is how many candidate blocks one read of the map tries before
// reading it again (once): a block is lost only to a buyer who took a seat
// of it since the read, so a few tries cover all but a rush on one row.
const bestTries = 5

// BestRequest is a best-available call.
type BestRequest struct {
	// Quantity is the number of adjacent seats, 1 to MaxBest.
	Quantity int
	// Category limits the pick to rows of this category ("" any priced one).
	Category string
	// Token holds the seats. Create makes it first (CreateToken) when it
	// does not exist: a new token, or a buyer session's own. Without
	// Create the token must exist (ErrHoldExpired otherwise), as for Hold.
	Token  string
	Create bool
	// Client is who a new token counts for (holds.Client; the zero value
	// counts none): a token beyond the client's limit is not created.
	Client holds.Client
	// Pass, on an event with a waiting room, is the pass a new token
	// burns (CreatePassToken; Token is then the pass's own). The token is
	// made only once a block is found, and kept even when every block
	// tried was taken meanwhile: it holds the pass's units.
	Pass *roompass.Pass
	// Along goes in the first read's round trip (the request's rate
	// limit: handlers/guard.Deferred.Ride); its Settle runs before
	// anything is written, and its error is the answer.
	Along along.Along
}

// BestAvailable picks Quantity adjacent free seats in one row and holds
// them under the token, all or nothing, answering as Hold does. Best first:
// rows in map order, priced categories only; within a row the block whose
// centre is nearest the row's middle (the lower seats on a tie); never a
// block the event's single-seat rule would refuse. It reads the rows once,
// then tries the best few blocks through Hold (each try atomic, the rule
// checked by the script); when others took them all meanwhile it reads
// once more. No block left is a 409 SEAT_CONFLICT with no conflicts.
func (e *Engine) BestAvailable(ctx context.Context, ev *catalog.CompiledEvent, req BestRequest) (HoldResult, error) {
	if !ev.Seated() {
		return HoldResult{}, ErrNotSeated
	}
	q := req.Quantity
	if q < 1 || q > MaxBest {
		return HoldResult{}, apierr.Invalid("quantity must be between 1 and %d", MaxBest)
	}
	if limit := MaxPerToken(ev); q > limit {
		return HoldResult{}, tokenLimitError(limit)
	}
	if req.Category != "" {
		c := ev.Categories[req.Category]
		if c == nil {
			return HoldResult{}, apierr.Invalid("category %q is not a category of this event's seat map", req.Category)
		}
		if c.Price == nil {
			return HoldResult{}, apierr.Invalid("category %q has no price: its seats are not for sale", req.Category)
		}
	}
	if !ValidToken(req.Token) {
		return HoldResult{}, ErrInvalidToken
	}
	var rows []*catalog.Row
	for i := range ev.SeatMap.Rows {
		r := &ev.SeatMap.Rows[i]
		c := ev.Categories[r.Category]
		if r.Seats >= q && c != nil && c.Price != nil && (req.Category == "" || r.Category == req.Category) {
			rows = append(rows, r)
		}
	}
	// A limit the node decided alone is taken before anything is sent.
	if err := req.Along.Early(); err != nil {
		return HoldResult{}, err
	}
	// A named token must exist: asked in the first read's round trip, and
	// answered before anything about seats, as Hold answers a gone token;
	// req.Along goes in that round trip too.
	var exists []rueidis.Completed
	if !req.Create {
		exists = append(exists, e.Redis.B().Exists().Key(e.Space.Hold(ev.ID, req.Token)).Build())
	}
	// (With counts req.Along sent: nothing may return between it and the
	// first read below, which sends it)
	first := req.Along.With(exists...)
	created := !req.Create
	made := false // this call made the token: it must not outlive a failure
	res, err := func() (HoldResult, error) {
		for range 2 {
			blocks, answers, err := e.bestBlocks(ctx, ev, rows, q, first)
			if err == nil && len(first) > 0 {
				if answers == nil { // no row to read: asked alone
					answers = e.Redis.DoMulti(ctx, first...)
				}
				err = e.firstAnswers(&req, answers)
				first = nil
			}
			if err != nil {
				return HoldResult{}, err
			}
			if len(blocks) == 0 {
				break
			}
			if !created {
				_, fresh, err := e.createToken(ctx, ev.ID, req.Token, req.Client, req.Pass)
				if err != nil {
					return HoldResult{}, err
				}
				// A token that existed (a buyer session's own, handed out
				// by hold-token) is the caller's: never dropped; nor is
				// one a pass made.
				created, made = true, fresh && req.Pass == nil
			}
			for _, b := range blocks {
				res, err := e.Hold(ctx, ev, req.Token, b)
				var ae *apierr.Error
				if err != nil && errors.As(err, &ae) && (ae.Code == "SEAT_CONFLICT" || ae.Code == "SEAT_RULE") {
					continue // taken since the read
				}
				return res, err
			}
		}
		return HoldResult{}, noBlock(q)
	}()
	if err != nil && made {
		// The answer names no token: the buyer never gets it, so it must
		// not count against the client's holds. One that cannot be dropped
		// (Redis trouble: then err is likely that too) counts until its
		// TTL ends, as any token.
		_ = e.dropToken(ctx, ev.ID, req.Token, req.Client)
	}
	return res, err
}

// timeScript is Redis' clock in an event's slot (lua/redis_time.lua).
var timeScript = eval.Load("redis_time")

// firstAnswers reads the answers to the first round trip's extra
// commands: req.Along's (its Settle), then the named token's EXISTS.
func (e *Engine) firstAnswers(req *BestRequest, answers []rueidis.RedisResult) error {
	rest, err := req.Along.Split(answers)
	if err != nil {
		return err
	}
	if req.Create {
		return nil
	}
	n, err := rest[0].AsInt64()
	if err != nil {
		return fmt.Errorf("seats: best available: %w", err)
	}
	if n == 0 {
		return ErrHoldExpired
	}
	return nil
}

func noBlock(q int) *apierr.Error {
	msg := fmt.Sprintf("no %d adjacent seats are free together; try fewer or pick seats on the map", q)
	if q == 1 {
		msg = "no seat can be picked on its own now; pick seats on the map"
	}
	return seatConflict(msg, []string{})
}

// readChunk bounds the seats one round trip of bestBlocks reads, so no
// single command blocks Redis long on a big map.
const readChunk = 1000

// bestBlocks reads rows in map order, a batch of about readChunk seats per
// round trip, and returns up to bestTries blocks of q free seats, best
// first, stopping once it has them. first go in the first batch's round
// trip, ahead of its reads; their answers are nil when nothing was read.
func (e *Engine) bestBlocks(ctx context.Context, ev *catalog.CompiledEvent, rows []*catalog.Row, q int,
	first []rueidis.Completed) ([][]string, []rueidis.RedisResult, error) {
	var out [][]string
	var answers []rueidis.RedisResult
	for i := 0; i < len(rows) && len(out) < bestTries; {
		j, n := i, 0
		for j < len(rows) && (j == i || n+rows[j].Seats <= readChunk) {
			n += rows[j].Seats
			j++
		}
		taken, firstAnswers, err := e.takenSeats(ctx, ev, rows[i:j], n, first)
		if err != nil {
			return nil, nil, err
		}
		if first != nil {
			answers, first = firstAnswers, nil
		}
		off := 0
		for _, r := range rows[i:j] {
			out = append(out, rowBlocks(ev.SeatMap.Rule(), r, taken[off:off+r.Seats], q)...)
			off += r.Seats
		}
		i = j
	}
	return out[:min(len(out), bestTries)], answers, nil
}

// takenSeats reads whether each seat of rows (n seats in all) is booked or
// held (at Redis' time), in row and number order.
func (e *Engine) takenSeats(ctx context.Context, ev *catalog.CompiledEvent, rows []*catalog.Row, n int,
	first []rueidis.Completed) ([]bool, []rueidis.RedisResult, error) {
	labels := make([]string, 0, n)
	for _, r := range rows {
		for k := 1; k <= r.Seats; k++ {
			labels = append(labels, r.Label+"-"+strconv.Itoa(k))
		}
	}
	b := e.Redis.B()
	// Redis' clock: TIME, or with commands of other slots along (a Redis
	// Cluster takes no slotless command beside them) redis_time in the
	// event's slot.
	clock := b.Time().Build()
	var timed eval.Pipelined
	if len(first) > 0 {
		timed = eval.Pipeline(e.Redis, timeScript, []string{e.Space.Booked(ev.ID)}, nil)
		clock = timed.Cmd
	}
	res := e.Redis.DoMulti(ctx, append(first[:len(first):len(first)],
		clock,
		b.Hmget().Key(e.Space.Booked(ev.ID)).Field(labels...).Build(),
		b.Hmget().Key(e.Space.SeatHolds(ev.ID)).Field(labels...).Build(),
		b.Hmget().Key(e.Space.OrderSeats(ev.ID)).Field(labels...).Build(),
		b.Hmget().Key(e.Space.RegSeats(ev.ID)).Field(labels...).Build())...)
	firstAnswers := res[:len(first)]
	res = res[len(first):]
	var now int64
	var err error
	if len(first) > 0 {
		var arr []rueidis.RedisMessage
		if arr, err = timed.Reply(ctx, res[0]); err == nil {
			now, err = timeOf(arr)
		}
	} else {
		now, err = redisNow(res[0])
	}
	if err != nil {
		return nil, nil, fmt.Errorf("seats: best available: %w", err)
	}
	booked, err := res[1].ToArray()
	if err != nil {
		return nil, nil, fmt.Errorf("seats: best available: booked: %w", err)
	}
	var holds [3][]rueidis.RedisMessage // tokens', orders', registrations'
	for j := range holds {
		if holds[j], err = res[2+j].ToArray(); err != nil {
			return nil, nil, fmt.Errorf("seats: best available: seats: %w", err)
		}
	}
	out := make([]bool, len(labels))
	for i := range out {
		tok, _ := holds[0][i].ToString()
		ord, _ := holds[1][i].ToString()
		out[i] = !booked[i].IsNil() || !holds[2][i].IsNil() || HolderAt(tok, now) != "" || HolderAt(ord, now) != ""
	}
	return out, firstAnswers, nil
}

// rowBlocks returns the blocks of q free seats of row r (taken[k-1] for
// seat k) that the rule allows, best first: the centre nearest the row's
// middle, then the lower seats.
func rowBlocks(rule string, r *catalog.Row, taken []bool, q int) [][]string {
	isTaken := func(k int) bool { return taken[k-1] }
	var starts []int
	free := 0 // free seats in a row ending at the current one
	for k := 1; k <= r.Seats; k++ {
		if taken[k-1] {
			free = 0
			continue
		}
		free++
		if free < q {
			continue
		}
		a := k - q + 1
		block := make([]int, q)
		for i := range block {
			block[i] = a + i
		}
		if len(strands(rule, r.Seats, isTaken, block)) == 0 {
			starts = append(starts, a)
		}
	}
	// Twice the distance of a block's centre from the row's middle.
	dist := func(a int) int {
		d := 2*a + q - 1 - (r.Seats + 1)
		if d < 0 {
			return -d
		}
		return d
	}
	slices.SortFunc(starts, func(a, b int) int {
		if c := cmp.Compare(dist(a), dist(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([][]string, 0, min(len(starts), bestTries))
	for _, a := range starts[:min(len(starts), bestTries)] {
		block := make([]string, q)
		for i := range block {
			block[i] = r.Label + "-" + strconv.Itoa(a+i)
		}
		out = append(out, block)
	}
	return out
}
