package redisstate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
)

// Status is the Redis state as one node sees it.
type Status string

// Statuses. Sales run only while Current.
const (
	Starting    Status = "starting"    // not checked yet
	Current     Status = "current"     // reachable, and the generation is the one in force
	Unreachable Status = "unreachable" // Redis does not answer
	Loading     Status = "loading"     // Redis is loading its data set
	Lost        Status = "lost"        // Redis lost its state (no marker, or a partition's is gone)
	Stale       Status = "stale"       // Redis went back to an older snapshot
	Rebuilding  Status = "rebuilding"  // a rebuild from Postgres is running
	// Unreplicated: current, but a master has fewer replicas in sync than
	// Replication asks for, so no sale could be acknowledged.
	Unreplicated Status = "unreplicated"
)

// ErrSalesStopped is what a script's wrapper returns when the script found
// its partition's marker missing: Redis lost its state or a rebuild is
// running, and the script changed nothing.
var ErrSalesStopped = apierr.Unavailable("sales are stopped: the Redis state is being restored from Postgres; retry shortly")

// gates are the answers of a node whose sales are stopped, by status.
var gates = map[Status]*apierr.Error{
	Starting:    apierr.Unavailable("ticketd is starting; retry shortly"),
	Unreachable: apierr.Unavailable("sales are stopped: Redis is unreachable; retry shortly"),
	Loading:     apierr.Unavailable("sales are stopped: Redis is loading its data; retry shortly"),
	Lost:        apierr.Unavailable("sales are stopped: Redis lost its state; they resume once it is rebuilt from Postgres"),
	Stale:       apierr.Unavailable("sales are stopped: Redis came back from an older snapshot; they resume once it is rebuilt from Postgres"),
	Rebuilding:  apierr.Unavailable("sales are stopped: Redis is being rebuilt from Postgres; retry shortly"),
	Unreplicated: apierr.Unavailable("sales are stopped: Redis has fewer replicas in sync than TICKETD_REDIS_WAIT_REPLICAS asks for; " +
		"retry shortly"),
}

// Mark is a generation and how far its sequence number got.
type Mark struct {
	Gen string
	Seq int64
}

// Record is where Postgres keeps the generation in force, so that a node
// starting cold can tell an older Redis snapshot from the current state.
type Record interface {
	// Load returns the recorded generation; ok is false when none is.
	Load(ctx context.Context) (m Mark, ok bool, err error)
	// Save records how far m's sequence got: it inserts m when no
	// generation is recorded, raises the sequence of the same generation,
	// and leaves another generation alone.
	Save(ctx context.Context, m Mark) error
}

// View is what a node knows of the Redis state.
type View struct {
	Status Status
	// Reason says why sales are stopped; empty while Current. It names no
	// host, user or database.
	Reason     string
	Gen        string
	Durability Durability
	// Replicas is what the masters last said of their replicas; nil
	// before the first read, or when they cannot be read.
	Replicas *Replicas
	Since    time.Time // when Status began
	// New is a Lost state found at this node's first check on a Redis
	// that never held one: no generation marker, and nothing recorded
	// of an earlier generation (no record in Postgres, no Postgres, or
	// an embedded Redis that starts empty every time). It is a first
	// start, initialised rather than recovered: logged at info, not as a
	// loss.
	New bool
}

// Monitor checks the Redis state a few times a second and keeps the node's
// gate: sales run only while the state is current. Check, View and Gate
// may be called from any goroutine (checks run one at a time).
type Monitor struct {
	Redis  rueidis.Client
	Space  keys.Space
	Record Record // nil when ticketd runs without Postgres
	Logger *slog.Logger

	// Recover, when set, rebuilds Redis from Postgres after a loss or a
	// rollback, or while the state says a rebuild runs (it may have died);
	// bad is the generation found lost, stale or being rebuilt ("" when
	// there was none), so a rebuild another node finished meanwhile is not
	// run twice. It runs in its own goroutine, one at a time.
	Recover func(ctx context.Context, bad string) error
	// OnCurrent, when set, is called on each check that found the state
	// current, with the catalog version (nodes reload the catalog then),
	// before the gate opens.
	// A failure is logged; the next check calls it again.
	OnCurrent func(ctx context.Context, catalogVersion int64) error
	// OnRTT, when set, receives the round-trip time of each check.
	OnRTT func(time.Duration)
	// OnChange, when set, is called with the new view whenever the status
	// or the durability changes.
	OnChange func(View)
	// FixedDurability, when set, is reported instead of the server's
	// settings (an embedded in-process Redis keeps nothing).
	FixedDurability *Durability
	// Timeout bounds one check (default 1s); a check that times out counts
	// as unreachable.
	Timeout time.Duration
	// Replication, when on, is waited for by each check's tick too: the
	// node takes as seen only a sequence number the replicas hold, so a
	// failover to one of them is not taken for a rollback. Sales stop
	// (Unreplicated) while a master has fewer replicas in sync than it asks
	// for: no sale could be acknowledged.
	Replication *Replication

	view atomic.Pointer[View]

	checking sync.Mutex               // one Check at a time: Run's, and a caller's
	rolled   atomic.Pointer[rollback] // RolledBack's, for the next Check
	// Check's own state.
	gen     string // generation adopted
	seq     int64  // highest sequence number seen of gen
	bad     View   // the generation found lost or stale: it stays so until a rebuild replaces it
	durAt   time.Time
	replAt  time.Time
	savedAt time.Time
	saving  atomic.Bool
	fixedAt time.Time // when the last recovery started
	fixing  atomic.Bool
}

// How often durability and the replicas are read again, the sequence
// saved to Postgres, and a failed recovery retried.
const (
	durabilityEvery = 10 * time.Second
	replicasEvery   = time.Second
	saveEvery       = time.Second
	recoverEvery    = 5 * time.Second
)

var tickScript = eval.Load("state_tick")

// View returns what this node knows now.
func (m *Monitor) View() View {
	if v := m.view.Load(); v != nil {
		return *v
	}
	return View{Status: Starting, Reason: gates[Starting].Message, Durability: Durability{Loses: LosesUnknown}}
}

// Gate returns nil while sales may run, else the 503 to answer.
func (m *Monitor) Gate() *apierr.Error {
	v := m.view.Load()
	if v == nil {
		return gates[Starting]
	}
	if v.Status == Current {
		return nil
	}
	return gates[v.Status]
}

func (m *Monitor) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

// Run checks every interval until ctx ends.
func (m *Monitor) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Check(ctx)
		}
	}
}

// Check reads the state once (one round trip: the tick script and every
// partition's marker), updates the view and the gate, and starts a
// recovery when the state is lost, stale or left rebuilding.
func (m *Monitor) Check(ctx context.Context) View {
	m.checking.Lock()
	defer m.checking.Unlock()
	cctx, cancel := context.WithTimeout(ctx, m.timeout())
	defer cancel()
	start := time.Now()
	arr, markers, acked, err := m.read(cctx)
	if err != nil {
		return m.unreachable(err)
	}
	if m.OnRTT != nil {
		m.OnRTT(time.Since(start))
	}
	status, _ := eval.Str(arr, 0)
	gen, _ := eval.Str(arr, 1)
	seq, _ := eval.Int(arr, 2)
	version, _ := eval.Int(arr, 3)
	prev := m.View()
	dur := m.durability(cctx, prev)
	repl := m.replicas(cctx, prev)

	var next View
	switch {
	case status == "" && prev.Status == Starting && m.nothingRecorded(cctx):
		next = View{Status: Lost, New: true, Reason: "Redis holds no generation marker yet: a new Redis, initialised at this start"}
		m.gen = ""
	case status == "":
		next = View{Status: Lost, Reason: "Redis holds no generation marker: it lost its state"}
		m.gen = ""
	case status == statusRebuilding:
		next = View{Status: Rebuilding, Reason: "a rebuild from Postgres is running"}
	case status == statusStale:
		next = View{Status: Stale, Reason: "Redis came back from an older snapshot (a node found its sequence number gone back)"}
	case gen != "" && gen == m.bad.Gen:
		next = m.bad
	case gen != m.gen:
		next = m.adopt(cctx, gen, seq, acked)
	case seq <= m.seq:
		// Every check advances the number, so a healthy Redis always
		// answers more than this node saw last.
		next = View{Status: Stale, Reason: fmt.Sprintf("the state's sequence number went back from %d to %d", m.seq, seq)}
	default:
		next = View{Status: Current}
		if acked {
			m.seq = seq
		}
	}
	if next.Status == Current {
		p, err := missingMarker(markers, gen)
		if err != nil {
			return m.unreachable(err)
		}
		if p >= 0 {
			next = View{Status: Lost, Reason: fmt.Sprintf("partition %d lost its generation marker", p)}
		}
	}
	if r := m.rolled.Swap(nil); r != nil && r.gen == gen && next.Status == Current {
		next = View{Status: Stale, Reason: "Redis went back to an older state: " + r.reason}
	}
	next.Gen = gen
	next.Durability = dur
	next.Replicas = repl
	if next.Status == Lost || next.Status == Stale {
		m.bad = next
	}
	current := next.Status == Current
	if current && m.OnCurrent != nil {
		// Before the gate opens: the first request let through finds the
		// catalog of this state, never an empty or older one. Bounded as
		// the read is: Run's context has no deadline, and a Redis that
		// hangs here would hold the check (and its lock) for good, the
		// view left saying current.
		octx, ocancel := context.WithTimeout(ctx, m.timeout())
		err := m.OnCurrent(octx, version)
		ocancel()
		if err != nil {
			m.logger().Warn("catalog refresh failed", "err", err)
		}
	}
	if current && m.Replication.On() && (repl == nil || int64(repl.Online) < m.Replication.Replicas) {
		next.Status, next.Reason = Unreplicated, m.unreplicated(repl)
	}
	m.set(prev, next)
	switch next.Status {
	case Current, Unreplicated:
		m.save(ctx, Mark{Gen: gen, Seq: m.seq})
	case Lost, Stale, Rebuilding:
		// Rebuilding too: a rebuild that died after stopping sales leaves
		// that status behind for good. Recover waits while a live rebuild
		// holds the lock and does nothing once it has published.
		m.recover(ctx, gen)
	}
	return m.View()
}

// read runs the tick script and reads every partition's marker. acked says
// the replicas Replication asks for hold the tick's write (always, when it
// asks for none). Without replicas it is one round trip; with them the
// tick and its WAIT go first, on one connection, and the markers after:
// on a Redis Cluster the markers span every master, and WAIT must follow
// the tick on its own.
func (m *Monitor) read(ctx context.Context) (tick []rueidis.RedisMessage, markers []rueidis.RedisResult, acked bool, err error) {
	gets := make(rueidis.Commands, 0, 1+keys.Partitions)
	for p := range keys.Partitions {
		gets = append(gets, m.Redis.B().Get().Key(m.Space.Live(p)).Build())
	}
	if m.Replication.On() {
		// A short WAIT: a check must not wait out a whole sale's timeout.
		wait := min(m.Replication.WaitTimeout(), m.timeout()/4)
		arr, n, err := eval.ArrayWait(ctx, m.Redis, tickScript, m.tickKeys(), m.tickArgs(), m.Replication.Replicas, wait, 0)
		if err != nil {
			return nil, nil, false, err
		}
		return arr, m.Redis.DoMulti(ctx, gets...), n >= m.Replication.Replicas, nil
	}
	p := eval.Pipeline(m.Redis, tickScript, m.tickKeys(), m.tickArgs())
	res := m.Redis.DoMulti(ctx, append(rueidis.Commands{p.Cmd}, gets...)...)
	arr, err := p.Reply(ctx, res[0])
	return arr, res[1:], true, err
}

// nothingRecorded reports whether nothing records an earlier generation:
// an embedded Redis (empty at every start), no Postgres to record one, or
// Postgres recording none. A record that cannot be read counts as one: a
// loss is not taken for a first start.
func (m *Monitor) nothingRecorded(ctx context.Context) bool {
	if m.FixedDurability != nil || m.Record == nil {
		return true
	}
	_, ok, err := m.Record.Load(ctx)
	return !ok && err == nil
}

// unreplicated says why sales stop for want of replicas.
func (m *Monitor) unreplicated(r *Replicas) string {
	if r == nil {
		return fmt.Sprintf("the Redis replicas could not be read; TICKETD_REDIS_WAIT_REPLICAS asks for %d in sync", m.Replication.Replicas)
	}
	return fmt.Sprintf("a Redis master has %d of the %d replicas in sync that TICKETD_REDIS_WAIT_REPLICAS asks for: no sale could be acknowledged",
		r.Online, m.Replication.Replicas)
}

// RolledBack tells the monitor that a sale found Redis went back past sales
// this node saw (orders.Service.ReportPaid): on a Redis Cluster a master
// other than the state's can fail over to a replica that lagged, which the
// state's sequence number does not show. The state is found stale at once
// (the gate closes, every node is told through Redis at the next check,
// and the rebuild holds what was lost), as for a rollback of the state.
func (m *Monitor) RolledBack(reason string) {
	r := &rollback{gen: m.View().Gen, reason: reason}
	if m.rolled.Swap(r) == nil {
		go m.Check(context.Background()) // one at a time: later reports ride on it
	}
}

// rollback is a RolledBack report: it stands for the generation it was
// made in, and a rebuild's new one has nothing of it.
type rollback struct{ gen, reason string }

// adopt takes gen as the generation in force when Postgres agrees: a node
// starting cold, or one that sees a rebuild's new generation. Without the
// record (no Postgres, or unreachable) it is adopted as it is. acked says
// the replicas hold seq (see read); otherwise the node's floor is what
// Postgres recorded, which only ever records a sequence number the
// replicas held.
func (m *Monitor) adopt(ctx context.Context, gen string, seq int64, acked bool) View {
	var floor int64
	if m.Record != nil {
		rec, ok, err := m.Record.Load(ctx)
		switch {
		case err != nil:
			m.logger().Warn("redis state: could not check the generation against Postgres; adopting it", "err", err)
		case ok && rec.Gen != gen:
			return View{Status: Stale, Reason: "Redis holds a generation Postgres does not record as current: it came back from an older state"}
		case ok && seq <= rec.Seq:
			// Another node may have advanced the number and recorded it
			// after this check read it: read it again, now that the
			// record is read. A healthy Redis answers more.
			again, err := m.tickAgain(ctx, gen)
			if err != nil {
				return View{Status: Unreachable, Reason: "Redis does not answer"}
			}
			if again <= rec.Seq {
				return View{Status: Stale, Reason: fmt.Sprintf("the state's sequence number %d is below the %d Postgres recorded: Redis came back from an older snapshot", again, rec.Seq)}
			}
			seq = again
			acked = false // the second tick was not waited for
		}
		if ok && rec.Gen == gen {
			floor = rec.Seq
		}
	}
	m.gen, m.seq = gen, seq
	if !acked {
		m.seq = floor
	}
	return View{Status: Current}
}

// tickKeys are state_tick.lua's keys.
func (m *Monitor) tickKeys() []string { return []string{m.Space.State(), m.Space.CatalogVersion()} }

// tickArgs are state_tick.lua's arguments: the generation this node found
// stale, which the script marks stale for every node.
func (m *Monitor) tickArgs() []string {
	if m.bad.Status == Stale {
		return []string{m.bad.Gen}
	}
	return []string{""}
}

// tickAgain runs the tick script alone and returns the sequence number it
// advanced gen to; 0 when gen is no longer the live generation.
func (m *Monitor) tickAgain(ctx context.Context, gen string) (int64, error) {
	arr, err := eval.Array(ctx, m.Redis, tickScript, m.tickKeys(), m.tickArgs())
	if err != nil {
		return 0, err
	}
	status, _ := eval.Str(arr, 0)
	g, _ := eval.Str(arr, 1)
	seq, _ := eval.Int(arr, 2)
	if status != statusLive || g != gen {
		return 0, nil
	}
	return seq, nil
}

// missingMarker returns the first partition whose marker is not gen, or
// -1; err when a marker could not be read (no answer from Redis, which
// tells nothing of the marker).
func missingMarker(res []rueidis.RedisResult, gen string) (int, error) {
	for p, r := range res {
		v, err := r.ToString()
		if _, isReply := rueidis.IsRedisErr(err); err != nil && !isReply && !rueidis.IsRedisNil(err) {
			return -1, err
		}
		if err != nil || v != gen {
			return p, nil
		}
	}
	return -1, nil
}

func (m *Monitor) unreachable(err error) View {
	prev := m.View()
	next := View{Status: Unreachable, Reason: "Redis does not answer", Gen: prev.Gen, Durability: prev.Durability}
	if re, ok := rueidis.IsRedisErr(err); ok && re.IsLoading() {
		next.Status, next.Reason = Loading, "Redis is loading its data set"
	}
	m.set(prev, next)
	return next
}

// durability reads the server's persistence settings when due: at the
// first check, after Redis was unreachable (it may be another process now),
// and every durabilityEvery.
func (m *Monitor) durability(ctx context.Context, prev View) Durability {
	if m.FixedDurability != nil {
		return *m.FixedDurability
	}
	if !m.durAt.IsZero() && prev.Status != Unreachable && prev.Status != Loading && time.Since(m.durAt) < durabilityEvery {
		return prev.Durability
	}
	d, err := ReadDurability(ctx, m.Redis)
	if err != nil {
		// Asked again at the next check; meanwhile what was known stays.
		m.logger().Warn("redis state: could not read Redis' persistence settings", "err", err)
		if prev.Durability.Loses != "" {
			return prev.Durability
		}
		return d
	}
	m.durAt = time.Now()
	return d
}

// replicas reads the masters' replicas when due: every replicasEvery (the
// lag is worth knowing fresh), and at once after Redis was unreachable.
func (m *Monitor) replicas(ctx context.Context, prev View) *Replicas {
	if m.FixedDurability != nil { // an embedded Redis has no replicas to read
		return nil
	}
	if !m.replAt.IsZero() && prev.Status != Unreachable && prev.Status != Loading && time.Since(m.replAt) < replicasEvery {
		return prev.Replicas
	}
	r, err := ReadReplicas(ctx, m.Redis)
	if err != nil {
		m.logger().Debug("redis state: could not read the replicas", "err", err)
		return nil
	}
	m.replAt = time.Now()
	return &r
}

// set installs next and logs what changed.
func (m *Monitor) set(prev, next View) {
	if next.Status != Current && next.Reason == "" {
		next.Reason = gates[next.Status].Message
	}
	if next.Durability.Loses == "" { // not read yet: every reader of the view sees a level
		next.Durability.Loses = LosesUnknown
	}
	changed := prev.Status != next.Status || prev.Durability != next.Durability
	if prev.Status == next.Status {
		next.Since = prev.Since
	} else {
		next.Since = time.Now()
	}
	m.view.Store(&next)
	if !changed {
		return
	}
	log := m.logger()
	if prev.Status != next.Status {
		switch {
		case next.Status == Current:
			was := string(prev.Status)
			if prev.New {
				was = "new" // initialised on a first start: nothing was lost
			}
			log.Info("redis state is current: sales run", "generation", next.Gen, "was", was)
		case next.New:
			log.Info("initialising a new Redis: no generation marker, none recorded before; sales start once it is initialised")
		case next.Status == Lost || next.Status == Stale:
			level := slog.LevelError
			if prev.Status == Starting {
				// Found at start: a Redis that lost its state while this
				// node was down (a first start is New, above); the
				// rebuild that follows says what it restored.
				level = slog.LevelWarn
			}
			log.Log(context.Background(), level, "redis state is not current: sales stop",
				"status", string(next.Status), "reason", next.Reason, "generation", next.Gen)
		default:
			log.Warn("redis state: sales stop", "status", string(next.Status), "reason", next.Reason)
		}
	}
	if prev.Durability != next.Durability && next.Durability.Settings != "" {
		level := slog.LevelWarn
		if next.Durability.Loses == LosesNothing {
			level = slog.LevelInfo
		}
		log.Log(context.Background(), level, "redis durability: "+next.Durability.Describe(),
			"loses", next.Durability.Loses, "settings", next.Durability.Settings)
	}
	if m.OnChange != nil {
		m.OnChange(next)
	}
}

// save records the sequence number in Postgres about once a second, off
// the check's path (a slow Postgres must not slow the checks).
func (m *Monitor) save(ctx context.Context, mark Mark) {
	if m.Record == nil || time.Since(m.savedAt) < saveEvery || !m.saving.CompareAndSwap(false, true) {
		return
	}
	m.savedAt = time.Now()
	go func() {
		defer m.saving.Store(false)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := m.Record.Save(sctx, mark); err != nil {
			m.logger().Debug("redis state: could not record the sequence number in Postgres", "err", err)
		}
	}()
}

// recover starts Recover unless one runs or one started recoverEvery ago.
func (m *Monitor) recover(ctx context.Context, bad string) {
	if m.Recover == nil || time.Since(m.fixedAt) < recoverEvery || !m.fixing.CompareAndSwap(false, true) {
		return
	}
	m.fixedAt = time.Now()
	go func() {
		defer m.fixing.Store(false)
		if err := m.Recover(context.WithoutCancel(ctx), bad); err != nil {
			m.logger().Error("redis state: rebuild from Postgres failed; retrying", "err", err, "retry_in", recoverEvery)
		}
	}()
}

func (m *Monitor) timeout() time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return time.Second
}
