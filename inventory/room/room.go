// Package room is an event's waiting room: buyers join before and after
// the on-sale (T0), wait in a line, and are admitted with a pass as units
// are left to sell; a storefront registration of the event burns a pass,
// and its units become the registration's claim in the same step. The
// room knows the stock: it never reserves, for live passes, more than the
// event's capacity less what is sold (lua/lib/room.lua says how).
//
// A multi-showing event has a room per showing (catalog Room.Lines), each
// a line of its own named by its room id (keys.RoomID); below, a room id
// is the event's id for an event's room.
//
// The state lives in Redis, in the event's slot (keys.Space Room*); the
// scripts room_join, room_status and room_leave change it, and
// reg_register burns a pass. Poll tokens and passes are HMAC-signed here,
// so a status poll or a registration needs no lookup to tell a forged one.
package room

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/roompass"
)

// Service runs the rooms of every event.
type Service struct {
	Redis rueidis.Client
	Space keys.Space
	// Key signs poll tokens and passes and derives each event's shuffle
	// key. Every node must have the same.
	Key []byte
	// AdmitPerCall caps the places one join or status call admits (0:
	// 64), so a call stays short when stock comes back in bulk;
	// AdmitPerTick caps one tick's (Run; 0: 256): the tick is one script
	// per room and node, so the wave at T0 goes out in a few ticks of a
	// few milliseconds of Redis each.
	AdmitPerCall, AdmitPerTick int
	// Now is the node's clock (nil: time.Now): only to refuse joins
	// before the room opens, to start ticking then and to tick less
	// before T0 (Run), to let a batch of joins wait longer before T0, and
	// to tell how old a frontier is; Redis' clock decides everything else.
	Now    func() time.Time
	Logger *slog.Logger
	// NearHead is how many places at the head of the line each tick
	// lists (0: 200): their polls are answered exactly from the node's
	// frontier, a place farther back by its rank among the line's
	// sampled scores, and a place nearer that the tick did not list (it
	// left the line) from Redis.
	NearHead int64

	frontiers sync.Map     // event id -> *frontier, from the tick (Run)
	wakers    sync.Map     // event id -> *waker, for the long-polls (Wait)
	meters    sync.Map     // event id -> *meter, the joins a second (proof of work)
	joins     sync.Map     // event id and arguments -> *joinQueue (joins.go)
	shuffles  sync.Map     // room id -> *shuffle (tokens.go): a room's key, made once
	touched   sync.Map     // room id -> *atomic.Int64: this node's joins, leaves and Redis reads of it so far (resting)
	joinCalls atomic.Int64 // room_join calls, for tests
	stopped   atomic.Bool
}

var (
	joinScript   = eval.Load("room_join")
	statusScript = eval.Load("room_status")
	leaveScript  = eval.Load("room_leave")
)

// States of a place, as callers see them.
const (
	Waiting  = "waiting"
	Admitted = "admitted"
	SoldOut  = "sold_out"
	Expired  = "expired"
	Left     = "left"
)

// States are every state a place can be in, for a caller that checks one
// it was sent (a long-poll's known).
var States = []string{Waiting, Admitted, SoldOut, Expired, Left}

// Joined is the answer to a join.
type Joined struct {
	QueueID   string
	PollToken string
	// Again is true when the identity had this place already.
	Again bool
	Status
}

// Status is a place as its buyer sees it.
type Status struct {
	State string
	// Quantity is the units the place asked for, or, admitted, those its
	// pass covers.
	Quantity int64
	// Position is 1 for the head of the line (0 when not waiting); Ahead
	// the places before it.
	Position, Ahead int64
	// ETA is the estimated wait (nil: not known yet, e.g. before the first
	// pass).
	ETA *time.Duration
	// Odds are the chances, in percent, that units are left when the
	// place's turn comes, given the stock left and the places ahead.
	Odds int64
	// Pass and PassExpiresAt are set while the place is admitted and its
	// pass unused; PassUsed once it made a registration or, on a seated
	// event, a hold token; SeatsHeld while that token holds its units (the
	// place not yet registered).
	Pass          string
	PassExpiresAt time.Time
	PassUsed      bool
	SeatsHeld     bool
	// Reason says why a sold-out place waits for nothing ("sold_out":
	// every unit is sold or held by a buyer paying).
	Reason string
	// Memory is true when the node answered from its frontier, without
	// Redis (a place far from the head).
	Memory bool

	rank float64 // its score in the line (NaN: not waiting)
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) admitPerTick() int {
	if s.AdmitPerTick > 0 {
		return s.AdmitPerTick
	}
	return 256
}

func (s *Service) admitPerCall() int {
	if s.AdmitPerCall > 0 {
		return s.AdmitPerCall
	}
	return 64
}

// JoinRequest is a buyer's join.
type JoinRequest struct {
	EventID string
	// ShowingID is the showing whose line it joins on a multi-showing
	// event ("" on an event without showings).
	ShowingID string
	Email     string
	// Device is the buyer's device id ("" when none): a second join from
	// it answers the same place, whatever the e-mail.
	Device   string
	Quantity int64
	// Work is the solved challenge, when the room asks for one.
	Work Work
}

// LineOf is the room a request for ev's showing showingID joins, reads or
// buys with a pass of (ev has a room): ev's own on an event without
// showings (showingID ""), a showing's on one with them (catalog
// Room.Line); a showingId the event refuses is answered as pricing does
// (SHOWING_REQUIRED, SHOWING_NOT_FOUND).
func LineOf(ev *catalog.CompiledEvent, showingID string) (*catalog.Room, *apierr.Error) {
	if e := pricing.CheckShowing(ev, showingID); e != nil {
		return nil, e
	}
	line, _ := ev.Room.Line(showingID) // the catalog made a line for each showing
	return line, nil
}

// Join gives the buyer a place in the room of the event's showing (cfg is
// that room: LineOf), or the place their e-mail or device has.
func (s *Service) Join(ctx context.Context, cfg *catalog.Room, req JoinRequest) (Joined, error) {
	if s.now().Before(cfg.OpensAt) {
		return Joined{}, ErrNotOpen.With("opensAt", cfg.OpensAt.UTC().Format(time.RFC3339))
	}
	if req.Quantity < 1 || req.Quantity > cfg.PerBuyer {
		return Joined{}, apierr.Of("INVALID_QUANTITY", "quantity must be 1 to %d in this event's waiting room", cfg.PerBuyer)
	}
	if len(req.Device) > 64 {
		return Joined{}, apierr.Invalid("device must be at most 64 characters")
	}
	bk := orders.BuyerKey(req.Email)
	if cfg.Work != nil {
		s.joinMeter(req.EventID).add(s.now()) // every join, solved or not, is pressure
		if err := s.checkWork(cfg, req.EventID, bk, req.Work); err != nil {
			return Joined{}, err
		}
	}
	ev := keys.RoomID(req.EventID, req.ShowingID)
	id := s.placeID(ev, bk)
	rank := ""
	if cfg.Fair {
		rank = strconv.FormatFloat(s.shuffleRank(ev, id), 'g', -1, 64)
	}
	arr, figs, err := s.join(ctx, s.joinQueueOf(ev, cfg), joinArgs{id, bk, req.Device, strconv.FormatInt(req.Quantity, 10), rank})
	s.touch(ev)
	if errors.Is(err, errStopped) {
		return Joined{}, errStopped
	}
	if err != nil {
		return Joined{}, fmt.Errorf("room: join: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return Joined{}, err
	}
	switch code {
	case reply.OK, reply.Exists:
		qid, _ := eval.Str(arr, 1)
		st, err := s.read(cfg, ev, qid, arr, 2, figs, figsAt)
		if err != nil {
			return Joined{}, fmt.Errorf("room: join: %w", err)
		}
		p := Place{QueueID: qid, Rank: st.rank, Quantity: st.Quantity, Maker: code == reply.OK}
		return Joined{QueueID: qid, PollToken: s.PollToken(ev, p), Again: code == reply.Exists, Status: st}, nil
	case reply.Short:
		return Joined{}, ErrSoldOut
	}
	return Joined{}, reply.Unexpected("room_join", code)
}

// Status reads a place of room roomID after the admission step, which it
// runs: every poll moves the line.
func (s *Service) Status(ctx context.Context, cfg *catalog.Room, roomID, queueID string) (Status, error) {
	arr, err := s.runStatus(ctx, cfg, roomID, queueID, "", 0, nil)
	s.touch(roomID)
	if err != nil {
		return Status{}, fmt.Errorf("room: status: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return Status{}, err
	}
	switch code {
	case reply.OK:
	case reply.NotFound:
		return Status{}, errNoPlace
	case reply.Stopped:
		return Status{}, errStopped
	default:
		return Status{}, reply.Unexpected("room_status", code)
	}
	if len(arr) != 1+placeLen+figuresLen {
		return Status{}, fmt.Errorf("room: status: room_status answered %d values, want %d", len(arr), 1+placeLen+figuresLen)
	}
	st, err := s.read(cfg, roomID, queueID, arr, 1, arr, 1+placeLen)
	if err != nil {
		return Status{}, fmt.Errorf("room: status: %w", err)
	}
	return st, nil
}

// runStatus runs room_status for queueID ("": the admission step alone,
// admitting up to the tick's cap, with the node's last frontier was, nil
// when none), writing key (hex; "" none) to the audit once.
func (s *Service) runStatus(ctx context.Context, cfg *catalog.Room, ev, queueID, key string, samples int, was *frontier) ([]rueidis.RedisMessage, error) {
	admit := s.admitPerCall()
	if queueID == "" {
		admit = s.admitPerTick()
	}
	event, _ := keys.SplitRoom(ev)
	ks := []string{s.Space.Room(ev), s.Space.RoomLine(ev), s.Space.RoomPlaces(ev), s.Space.RoomPasses(ev),
		s.Space.Sold(event), s.Space.Live(keys.Partition(event)), s.Space.RoomAudit(ev)}
	args := []string{queueID, strconv.FormatInt(cfg.PassTTL.Milliseconds(), 10),
		strconv.FormatInt(cfg.SalesStartAt.UnixMilli(), 10), strconv.Itoa(admit), cfg.Spec(), key,
		strconv.Itoa(samples), strconv.FormatInt(s.nearHead(), 10), was.prev(), keys.RoomFields(ev)}
	return eval.Array(ctx, s.Redis, statusScript, ks, args)
}

// Admit runs the admission step of room roomID: passes that lapsed give
// their units back and the head of the line is admitted while units are
// left, whether or not anyone polls. From T0 a fair room's shuffle key
// goes to the audit, once.
func (s *Service) Admit(ctx context.Context, cfg *catalog.Room, roomID string) error {
	key := ""
	if cfg.Fair && !s.now().Before(cfg.SalesStartAt) {
		key = hex.EncodeToString(s.ShuffleKey(roomID))
	}
	now := s.now()
	var was *frontier
	if v, ok := s.frontiers.Load(roomID); ok {
		was = v.(*frontier)
	}
	samples := frontierSamples
	if was != nil && now.Sub(was.sampled) < sampleEvery {
		samples = 0 // the scores of the last read serve
	}
	arr, err := s.runStatus(ctx, cfg, roomID, "", key, samples, was)
	if err != nil {
		return fmt.Errorf("room: admit %s: %w", roomID, err)
	}
	if err := okOrStopped(arr, "room_status"); err != nil {
		return err
	}
	f, err := frontierOf(arr, 1, was)
	if err != nil {
		return fmt.Errorf("room: admit %s: %w", roomID, err)
	}
	f.at, f.sampled = now, now
	if samples == 0 {
		f.scores, f.pos, f.sampled = was.scores, was.pos, was.sampled
		f.moved = was.moved + f.admitted - was.admitted
	}
	s.frontiers.Store(roomID, f)
	s.wakerOf(roomID).tick(f)
	return nil
}

// okOrStopped reads a script's reply code that is R.OK or R.STOPPED
// (errStopped): nil for R.OK.
func okOrStopped(arr []rueidis.RedisMessage, script string) error {
	code, err := reply.Of(arr)
	switch {
	case err != nil:
		return err
	case code == reply.Stopped:
		return errStopped
	case code != reply.OK:
		return reply.Unexpected(script, code)
	}
	return nil
}

// Run runs the admission step of every room of the current catalog from
// its opening on, every period, until ctx ends: a pass that lapses, a
// place that leaves or a registration that expires gives its units to the
// head of the line within a period, though nobody polls (nobody is
// admitted before T0, and until t0Margin before it a room is stepped every
// earlyStepEvery; a room at rest, such as a sold-out one, is stepped less
// often: resting). Every node runs it; each step is one atomic script, so
// nodes never admit twice. Each step also refreshes the node's
// frontier of the room, which answers the polls far from the head, and
// wakes the node's long-polls (Wait) of a room that changed.
func (s *Service) Run(ctx context.Context, every time.Duration, current func() *catalog.Snapshot) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := map[string]bool{}   // events whose last step failed: logged once a streak
	steps := map[string]stepMark{} // each room's last step: earlyStepEvery, resting
	var last *catalog.Snapshot     // the catalog of the last tick: a new one steps every room
	for {
		select {
		case <-ctx.Done():
			s.StopWaits() // no tick wakes a long-poll from now
			return
		case <-t.C:
		}
		snap := current()
		if snap == nil {
			continue
		}
		now := s.now()
		same := snap == last
		last = snap
		for evID, ev := range snap.Events {
			if ev.Room == nil || now.Before(ev.Room.OpensAt) {
				continue
			}
			for _, line := range ev.Room.Lines() {
				id := cmp.Or(line.ID, evID)
				if beforeT0Margin(line.SalesStartAt.Sub(now)) && now.Sub(steps[id].at) < earlyStepEvery-every/2 {
					continue // a tick's jitter does not skip to the next
				}
				if same && s.resting(id, now, every, steps[id]) {
					continue
				}
				mark := stepMark{at: now, touches: s.touches(id)}
				if s.admitLogged(ctx, line, id, failing) {
					steps[id] = mark // a failed step is retried at the next tick
				}
			}
		}
	}
}

// A room at rest has nothing a step could do soon: no live pass (none can
// lapse) and nobody in its line (nobody to admit, no long-poll to wake), or
// nothing left to sell (a registration that expires, a refund or a larger
// stock gives units back, which only a step finds). Run steps such a room
// every idleStepEvery (nobody waiting: from T0 a join at an empty line
// admits itself) or soldOutStepEvery (its waiters hear of units given back
// within about that), not every period: a room's step is a script call,
// and a room an on-sale keeps open for days on every node would otherwise
// cost Redis twenty calls a second a node, long after its rush. (Variables
// for the tests, which lengthen them while no Run runs.)
var (
	idleStepEvery    = time.Second
	soldOutStepEvery = 250 * time.Millisecond
)

// stepMark is a room's last step by Run: the tick's time, and the node's
// touches of the room counted before the step's call.
type stepMark struct {
	at      time.Time
	touches int64
}

// resting says whether Run may skip room id's step at now, its ticks
// every period, the room's last step being last: that step found the room
// at rest (its frontier), less than the rest's step ago, and this node has
// not touched the room since the step began (a join, a leave, a status
// read from Redis: touch), which may have changed what it found.
func (s *Service) resting(id string, now time.Time, period time.Duration, last stepMark) bool {
	v, ok := s.frontiers.Load(id)
	if !ok || last.at.IsZero() {
		return false
	}
	f := v.(*frontier)
	var rest time.Duration
	switch {
	case f.resv > 0:
		return false
	case f.waiting == 0:
		rest = idleStepEvery
	case f.left <= 0:
		rest = soldOutStepEvery
	default:
		return false
	}
	if now.Sub(last.at) >= rest-period/2 { // a tick's jitter does not skip to the next
		return false
	}
	return s.touches(id) == last.touches
}

// touch counts a join, leave or Redis read of room id by this node, once
// it is answered: the room's next tick steps it though it rests (resting).
func (s *Service) touch(id string) {
	t, ok := s.touched.Load(id)
	if !ok {
		t, _ = s.touched.LoadOrStore(id, new(atomic.Int64))
	}
	t.(*atomic.Int64).Add(1)
}

// touches is how often this node touched room id so far.
func (s *Service) touches(id string) int64 {
	if t, ok := s.touched.Load(id); ok {
		return t.(*atomic.Int64).Load()
	}
	return 0
}

// earlyStepEvery is how often Run steps a room until t0Margin before T0.
// Nobody is admitted before T0, so those steps only refresh the frontier
// (the polls' positions) and tell a sell-out by the partners: each lists
// the line's head, which the pre-queue's shuffled joins change at every
// step, so a step there costs Redis a few hundred microseconds.
const earlyStepEvery = 250 * time.Millisecond

// t0Margin is how long before T0, by the node's clock, a room is served
// as at T0: steps every period, batches of joins that wait as after T0.
// A node's clock may run behind Redis', which decides T0.
const t0Margin = time.Second

// beforeT0Margin says whether a room whose T0 is toT0 away (negative once
// past) is still served as before T0: more than t0Margin ahead.
func beforeT0Margin(toT0 time.Duration) bool { return toT0 > t0Margin }

// admitLogged runs Admit for Run, logging the first failure of a streak
// and the step that ends it, and says whether the step ran.
func (s *Service) admitLogged(ctx context.Context, cfg *catalog.Room, id string, failing map[string]bool) bool {
	err := s.Admit(ctx, cfg, id)
	switch {
	case err != nil && ctx.Err() == nil && !failing[id]:
		failing[id] = true
		s.logger().Warn("room: admission step failed; every tick retries", "room", id, "err", err)
	case err == nil && failing[id]:
		delete(failing, id)
		s.logger().Info("room: admission steps run again", "room", id)
	}
	return err == nil
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// placeLen and figuresLen are how many values lib/room's
// room_place_reading and room_figures give.
const placeLen, figuresLen = 6, 9

// read is the Status of place queueID of room roomID, from lib/room's
// room_place_reading at place[at] and room_figures at figs[figsAt], with its
// pass signed while it is admitted.
func (s *Service) read(cfg *catalog.Room, roomID, queueID string, place []rueidis.RedisMessage, at int,
	figs []rueidis.RedisMessage, figsAt int) (Status, error) {
	var n [placeLen + figuresLen]int64 // the place's, then the figures; the state (0), buyer key (4) and rank (5) are strings
	st, err := eval.Str(place, at)
	if err != nil {
		return Status{}, err
	}
	bk, err := eval.Str(place, at+4)
	if err != nil {
		return Status{}, err
	}
	rank := math.NaN()
	if rs, _ := eval.Str(place, at+5); rs != "" {
		if rank, err = strconv.ParseFloat(rs, 64); err != nil {
			return Status{}, err
		}
	}
	for i := 1; i < 4; i++ {
		if n[i], err = eval.Int(place, at+i); err != nil {
			return Status{}, err
		}
	}
	for i := range figuresLen {
		if n[placeLen+i], err = eval.Int(figs, figsAt+i); err != nil {
			return Status{}, err
		}
	}
	f := n[placeLen:]
	r := reading{state: st, qty: n[1], passExp: n[2], ahead: n[3], waiting: f[0], waitingUnits: f[1], left: f[2],
		resv: f[3], now: f[4], admitted: f[5], first: f[6], used: f[7], lapsed: f[8]}
	out := r.status(cfg)
	out.rank = rank
	if out.State == Admitted && !out.PassUsed {
		out.Pass = s.passFor(cfg, roomID, queueID, r.passExp, bk)
	}
	return out, nil
}

// reading is lib/room's room_place_reading and room_figures.
type reading struct {
	state                                      string
	qty, passExp, ahead, waiting, waitingUnits int64
	left, resv, now, admitted, first           int64
	used, lapsed                               int64
}

// soldOut says nothing is left to sell and no live pass may give units
// back.
func (r reading) soldOut() bool { return r.left <= 0 && r.resv <= 0 }

// status is what the buyer is told of a reading.
func (r reading) status(cfg *catalog.Room) Status {
	out := Status{Quantity: r.qty}
	switch r.state {
	case "w":
		out.State, out.Ahead, out.Position = Waiting, r.ahead, r.ahead+1
		out.Odds = r.odds()
		out.ETA = r.eta(cfg)
		// Nothing left and nothing that may come back from a pass: the
		// buyer is told now, and told again (waiting) should a
		// registration awaiting payment lapse.
		if r.soldOut() {
			out.State, out.Reason, out.Odds, out.ETA = SoldOut, "sold_out", 0, nil
		}
	case "a":
		out.State, out.Odds = Admitted, 100
		out.PassExpiresAt = time.UnixMilli(r.passExp)
	case "u", "h":
		// used: its registration, or on a seated event the hold token
		// it made, holds its units
		out.State, out.PassUsed, out.SeatsHeld, out.Odds = Admitted, true, r.state == "h", 100
	case "x":
		out.State = Expired
	default:
		out.State = Left
	}
	return out
}

// odds estimates, in hundredths, that units are left at the place's turn:
// the units free now, and those live passes may give back at the rate
// passes lapsed so far (none before any lapsed), against the units the
// places ahead ask for (at the line's average) and its own.
func (r reading) odds() int64 {
	avail := float64(max(r.left, 0))
	if ended := r.used + r.lapsed; ended > 0 {
		avail += float64(r.resv) * float64(r.lapsed) / float64(ended)
	}
	avg := 1.0
	if r.waiting > 0 {
		avg = float64(r.waitingUnits) / float64(r.waiting)
	}
	ahead := float64(r.ahead) * avg
	switch {
	case avail-ahead >= float64(r.qty):
		return 100
	case avail <= ahead:
		return 0
	}
	return int64(100 * (avail - ahead) / float64(r.qty))
}

// eta estimates the wait from the rate places were admitted at since the
// first pass; before T0, at least the time to T0. nil when not known.
func (r reading) eta(cfg *catalog.Room) *time.Duration {
	t0 := cfg.SalesStartAt.UnixMilli()
	if r.now < t0 {
		d := time.Duration(t0-r.now) * time.Millisecond
		if r.admitted == 0 {
			return &d
		}
	}
	if r.admitted == 0 || r.first == 0 || r.now <= r.first {
		return nil
	}
	perMs := float64(r.admitted) / float64(r.now-r.first)
	d := time.Duration(float64(r.ahead+1)/perMs) * time.Millisecond
	return &d
}

// Leave takes the place out of the line, or gives its pass's units back,
// and returns the state the place is in after it: Left, or, for a place
// neither waiting nor admitted, left as it is, that state (Admitted for
// one whose pass made a registration or, on a seated event, a hold token
// that holds its units until it lapses; Expired; Left).
func (s *Service) Leave(ctx context.Context, roomID, queueID string) (string, error) {
	ev := roomID
	ks := []string{s.Space.Room(ev), s.Space.RoomLine(ev), s.Space.RoomPlaces(ev), s.Space.RoomPasses(ev), s.Space.RoomAudit(ev)}
	arr, err := eval.Array(ctx, s.Redis, leaveScript, ks, []string{queueID, keys.RoomFields(ev)})
	s.touch(ev)
	if err != nil {
		return "", fmt.Errorf("room: leave: %w", err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return "", err
	}
	switch code {
	case reply.OK:
		return Left, nil
	case reply.NotPending:
		// told as a status tells it (a place neither waiting nor admitted
		// needs no room settings for that)
		st, _ := eval.Str(arr, 1)
		return reading{state: st}.status(nil).State, nil
	case reply.NotFound:
		return "", errNoPlace
	}
	return "", reply.Unexpected("room_leave", code)
}

// Errors of the room.
var (
	// The pass's refusals are roompass's: the seat scripts answer them too.
	ErrRequired   = roompass.ErrRequired
	ErrPassBad    = roompass.ErrBad
	ErrPassBuyer  = roompass.ErrBuyer
	ErrPassUnits  = roompass.ErrUnits
	ErrPassUsed   = roompass.ErrUsed
	ErrPassLapsed = roompass.ErrLapsed
	ErrNotOpen    = apierr.Of("QUEUE_NOT_OPEN", "this event's waiting room is not open yet")
	ErrSoldOut    = apierr.Of("QUEUE_SOLD_OUT", "every ticket of this event is sold or held by a buyer paying: nothing is left to wait for")
	ErrNotMaker   = apierr.Of("INVALID_CREDENTIALS",
		"only the pollToken of the join that made this place may leave it (a second join's token reads the place only)")
	errNoPlace = apierr.Of("NOT_FOUND", "no such place in this event's waiting room")
	errStopped = apierr.Unavailable("the waiting room is being restored; retry shortly")
)

// Stats are an event's room as operators see it (/metrics, ticketctl
// queue).
type Stats struct {
	// Arrivals are the joins that made or renewed a place; Waiting and
	// WaitingUnits the places in the line and the units they ask for.
	Arrivals, Waiting, WaitingUnits int64
	// Reserved are the units live passes hold (LivePasses of them).
	Reserved, LivePasses int64
	// Admitted, Used and Lapsed count passes given, passes that made a
	// registration and passes that expired unused.
	Admitted, Used, Lapsed int64
}

// Conversion is the share of the passes that ended (used or lapsed) that
// made a registration; false until one ended.
func (st Stats) Conversion() (float64, bool) {
	ended := st.Used + st.Lapsed
	if ended == 0 {
		return 0, false
	}
	return float64(st.Used) / float64(ended), true
}

// Stats reads room roomID in one round trip (nothing is admitted).
func (s *Service) Stats(ctx context.Context, roomID string) (Stats, error) {
	res := s.Redis.DoMulti(ctx,
		s.Redis.B().Hgetall().Key(s.Space.Room(roomID)).Build(),
		s.Redis.B().Zcard().Key(s.Space.RoomPasses(roomID)).Build())
	// the hash holds counts and the stock spec, a string: counts are read
	// by name
	m, err := res[0].AsStrMap()
	if err != nil {
		return Stats{}, fmt.Errorf("room: stats: %w", err)
	}
	live, err := res[1].AsInt64()
	if err != nil {
		return Stats{}, fmt.Errorf("room: stats: %w", err)
	}
	sfx := keys.RoomFields(roomID) // the hash holds every showing's rooms
	n := func(f string) int64 { v, _ := strconv.ParseInt(m[f+sfx], 10, 64); return v }
	return Stats{Arrivals: n("seq"), Waiting: n("wn"), WaitingUnits: n("wq"), Reserved: n("resv"), LivePasses: live,
		Admitted: n("admitted"), Used: n("used"), Lapsed: n("lapsed")}, nil
}

// AuditEntry is one entry of a room's audit (keys.Space RoomAudit).
type AuditEntry struct {
	// ID is the stream entry's id: Redis ms, then a sequence.
	ID string
	// What is "admitted", "held" (on a seated event, its pass made a hold
	// token, which keeps its units until the token lapses), "used"
	// (a registration), "lapsed", "left" or "key".
	What    string
	QueueID string
	// Units are the pass's (admitted, held, used, lapsed); Rank the place's in
	// the line when admitted; Was what a place that left was (waiting,
	// admitted); Key the shuffle key, hex.
	Units     int64
	Rank, Was string
	Key       string
}

// Audit reads up to count entries of room roomID's audit after the entry
// id after ("" from the start), in order.
func (s *Service) Audit(ctx context.Context, roomID, after string, count int64) ([]AuditEntry, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	xs, err := s.Redis.Do(ctx, s.Redis.B().Xrange().Key(s.Space.RoomAudit(roomID)).Start(start).End("+").Count(count).Build()).AsXRange()
	if err != nil {
		return nil, fmt.Errorf("room: audit: %w", err)
	}
	out := make([]AuditEntry, len(xs))
	for i, x := range xs {
		f := x.FieldValues
		n, _ := strconv.ParseInt(f["n"], 10, 64)
		was := map[string]string{"w": Waiting, "a": Admitted}[f["was"]]
		out[i] = AuditEntry{ID: x.ID, What: f["e"], QueueID: f["q"], Units: n, Rank: f["rank"], Was: was, Key: f["key"]}
	}
	return out, nil
}
