package scenario

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/room"
)

// QueueSellout is issue 20's on-sale through the stock-aware waiting
// room: a GA event whose storefront sells only to buyers the room
// admitted (a fair room: the pre-queue shuffled at T0, later arrivals in
// order of arrival). Its load is the issue's, scaled down for a 2-core
// machine that also runs the bench: 1,000 tickets and 10,000 arrivals by
// default (the 10,000 and 100,000, a tenth), of which 60% join in a
// pre-queue spread over the pre-queue window (-duration, default 10 s; the
// issue's 30 s) and the rest after T0 at a fixed rate (-rate, default
// 2,000/s; the 20,000/s). -capacity and -arrivals scale the rest.
// One arrival in 100 is a bot that calls register-guest without a pass
// (it must get 403 QUEUE_REQUIRED); one buyer in 50 joins twice, the second
// time from another device (the same e-mail must get the same place).
// Half the waiters long-poll their status (status?wait=20&known=waiting,
// as the demo shop does): from the join, again as soon as each answer comes, until
// admitted or sold out; the sold-out broadcast is measured on them. The
// other half poll once a second (from T0, spread over half a second, when
// they joined before), as a client that does not long-poll would; the
// polls/s figures are theirs. An admitted
// buyer registers at once with its pass (as the demo shop does) and
// replays the pass once (a second register-guest with it must get 409
// QUEUE_PASS_USED); then 70% pay 2-8 s later, 25% pay late, 8-20 s later
// (the issue leaves them open: a fair on-sale's slow payers), and 5%
// vanish without registering, their passes lapsing after the pass TTL
// (10 s, the catalog's least) and going to the next in line. Paying is
// storefront-flash's: the card checkout session, the signed webhook, the
// success page's read.
//
// Every buyer waits in a worker of its own (-concurrency does not apply),
// over at most 1,024 connections, and one more for each long-poller (a
// long-poll holds its connection while it waits). The full size does not fit the 2-core
// machine that also runs the bench (100,000 goroutines polling once a
// second, and ticketd answering them), so the defaults are a tenth of it.
//
// The admission order is read from the room's audit (each pass given, in
// the order of admission) and checked against the committed order, which
// the bench computes itself from the shuffle key revealed after T0
// (fairness.shuffleKey, room.Rank) and the joins' answers.
var QueueSellout Scenario = queueSellout{}

// The queue-sellout load's shape.
const (
	qsPreShare   = 60  // percent of arrivals that join before T0
	qsBotEvery   = 100 // one arrival in 100 is a bot
	qsTwiceEvery = 50  // one buyer in 50 joins twice
	qsConns      = 1024
	qsLongPoll   = 20 * time.Second // a long-poll's wait (status?wait=)
	qsMaxWait    = 3 * time.Minute  // a waiter gives up this long after T0
)

// qsShape is the timing of a queue-sellout run's buyers.
type qsShape struct {
	passTTL time.Duration // the room's (10 s at least)
	poll    time.Duration // between a waiter's polls
	spread  time.Duration // the pre-queue's first polls, over this after T0
	gap     time.Duration // from the pre-queue's last arrival to T0
	lead    time.Duration // from provisioning to the pre-queue's first
	// vanishPct of the admitted buyers never register; slowPct pay in
	// slow, the others in fast (from, to).
	vanishPct, slowPct uint32
	fast, slow         [2]time.Duration
}

var qsDefaultShape = qsShape{passTTL: 10 * time.Second, poll: time.Second, spread: 500 * time.Millisecond,
	gap: time.Second, lead: 2 * time.Second, vanishPct: 5, slowPct: 25,
	fast: [2]time.Duration{2 * time.Second, 8 * time.Second}, slow: [2]time.Duration{8 * time.Second, 20 * time.Second}}

// qsDefaults are queue-sellout's defaults: Duration is the pre-queue
// window, Rate the arrivals per second after T0.
var qsDefaults = Options{Arrivals: 10_000, Capacity: 1_000, Duration: 10 * time.Second, Rate: 2_000}

// Figures of queue-sellout (the table, and what they rest on).
const (
	FigQueueJoinRate          = "joins/s after T0 (joins answered / first arrival to last answer)"
	FigQueueJoinOffered       = "join arrivals/s offered after T0"
	FigQueueJoinP99           = "join p99 (from the intended arrival)"
	FigQueuePollPeak          = "status polls/s (busiest second)"
	FigQueuePollMean          = "status polls/s (mean over the polling)"
	FigQueueFirstPass         = "first pass after T0 (Redis' admission time)"
	FigQueueWaveP99           = "initial wave delivered p99 (T0 to a long-polling buyer seeing its pass)"
	FigQueueWavePolledP99     = "initial wave delivered to the buyers polling once a second, p99"
	FigQueueReturnP99         = "returned stock to the next pass p99 (lapse to next admission)"
	FigQueueSpearman          = "Spearman rho, committed order vs admission order (the room's audit)"
	FigQueueAuditAgainstTimes = "pairs the audit orders against the passes' admission times"
	FigQueueSpearmanTimes     = "Spearman rho, committed order vs Redis' admission times (one millisecond's admissions tied)"
	FigQueueSpearmanUntied    = "Spearman rho, a millisecond's admissions taken in line order (as one script admits them)"
	FigQueueDiscordant        = "pairs admitted against the committed order (in different milliseconds)"
	FigQueueSoldOutP99        = "sold-out broadcast p99 (last registration answered to each long-polling waiter seeing sold_out)"
	FigQueueSoldOutPolledP99  = "sold-out told to the waiters polling once a second, p99"
	FigQueueToldLongPolled    = "long-polling waiters told sold out"
	FigQueueToldLate          = "long-polling waiters told sold out over a second late"
	FigQueueSoldOutMax        = "sold-out broadcast, the last long-polling waiter told"
	FigQueueToldPolled        = "polling waiters told sold out"
	FigQueueRedisCPU          = "Redis CPU per admitted buyer"
	FigQueueRedisPerWait      = "Redis memory per waiter at T0 (MEMORY USAGE of the room's keys / places)"
	FigQueueAdmitted          = "places admitted"
	FigQueueTickets           = "tickets on sale"
	FigQueueSoldOutAt         = "sold out (last registration sent), after T0"
	FigQueuePollAsked         = "status polls/s the polling waiters asked (their places not in the first wave / poll interval)"
	FigQueueWaiters           = "places (distinct buyers who joined)"
)

type queueSellout struct{}

func (queueSellout) Name() string { return "queue-sellout" }

func (q queueSellout) Run(ctx context.Context, env *Env, o Options) (*Outcome, error) {
	if env.CardWebhookSecret == "" {
		return storefrontOnly{&single{name: q.Name()}}.Run(ctx, env, o)
	}
	o = o.or(qsDefaults)
	if o.Arrivals < 2 || o.Capacity < 1 {
		return nil, errors.New("queue-sellout: needs at least 2 arrivals and 1 ticket")
	}
	return runQueueSellout(ctx, env, q.Name(), o, newQueueSelloutPart(ctx, o, qsDefaultShape))
}

// runQueueSellout provisions p's event, runs its load and checks it.
func runQueueSellout(ctx context.Context, env *Env, name string, o Options, p *qsPart) (*Outcome, error) {
	parts := []weighted{{p: p, weight: 1}}
	ops, err := provision(ctx, env, name, parts)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	p.start = start
	plan := load.Plan{
		Name: o.label(name), Unit: "buyers", Ops: ops.names, Primary: ops.add("join"),
		Open: true, Rate: float64(o.Arrivals) / p.span(start).Seconds(), Arrivals: o.Arrivals, At: p.schedule(start),
		Workers: int(o.Arrivals), Conns: qsConns + int(o.Arrivals/2), Drain: qsMaxWait,
		Progress: o.Progress, NewActor: p.actor, Window: env.window(),
	}
	memDone := make(chan struct{})
	go func() {
		defer close(memDone)
		p.sampleMemory(ctx, env)
	}()
	res, err := load.Run(ctx, env.Addr, plan)
	<-memDone
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.readAudit(ctx, env)
	out := finish(ctx, env, name, &Outcome{Result: res, LatencyOp: "join", CPU: env.CPU.Shares()}, parts)
	out.Figures = append(out.Figures, p.redisCPU(out)...)
	out.Notes = append(out.Notes, p.notes...)
	return out, nil
}

// qsPart is one queue-sellout run.
type qsPart struct {
	ctx      context.Context
	sh       qsShape
	capacity int64
	n, nPre  int64 // arrivals, those before T0
	window   time.Duration
	rate     float64
	t0       time.Time
	start    time.Time // the load's start, about

	shop                                                         *shop
	event, ticket                                                string
	cart                                                         []byte
	joinPath                                                     string
	statusPath, longPollPath                                     string
	seq                                                          atomic.Int64
	opJoin, opJoinAgain, opStatus, opLongPoll, opRegister, opBot int
	opReplay                                                     int
	pay                                                          payOps
	actors                                                       actors[*qsActor]

	// sp is the target's key space (space), found once: the memory
	// sample and the audit read both need it.
	spaceOnce sync.Once
	sp        keys.Space
	spaceWhy  string

	mu         sync.Mutex
	shuffleKey []byte
	pollSecs   [1200]atomic.Int64 // polls answered, by second from start
	memBytes   int64              // the room's keys at T0
	memPlaces  int64
	// audit maps a place to its index in the room's audit of admissions
	// (nil: not read, auditWhy says why).
	audit    map[string]int
	auditWhy string
	notes    []string
}

func newQueueSelloutPart(ctx context.Context, o Options, sh qsShape) *qsPart {
	n := o.Arrivals
	pre := n * qsPreShare / 100
	return &qsPart{ctx: ctx, sh: sh, capacity: o.Capacity, n: n, nPre: pre, window: o.Duration, rate: o.Rate}
}

func (p *qsPart) provision(env *Env, b *docBuilder) {
	p.shop = newShop(env, "room")
	p.event, p.ticket = "ev_"+env.Run+"_room", "tk_ga"
	p.cart = []byte(`"selectedTicketId":"` + p.ticket + `","quantity":1`)
	p.joinPath = "/v1/storefront/queue/" + p.event + "/join"
	p.statusPath = "/v1/storefront/queue/" + p.event + "/status"
	// A long-poller reads only while its place waits, so what it last
	// heard is always waiting (known=, as the demo shop sends it).
	p.longPollPath = p.statusPath + "?wait=" + strconv.Itoa(int(qsLongPoll/time.Second)) + "&known=" + room.Waiting
	// T0 on a whole second (the catalog's times are RFC 3339 seconds).
	p.t0 = time.Now().Add(p.sh.lead + p.window + p.sh.gap).Truncate(time.Second).Add(time.Second)
	ev := onStorefront(gaEvent(p.event, p.ticket, p.capacity, []string{}))
	ttl, per := int64(p.sh.passTTL/time.Second), int64(1)
	ev.WaitingRoom = &catalog.WaitingRoom{OpensAt: p.t0.Add(-p.window - time.Minute).UTC().Format(time.RFC3339),
		SalesStartAt: p.t0.UTC().Format(time.RFC3339), PassTTL: &ttl, PerBuyer: &per, Mode: catalog.RoomModeFair}
	b.events = append(b.events, ev)
	b.keys = append(b.keys, p.shop.doc())
}

// schedule is the load's arrivals from start: the pre-queue's spread
// evenly over the window ending the gap before T0, the rest from T0 at the
// rate.
func (p *qsPart) schedule(start time.Time) func(i int64) time.Duration {
	preStart := p.t0.Add(-p.sh.gap - p.window).Sub(start)
	t0 := p.t0.Sub(start)
	return func(i int64) time.Duration {
		if i < p.nPre {
			return max(0, preStart+time.Duration(float64(p.window)*float64(i)/float64(p.nPre)))
		}
		return max(0, t0+time.Duration(float64(i-p.nPre)/p.rate*float64(time.Second)))
	}
}

// span is the schedule's length from start.
func (p *qsPart) span(start time.Time) time.Duration {
	return max(p.schedule(start)(p.n-1), time.Millisecond)
}

func (p *qsPart) register(ops *opSet) {
	p.opJoin, p.opJoinAgain, p.opStatus, p.opLongPoll = ops.add("join"), ops.add("join_again"), ops.add("status"), ops.add("status_long_poll")
	p.opRegister, p.opReplay, p.opBot = ops.add("register"), ops.add("register_replayed_pass"), ops.add("bot_register")
	p.pay.register(ops)
}

func (p *qsPart) actor(w *load.Worker) load.Actor {
	return p.actors.add(&qsActor{p: p, b: newBuyer(p.shop, w.ID), rnd: rand.New(rand.NewPCG(uint64(w.ID), 20))})
}

// Classes of a place: joined before T0 (ranked by the shuffle), after it
// (by arrival), or answered after T0 though sent before (not knowable
// which; left out of the order's figure).
const (
	qsPre = iota
	qsPost
	qsUnsure
)

// qsPlace is one buyer's place as the bench saw it.
type qsPlace struct {
	qid   string
	class int
	// joined is when the join was answered; admitted is Redis' time of
	// the admission (the pass's expiry less its TTL), zero when never;
	// seen when the buyer first saw the pass; soldOut when it first saw
	// sold_out.
	joined, admitted, seen, soldOut time.Time
	vanished                        bool
	passExp                         time.Time
	longPoll                        bool // it long-polled (else polled)
}

// qsTally is what one worker's buyers saw.
type qsTally struct {
	places                            []qsPlace
	emails                            []string // the places' e-mails, by index
	reg                               regTally
	joinSoldOut                       int64
	twice, twiceSame, twiceFailed     int64
	registered, replays, replayRefuse int64
	replayLapsed, replayAccepted      int64
	noStock                           int64
	bots, botsRefused, botsFailed     int64
	stillWaiting                      int64
	// lastRegSent and lastRegDone are when the last registration with a
	// pass was sent and answered: the room sold out between them, when
	// the last live pass was burnt.
	lastRegSent, lastRegDone time.Time
}

type qsActor struct {
	p   *qsPart
	b   *buyer
	rnd *rand.Rand
	t   qsTally
	tok []byte // the place's poll token, as a bearer header
	buf []byte
}

// Arrive is one arrival: a bot, or a buyer from the join to the paid
// registration (or sold out, or vanished).
func (a *qsActor) Arrive(w *load.Worker, intended time.Time) {
	p, b := a.p, a.b
	b.next()
	k := p.seq.Add(1)
	if k%qsBotEvery == 0 {
		a.bot(w, intended)
		return
	}
	sent := time.Now()
	st, tr := a.join(w, b.seq)
	w.Observe(p.opJoin, intended)
	if tr != "" || st != 200 {
		if code := answerCode(w, st, tr); code == "QUEUE_SOLD_OUT" {
			w.Reject(code)
			a.t.joinSoldOut++
		} else {
			w.Error("join " + code)
		}
		return
	}
	body := w.Resp.Body()
	qid, tok := load.Field(body, `"queueId":`), load.Field(body, `"pollToken":`)
	if len(qid) == 0 || len(tok) == 0 {
		w.Error("join MALFORMED_ANSWER")
		return
	}
	pl := qsPlace{qid: string(qid), joined: time.Now(), longPoll: b.seq%2 == 0}
	switch {
	case !sent.Before(p.t0):
		pl.class = qsPost
	case pl.joined.Before(p.t0):
		pl.class = qsPre
	default:
		pl.class = qsUnsure
	}
	a.tok = append(append(a.tok[:0], "Bearer "...), tok...)
	state, pass := a.read(&pl, body)
	if k%qsTwiceEvery == 1 {
		a.joinAgain(w, &pl)
	}
	a.wait(w, &pl, &state, &pass)
	admitted := state == room.Admitted && len(pass) > 0
	pl.vanished = admitted && b.seq%100 < p.sh.vanishPct // the pass lapses
	a.t.places = append(a.t.places, pl)
	a.t.emails = append(a.t.emails, string(b.email))
	if admitted && !pl.vanished {
		a.buy(w, pass, pl.passExp, intended)
	}
}

// join sends the buyer's join, from the device numbered dev.
func (a *qsActor) join(w *load.Worker, dev uint32) (int, string) {
	b := a.b
	b.prepare(w, "POST", a.p.joinPath)
	a.buf = append(append(a.buf[:0], `{"email":"`...), b.email...)
	a.buf = strconv.AppendUint(append(a.buf, `","quantity":1,"device":"bench-dev-`...), uint64(dev), 10)
	a.buf = append(a.buf, `"}`...)
	w.Req.SetBodyRaw(a.buf)
	return w.Send()
}

// joinAgain joins a second time with the same e-mail from another device:
// the answer must be the same place.
func (a *qsActor) joinAgain(w *load.Worker, pl *qsPlace) {
	start := time.Now()
	st, tr := a.join(w, a.b.seq|1<<31)
	w.Observe(a.p.opJoinAgain, start)
	if tr != "" || st != 200 {
		// no place answered: an error of the run, not a second place
		a.t.twiceFailed++
		w.Error("join again " + answerCode(w, st, tr))
		return
	}
	a.t.twice++
	if string(load.Field(w.Resp.Body(), `"queueId":`)) == pl.qid {
		a.t.twiceSame++
	}
}

// read takes a join's or status's answer: the state, and the pass when
// admitted (its admission time from its expiry).
func (a *qsActor) read(pl *qsPlace, body []byte) (state string, pass []byte) {
	now := time.Now()
	state = string(load.Field(body, `"state":`))
	switch state {
	case room.Admitted:
		pass = load.Field(body, `"pass":`)
		if pl.seen.IsZero() {
			pl.seen = now
			if exp, err := time.Parse(time.RFC3339Nano, string(load.Field(body, `"passExpiresAt":`))); err == nil {
				pl.passExp, pl.admitted = exp, exp.Add(-a.p.sh.passTTL)
			}
		}
	case room.SoldOut:
		if pl.soldOut.IsZero() {
			pl.soldOut = now
		}
	}
	if !now.Before(a.p.t0) {
		if k := load.Field(body, `"shuffleKey":`); len(k) > 0 {
			a.p.keep(k)
		}
	}
	return state, pass
}

// keep keeps the shuffle key a status revealed.
func (p *qsPart) keep(hexKey []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shuffleKey == nil {
		if k, err := hex.DecodeString(string(hexKey)); err == nil {
			p.shuffleKey = k
		}
	}
}

// wait reads the place's status until it is admitted or sold out: a
// long-poller at once and again as soon as each answer comes; a poller
// from T0 (spread over the shape's spread) when it joined before, then
// every poll interval.
func (a *qsActor) wait(w *load.Worker, pl *qsPlace, state *string, pass *[]byte) {
	p := a.p
	path, op, every := p.statusPath, p.opStatus, p.sh.poll
	next := time.Now().Add(every)
	if pl.longPoll {
		path, op, every, next = p.longPollPath, p.opLongPoll, 0, time.Now()
	} else if pl.class != qsPost {
		next = p.t0.Add(time.Duration(a.rnd.Int64N(int64(p.sh.spread) + 1)))
	}
	deadline := p.t0.Add(qsMaxWait)
	for *state == room.Waiting {
		if next.After(deadline) || !load.Sleep(p.ctx, time.Until(next)) {
			a.t.stillWaiting++
			return
		}
		sent := time.Now()
		a.b.prepare(w, "GET", path)
		w.Req.Header.SetBytesV("Authorization", a.tok)
		st, tr := w.Send()
		w.Observe(op, sent)
		next = sent.Add(every)
		if tr != "" || st != 200 {
			w.Error("status " + answerCode(w, st, tr))
			next = time.Now().Add(p.sh.poll) // not at once again
			continue
		}
		if !pl.longPoll {
			p.countPoll(time.Now())
		}
		*state, *pass = a.read(pl, w.Resp.Body())
	}
	switch *state {
	case room.Admitted, room.SoldOut:
	default:
		w.Error("status state " + *state)
	}
}

func (p *qsPart) countPoll(at time.Time) {
	if s := int(at.Sub(p.start) / time.Second); s >= 0 && s < len(p.pollSecs) {
		p.pollSecs[s].Add(1)
	}
}

// buy registers with the pass, replays it once (it must be refused
// QUEUE_PASS_USED), and pays 2-8 s later (one buyer in 4 of those who
// stay: 8-20 s).
func (a *qsActor) buy(w *load.Worker, pass []byte, passExp, intended time.Time) {
	p, b := a.p, a.b
	b.pass = append(b.pass[:0], pass...)
	sent := time.Now()
	st, tr, ok := b.register(w, p.event, p.cart, ticketPrice+ticketFee)
	w.Observe(p.opRegister, sent)
	if !ok {
		switch code := answerCode(w, st, tr); {
		case soldOutCodes[code] || code == "QUEUE_SOLD_OUT":
			a.t.noStock++
			w.Error("admitted but " + code)
		default:
			w.Error("register with a pass " + code)
		}
		return
	}
	a.t.registered++
	if sent.After(a.t.lastRegSent) {
		a.t.lastRegSent = sent
	}
	if done := time.Now(); done.After(a.t.lastRegDone) {
		a.t.lastRegDone = done
	}
	reg, amount := append([]byte(nil), b.reg...), b.amount
	a.t.replays++
	start := time.Now()
	st, tr, ok = b.register(w, p.event, p.cart, ticketPrice+ticketFee)
	w.Observe(p.opReplay, start)
	switch code := answerCode(w, st, tr); {
	case ok:
		a.t.replayAccepted++
		w.Error("a replayed pass registered again")
		b.reg, b.amount = reg, amount
	case st == 409 && code == "QUEUE_PASS_USED":
		a.t.replayRefuse++
		w.Reject(code)
	case st == 403 && code == "QUEUE_PASS_EXPIRED" && !time.Now().Before(passExp):
		// Answered after the pass's expiry: the node refuses a lapsed pass
		// by its clock before Redis says it was used.
		a.t.replayLapsed++
		w.Reject("replayed after its expiry " + code)
	default:
		w.Error("replayed pass " + code)
	}
	span := p.sh.fast
	if b.seq%100 >= 100-p.sh.slowPct {
		span = p.sh.slow
	}
	delay := span[0] + time.Duration(a.rnd.Int64N(int64(span[1]-span[0])+1))
	if !load.Sleep(p.ctx, delay) {
		a.t.reg.end(b, regFailed, 1, nil) // holds a unit unpaid
		return
	}
	b.checkoutAndPay(w, &a.t.reg, p.pay, p.event, p.cart, ticketPrice, 1, nil, intended)
}

// bot calls register-guest without a pass: it must be refused.
func (a *qsActor) bot(w *load.Worker, intended time.Time) {
	a.t.bots++
	st, tr, ok := a.b.register(w, a.p.event, a.p.cart, ticketPrice+ticketFee)
	w.Observe(a.p.opBot, intended)
	switch code := answerCode(w, st, tr); {
	case ok:
		w.Error("a bot registered without a pass")
		a.t.reg.end(a.b, regFailed, 1, nil)
	case st == 403 && code == "QUEUE_REQUIRED":
		a.t.botsRefused++
		w.Reject(code)
	case tr != "" || st >= 500:
		// not answered (a transport error, an overloaded node): an
		// error of the run, which shed the call or lost its answer; the
		// room check lists these apart from the refusals
		a.t.botsFailed++
		w.Error("bot register " + code)
	default:
		w.Error("bot register " + code)
	}
}

// tally merges the workers' tallies.
func (p *qsPart) tally() *qsTally {
	var t qsTally
	for _, a := range p.actors.all() {
		o := &a.t
		t.places = append(t.places, o.places...)
		t.emails = append(t.emails, o.emails...)
		t.reg.merge(&o.reg)
		t.joinSoldOut += o.joinSoldOut
		t.twice += o.twice
		t.twiceSame += o.twiceSame
		t.twiceFailed += o.twiceFailed
		t.registered += o.registered
		t.replays += o.replays
		t.replayRefuse += o.replayRefuse
		t.replayAccepted += o.replayAccepted
		t.replayLapsed += o.replayLapsed
		t.noStock += o.noStock
		t.bots += o.bots
		t.botsRefused += o.botsRefused
		t.botsFailed += o.botsFailed
		t.stillWaiting += o.stillWaiting
		if o.lastRegSent.After(t.lastRegSent) {
			t.lastRegSent = o.lastRegSent
		}
		if o.lastRegDone.After(t.lastRegDone) {
			t.lastRegDone = o.lastRegDone
		}
	}
	return &t
}

func (p *qsPart) figures(res *load.Result) []Figure {
	t := p.tally()
	// Not FigCapacity: the bench would take the run for a sale whose
	// throughput is its sale rate; this one's is over the whole run.
	figs := []Figure{{Name: FigSold, Value: float64(t.reg.tickets())}, {Name: FigQueueTickets, Value: float64(p.capacity)},
		{Name: FigQueueWaiters, Value: float64(len(t.places))}}
	if !t.lastRegSent.IsZero() && t.reg.tickets() >= p.capacity {
		figs = append(figs, Figure{Name: FigQueueSoldOutAt, Value: t.lastRegSent.Sub(p.t0).Seconds(), Unit: "s"})
	}
	if !t.reg.lastConfirmed.IsZero() {
		figs = append(figs, Figure{Name: "last payment confirmed, after T0", Value: t.reg.lastConfirmed.Sub(p.t0).Seconds(), Unit: "s"})
	}
	notMeasured := func(fig, why string) { p.notes = append(p.notes, "not measured: "+fig+": "+why) }

	// Joins after T0: answered, over the first post-T0 arrival to the last answer.
	var post int64
	var last time.Time
	for _, pl := range t.places {
		if pl.class == qsPost {
			post++
			if pl.joined.After(last) {
				last = pl.joined
			}
		}
	}
	if span := last.Sub(p.t0); post > 1 && span > 0 {
		figs = append(figs, Figure{Name: FigQueueJoinRate, Value: float64(post) / span.Seconds(), Unit: "joins/s"},
			Figure{Name: FigQueueJoinOffered, Value: p.rate, Unit: "joins/s"})
	}
	if j := res.Op("join"); j.Count > 0 {
		figs = append(figs, Figure{Name: FigQueueJoinP99, Value: j.P99, Unit: "ms"})
	}

	// Status polls: the busiest second and the mean from the first to the last.
	var peak, total int64
	first, lastSec := -1, -1
	for s := range p.pollSecs {
		n := p.pollSecs[s].Load()
		if n == 0 {
			continue
		}
		if first < 0 {
			first = s
		}
		lastSec, total, peak = s, total+n, max(peak, n)
	}
	var polling int64
	for _, pl := range t.places {
		if !pl.longPoll {
			polling++
		}
	}
	if asked := polling - min(p.capacity, int64(len(t.places)))*polling/max(1, int64(len(t.places))); asked > 0 {
		figs = append(figs, Figure{Name: FigQueuePollAsked, Value: float64(asked) / p.sh.poll.Seconds(), Unit: "polls/s"})
	}
	if total > 0 {
		figs = append(figs, Figure{Name: FigQueuePollPeak, Value: float64(peak), Unit: "polls/s"},
			Figure{Name: FigQueuePollMean, Value: float64(total) / float64(lastSec-first+1), Unit: "polls/s"})
	}

	// Admissions, in Redis' order.
	var adm []qsPlace
	for _, pl := range t.places {
		if !pl.admitted.IsZero() {
			adm = append(adm, pl)
		}
	}
	sort.SliceStable(adm, func(i, j int) bool { return adm[i].admitted.Before(adm[j].admitted) })
	figs = append(figs, Figure{Name: FigQueueAdmitted, Value: float64(len(adm))})
	if len(adm) == 0 {
		notMeasured("the admission figures", "nobody was admitted")
		return figs
	}
	figs = append(figs, Figure{Name: FigQueueFirstPass, Value: adm[0].admitted.Sub(p.t0).Seconds(), Unit: "s"})
	wave := adm[:min(int64(len(adm)), p.capacity)]
	delivered := halves(wave, func(pl qsPlace) (float64, bool) { return pl.seen.Sub(p.t0).Seconds(), true })
	if len(delivered[0]) > 0 {
		figs = append(figs, Figure{Name: FigQueueWaveP99, Value: quantile(delivered[0], 0.99), Unit: "s"})
	}
	if len(delivered[1]) > 0 {
		figs = append(figs, Figure{Name: FigQueueWavePolledP99, Value: quantile(delivered[1], 0.99), Unit: "s"})
	}

	// Returned stock: the passes that lapsed, in order, against the
	// admissions after the initial wave (each place asks one ticket, and
	// nothing else gives tickets back: no registration lapses in the run).
	var lapses []time.Time
	for _, pl := range adm {
		if pl.vanished {
			lapses = append(lapses, pl.passExp)
		}
	}
	slices.SortFunc(lapses, func(a, b time.Time) int { return a.Compare(b) })
	again := adm[len(wave):]
	var returned []float64
	for i := range min(len(lapses), len(again)) {
		returned = append(returned, float64(again[i].admitted.Sub(lapses[i]))/float64(time.Millisecond))
	}
	if len(returned) > 0 {
		figs = append(figs, Figure{Name: FigQueueReturnP99, Value: quantile(returned, 0.99), Unit: "ms"})
	} else {
		notMeasured(FigQueueReturnP99, fmt.Sprintf("%d passes lapsed, %d places admitted after the initial wave: no return to pair", len(lapses), len(again)))
	}

	// The committed order against the admission order.
	p.mu.Lock()
	key := p.shuffleKey
	p.mu.Unlock()
	if o, why := committedRho(key, p.t0, adm, p.audit); why == "" {
		switch {
		case o.audited:
			figs = append(figs, Figure{Name: FigQueueSpearman, Value: o.rhoAudit},
				Figure{Name: FigQueueAuditAgainstTimes, Value: float64(o.auditAgainstTimes)})
		case p.audit != nil:
			notMeasured(FigQueueSpearman, fmt.Sprintf("%d admitted places are missing from the room's audit", o.notAudited))
		default:
			notMeasured(FigQueueSpearman, "the room's audit was not read: "+p.auditWhy)
		}
		if !math.IsNaN(o.rho) {
			figs = append(figs, Figure{Name: FigQueueSpearmanTimes, Value: o.rho})
		}
		figs = append(figs, Figure{Name: FigQueueSpearmanUntied, Value: o.rhoUntied},
			Figure{Name: FigQueueDiscordant, Value: float64(o.discordant)}, Figure{Name: "places in the Spearman rho", Value: float64(o.n)})
	} else {
		notMeasured(FigQueueSpearman, why)
	}

	// Sold-out broadcast: from the last registration's answer (the room
	// sold out when it burnt the last pass, just before) to each waiter's
	// sold_out, for the long-pollers (the broadcast) and the pollers
	// (their poll interval's share on top). From the answer, not the send:
	// a registration's own latency under load is not the broadcast's.
	told := halves(t.places, func(pl qsPlace) (float64, bool) {
		return float64(max(0, pl.soldOut.Sub(t.lastRegDone))) / float64(time.Millisecond), !pl.soldOut.IsZero() && !t.lastRegDone.IsZero()
	})
	if len(told[0]) > 0 {
		// a p99 hides the last 1%: the count over a second and the
		// latest show a long-poll that missed the news and waited its
		// wait out (20 s) before they reach the p99
		late := 0
		for _, v := range told[0] {
			if v > 1000 {
				late++
			}
		}
		figs = append(figs, Figure{Name: FigQueueSoldOutP99, Value: quantile(told[0], 0.99), Unit: "ms"},
			Figure{Name: FigQueueSoldOutMax, Value: slices.Max(told[0]), Unit: "ms"},
			Figure{Name: FigQueueToldLongPolled, Value: float64(len(told[0]))},
			Figure{Name: FigQueueToldLate, Value: float64(late)})
	} else {
		notMeasured(FigQueueSoldOutP99, "no long-polling waiter saw sold_out (the event did not sell out, or nobody was left waiting)")
	}
	if len(told[1]) > 0 {
		figs = append(figs, Figure{Name: FigQueueSoldOutPolledP99, Value: quantile(told[1], 0.99), Unit: "ms"},
			Figure{Name: FigQueueToldPolled, Value: float64(len(told[1]))})
	}
	figs = append(figs, Figure{Name: "joins answered QUEUE_SOLD_OUT", Value: float64(t.joinSoldOut)})
	if t.stillWaiting > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%d buyers were still waiting when they gave up (%v after T0) or the run ended", t.stillWaiting, qsMaxWait))
	}
	return figs
}

// halves are the values of the places that have one (ok), the
// long-pollers' first and the pollers' second.
func halves(places []qsPlace, value func(qsPlace) (float64, bool)) (out [2][]float64) {
	for _, pl := range places {
		if v, ok := value(pl); ok {
			i := 0
			if !pl.longPoll {
				i = 1
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}

// committedRho is Spearman's rho between the committed order of the
// admitted places (the pre-queue by Rank under the revealed shuffle key,
// then later arrivals by their join's answer) and the order the room
// admitted them in: its audit's (each pass given, in the order of
// admission), or, without one, Redis' admission times (a millisecond's
// admissions tied). Places whose join straddled T0 are left out. The
// audit's order is checked against the admission times the buyers saw.
func committedRho(key []byte, t0 time.Time, adm []qsPlace, audit map[string]int) (o qsOrder, why string) {
	if key == nil {
		return o, "no status after T0 showed fairness.shuffleKey"
	}
	var committed, actual, audited []float64
	for _, pl := range adm {
		var c float64
		switch pl.class {
		case qsPre:
			c = room.Rank(key, pl.qid)
		case qsPost:
			c = 1 + float64(pl.joined.Sub(t0)) // after every rank in [0, 1), by arrival
		default:
			continue
		}
		committed = append(committed, c)
		actual = append(actual, float64(pl.admitted.UnixMilli()))
		if audit != nil {
			i, ok := audit[pl.qid]
			if !ok {
				o.notAudited++
				i = -1
			}
			audited = append(audited, float64(i))
		}
	}
	o.n = len(committed)
	if o.n < 3 {
		return o, fmt.Sprintf("%d admitted places to rank", o.n)
	}
	o.rho, o.discordant = spearman(committed, actual), discordant(committed, actual)
	if audit != nil && o.notAudited == 0 {
		o.audited = true
		o.rhoAudit, o.auditAgainstTimes = spearman(committed, audited), discordant(audited, actual)
	}
	// The admissions of one Redis millisecond are tied above; one script
	// admits the head of the line first, so in line order they came.
	idx := make([]int, o.n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if actual[idx[a]] != actual[idx[b]] {
			return actual[idx[a]] < actual[idx[b]]
		}
		return committed[idx[a]] < committed[idx[b]]
	})
	pos := make([]float64, o.n)
	for k, i := range idx {
		pos[i] = float64(k)
	}
	o.rhoUntied = spearman(committed, pos)
	return o, ""
}

// qsOrder is how the admission order kept the committed one.
type qsOrder struct {
	n int
	// rho is Spearman's rho, places admitted in one Redis millisecond
	// tied; rhoUntied takes them in the committed order; discordant counts
	// the pairs admitted in different milliseconds against the committed
	// order.
	rho, rhoUntied float64
	discordant     int64
	// audited: rhoAudit is against the audit's order, which ordered
	// auditAgainstTimes pairs against the admission times; notAudited
	// counts admitted places missing from the audit.
	audited           bool
	rhoAudit          float64
	auditAgainstTimes int64
	notAudited        int
}

// discordant counts the pairs that x and y order strictly opposite ways.
func discordant(x, y []float64) int64 {
	var n int64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			if (x[i]-x[j])*(y[i]-y[j]) < 0 {
				n++
			}
		}
	}
	return n
}

// spearman is Spearman's rank correlation of x and y: Pearson's
// correlation of their ranks, ties given their mean rank. NaN when either
// is constant or they differ in length.
func spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 2 {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	mean := float64(len(x)+1) / 2 // ranks 1..n, ties averaged, sum the same
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mean, ry[i]-mean
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks are the 1-based ranks of v, ties given their mean rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// quantile is the q-quantile of v (nearest rank); 0 for none.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// sampleMemory reads, just before T0 (everyone in the pre-queue waiting,
// nobody admitted), the MEMORY USAGE of the room's keys and its places.
func (p *qsPart) sampleMemory(ctx context.Context, env *Env) {
	fig := FigQueueRedisPerWait
	if env.Redis == nil {
		p.notes = append(p.notes, "not measured: "+fig+": no Redis to read (give -redis-url with -target)")
		return
	}
	if !load.Sleep(ctx, time.Until(p.t0.Add(-300*time.Millisecond))) {
		return
	}
	sp, why := p.space(ctx, env)
	if why != "" {
		p.mu.Lock()
		p.notes = append(p.notes, "not measured: "+fig+": "+why)
		p.mu.Unlock()
		return
	}
	ks := []string{sp.Room(p.event), sp.RoomWho(p.event), sp.RoomLine(p.event), sp.RoomPlaces(p.event), sp.RoomPasses(p.event),
		sp.RoomAudit(p.event)}
	used, err := redismem.Usage(ctx, env.Redis, ks)
	var places int64
	if err == nil {
		places, err = env.Redis.Do(ctx, env.Redis.B().Hlen().Key(sp.RoomPlaces(p.event)).Build()).AsInt64()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.notes = append(p.notes, "not measured: "+fig+": "+err.Error())
		return
	}
	p.memBytes, p.memPlaces = used, places
}

// space is the target's key space, looked up once; why says why it is not
// known.
func (p *qsPart) space(ctx context.Context, env *Env) (keys.Space, string) {
	p.spaceOnce.Do(func() {
		var err error
		p.sp, p.spaceWhy, err = spaceOf(ctx, env, func(s keys.Space) string { return s.Room(p.event) })
		if err != nil {
			p.spaceWhy = "the key prefix is unknown: " + err.Error()
		}
	})
	return p.sp, p.spaceWhy
}

// readAudit reads the order in which the room admitted places from its
// audit (each pass given, in the order of admission).
func (p *qsPart) readAudit(ctx context.Context, env *Env) {
	sp, why := p.space(ctx, env)
	if why != "" {
		p.auditWhy = why
		return
	}
	rs := &room.Service{Redis: env.Redis, Space: sp}
	p.audit = map[string]int{}
	after := ""
	for {
		es, err := rs.Audit(ctx, p.event, after, 10_000)
		if err != nil {
			p.audit, p.auditWhy = nil, err.Error()
			return
		}
		for _, e := range es {
			if _, seen := p.audit[e.QueueID]; e.What == "admitted" && !seen {
				p.audit[e.QueueID] = len(p.audit)
			}
		}
		if len(es) < 10_000 {
			return
		}
		after = es[len(es)-1].ID
	}
}

// redisCPU is Redis' CPU per admitted buyer over the timed run, and the
// memory per waiter sampled at T0.
func (p *qsPart) redisCPU(out *Outcome) []Figure {
	var figs []Figure
	p.mu.Lock()
	if p.memPlaces > 0 {
		figs = append(figs, Figure{Name: FigQueueRedisPerWait, Value: float64(p.memBytes) / float64(p.memPlaces), Unit: "B"},
			Figure{Name: "places at T0", Value: float64(p.memPlaces)})
	}
	p.mu.Unlock()
	admitted, _ := out.Figure(FigQueueAdmitted)
	var cores float64
	for _, c := range out.CPU {
		if c.Process == "redis" || strings.HasPrefix(c.Process, "redis ") {
			cores += c.Cores
		}
	}
	switch {
	case out.Result == nil || admitted <= 0:
	case cores <= 0:
		p.notes = append(p.notes, "not measured: "+FigQueueRedisCPU+": no Redis CPU measured (a Redis on another machine, or off Linux)")
	default:
		figs = append(figs, Figure{Name: FigQueueRedisCPU, Value: cores * out.Result.Elapsed.Seconds() * 1e6 / admitted, Unit: "us"})
	}
	return figs
}

// check: the sale's (exactly the capacity sold, or all that paid when
// fewer registered; Redis' sold counters; Postgres) and the room's.
func (p *qsPart) check(ctx context.Context, env *Env) (integrity.Checks, []Figure) {
	label := "queue-sellout " + p.event
	t := p.tally()
	unknown := t.reg.resolve(ctx, env, p.shop)
	told := t.joinSoldOut
	for _, pl := range t.places {
		if !pl.soldOut.IsZero() {
			told++
		}
	}
	out := checkGASale(ctx, env, integrity.Sale{Label: label, Paid: int64(len(t.reg.confirmed)), SoldOutReserves: told,
		Refused: t.reg.refused, Unresolved: unknown}, p.event, p.ticket, p.capacity)
	r := integrity.Room{Label: label, Places: int64(len(t.places)), Twice: t.twice, TwiceSame: t.twiceSame, TwiceFailed: t.twiceFailed,
		Registered: t.registered, Replays: t.replays, ReplaysRefused: t.replayRefuse, ReplaysLapsed: t.replayLapsed, ReplaysAccepted: t.replayAccepted,
		NoStock: t.noStock, Bots: t.bots, BotsRefused: t.botsRefused, BotsFailed: t.botsFailed}
	byQID := map[string]string{}
	for i, pl := range t.places {
		if e, ok := byQID[pl.qid]; ok && e != t.emails[i] {
			r.SharedPlaces = append(r.SharedPlaces, pl.qid)
		}
		byQID[pl.qid] = t.emails[i]
	}
	out = append(out, integrity.CheckRoom(r)...)
	cs, figs := checkRegistrations(ctx, env, label, p.event, &t.reg)
	return append(out, cs...), figs
}
