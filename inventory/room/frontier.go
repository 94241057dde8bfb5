package room

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
)

// A frontier is a room as one node keeps it in memory, refreshed by each
// of its steps (Run; a room at rest is stepped less often than every
// tick): the line's size and stock figures, the ids of the places at its
// head in order, and its scores sampled at fixed positions, so the
// poll of a waiting place is answered without Redis: exactly at the head,
// by its rank (in its poll token) among the samples farther back. Redis
// then sees about one poll per admitted place, the one that takes its
// pass, and the ticks.
type frontier struct {
	at      time.Time // when this node read it
	sampled time.Time // when its scores were read
	// moved is the places admitted since the scores were read: the
	// positions the samples give are that many fewer now.
	moved int64
	reading
	// scores are the line's scores at positions pos (ascending both).
	scores []float64
	pos    []int64
	// head is the places at the head of the line as this tick read them
	// (NearHead of them at most): id -> the places before it. A poll of
	// one is answered exactly from here; a place nearer than NearHead and
	// not in it has left the line (admitted, or gone), and its poll reads
	// Redis, which gives the pass.
	head map[string]int64
	// first and last are the head's first and last ids, and lv the room's
	// count of places that left the line as the head was read: the next
	// tick sends them (prev), and Redis lists the head again only when it
	// changed (lib/room room_frontier).
	first, last string
	lv          int64
}

// prev is the head as the next tick sends it (room_status ARGV[9]).
func (f *frontier) prev() string {
	if f == nil {
		return ""
	}
	return strconv.Itoa(len(f.head)) + " " + f.first + " " + f.last + " " + strconv.FormatInt(f.lv, 10)
}

// frontierSamples is the most line scores one tick reads: the estimate of a
// place's position is off by at most the line's length over it (a place
// far back is told about where it stands; the head is listed exactly).
// Each score is a script command of a few microseconds: 256 made the
// sampling ticks a quarter of a sell-out's Redis time.
const frontierSamples = 64

// frontierFresh is how old a frontier may be and still answer polls.
const frontierFresh = time.Second

// sampleEvery is how often a node's tick reads the line's scores (the
// costly part of a tick); the ticks between read the figures and the head
// alone and keep the scores they had, which move little in that time.
const sampleEvery = time.Second

// frontierOf parses lib/room's room_frontier from arr[at]. A head that
// Redis found unchanged (listed as -1) is was's, which the tick sent as
// prev.
func frontierOf(arr []rueidis.RedisMessage, at int, was *frontier) (*frontier, error) {
	var n [11]int64
	for i := range n {
		v, err := eval.Int(arr, at+i)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	f := &frontier{reading: reading{state: "w", waiting: n[0], waitingUnits: n[1], left: n[2], resv: n[3], now: n[4],
		admitted: n[5], first: n[6], used: n[7], lapsed: n[8]}, lv: n[9]}
	step := n[10]
	nhead, err := eval.Int(arr, at+11)
	if err != nil {
		return nil, err
	}
	at += 12
	switch {
	case nhead == -1 && was != nil:
		f.head, f.first, f.last = was.head, was.first, was.last
		nhead = 0
	case nhead < 0:
		return nil, fmt.Errorf("room: frontier says its head is unchanged, and this node sent none")
	case int64(len(arr)-at) < nhead:
		return nil, fmt.Errorf("room: frontier lists %d head places, the reply has %d more elements", nhead, len(arr)-at)
	default:
		f.head = make(map[string]int64, nhead)
		for i := range nhead {
			id, err := arr[at+int(i)].ToString()
			if err != nil {
				return nil, err
			}
			f.head[id] = i
			if i == 0 {
				f.first = id
			}
			f.last = id
		}
	}
	for i := at + int(nhead); i < len(arr); i++ {
		sv, err := arr[i].ToString()
		if err != nil {
			return nil, err
		}
		v, err := strconv.ParseFloat(sv, 64)
		if err != nil {
			return nil, err
		}
		f.scores = append(f.scores, v)
		f.pos = append(f.pos, int64(len(f.pos))*step)
	}
	if k := len(f.pos); k > 0 && f.waiting > 0 {
		f.pos[k-1] = min(f.pos[k-1], f.waiting-1) // the last sample is the line's last place
	}
	return f, nil
}

// ahead estimates the places before rank r in the line, interpolating
// between the samples around it, less the places admitted since they were
// read; ok is false when r is before the head (the place is no longer
// waiting: admitted, or gone) or may be.
func (f *frontier) ahead(r float64) (int64, bool) {
	n, ok := f.sampledAhead(r)
	if !ok || n < f.moved {
		return 0, false
	}
	return n - f.moved, true
}

// sampledAhead is ahead as the samples were read.
func (f *frontier) sampledAhead(r float64) (int64, bool) {
	if len(f.scores) == 0 || r < f.scores[0] {
		return 0, false
	}
	i := sort.Search(len(f.scores), func(i int) bool { return f.scores[i] > r }) - 1 // scores[i] <= r
	if i == len(f.scores)-1 {
		if r == f.scores[i] {
			return f.pos[i], true
		}
		return f.waiting, true // behind the last place read: it joined since
	}
	lo, hi := f.scores[i], f.scores[i+1]
	frac := 0.0
	if hi > lo {
		frac = (r - lo) / (hi - lo)
	}
	return f.pos[i] + int64(math.Round(frac*float64(f.pos[i+1]-f.pos[i]))), true
}

func (s *Service) nearHead() int64 {
	if s.NearHead > 0 {
		return s.NearHead
	}
	return 200
}

// Poll is Status for a place named by its poll token: from the node's
// frontier when the place is far from the head and the frontier fresh,
// else from Redis (Status, which also moves the line).
func (s *Service) Poll(ctx context.Context, cfg *catalog.Room, roomID string, p Place) (Status, error) {
	return s.poll(ctx, cfg, roomID, p, nil)
}

// Count is told of each poll a Wait makes before it is answered, memory
// true when the node answers it from its frontier and false when it reads
// Redis (the storefront counts the request in a rate limit of the node's
// memory or of Redis accordingly); an error ends the Wait with it.
type Count func(ctx context.Context, memory bool) error

// poll is Poll, told to count (nil: nothing).
func (s *Service) poll(ctx context.Context, cfg *catalog.Room, roomID string, p Place, count Count) (Status, error) {
	if st, ok := s.remembered(cfg, roomID, p); ok {
		if count != nil {
			if err := count(ctx, true); err != nil {
				return Status{}, err
			}
		}
		return st, nil
	}
	if count != nil {
		if err := count(ctx, false); err != nil {
			return Status{}, err
		}
	}
	return s.Status(ctx, cfg, roomID, p.QueueID)
}

// remembered is the place's status from the node's frontier: ok when the
// frontier is fresh and lists the place at the head of the line (its
// position exact as of the tick), or places it far from the head. A place
// near the head that the frontier does not list has left the line since,
// or is about to be admitted: Redis answers it.
func (s *Service) remembered(cfg *catalog.Room, roomID string, p Place) (Status, bool) {
	v, ok := s.frontiers.Load(roomID)
	if !ok {
		return Status{}, false
	}
	f := v.(*frontier)
	if s.now().Sub(f.at) > frontierFresh {
		return Status{}, false
	}
	ahead, ok := f.head[p.QueueID]
	if !ok {
		if math.IsNaN(p.Rank) {
			return Status{}, false
		}
		ahead, ok = f.ahead(p.Rank)
		if !ok || ahead < s.nearHead() {
			return Status{}, false
		}
	}
	r := f.reading
	r.qty, r.ahead = p.Quantity, ahead
	st := r.status(cfg)
	st.Memory = true
	return st, true
}
