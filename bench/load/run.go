package load

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"
)

// Actor is what one worker does for each arrival. A Plan makes one Actor
// per worker, so an Actor may keep state without locks.
type Actor interface {
	// Arrive runs one arrival. intended is when it was scheduled to start
	// (open loop) or when it started (closed loop); latencies that include
	// waiting are measured from it.
	Arrive(w *Worker, intended time.Time)
}

// Plan describes one run.
type Plan struct {
	// Name labels the progress line.
	Name string
	// Unit is what Worker.Done counts ("pairs", "reads").
	Unit string
	// Ops are the operation names; Worker.Observe takes their index.
	Ops []string
	// Primary is the op the progress line shows and abandoned arrivals are
	// recorded under.
	Primary int
	// Open selects the open loop at Rate arrivals per second; otherwise
	// Workers run arrivals back to back.
	Open bool
	Rate float64
	// Duration is how long arrivals are started; with Arrivals set and an
	// open loop, the schedule is Arrivals/Rate long instead.
	Duration time.Duration
	// Arrivals stops the run after this many arrivals; 0 for no limit.
	Arrivals int64
	// Workers is the concurrency of a closed loop and the most arrivals in
	// flight at once in an open loop (later ones wait, their clocks running).
	Workers int
	// At, when set, is an open loop's own schedule: arrival i starts At(i)
	// after the run's start (At never decreasing), instead of i/Rate; Rate
	// is then only what the report says was offered (give the schedule's
	// mean). It needs Arrivals.
	At func(i int64) time.Duration
	// Conns caps the HTTP connections (0: Workers + 8); workers beyond it
	// wait for a free connection, their clocks running. For runs whose
	// workers mostly sleep between calls (buyers waiting in a queue).
	Conns int
	// Drain bounds, in an open loop, how long arrivals still queued when the
	// schedule ends may wait; past it they are abandoned and counted as
	// errors with their waiting time so far (default 30s).
	Drain time.Duration
	// Timeout bounds each HTTP call (default 30s).
	Timeout time.Duration
	// Progress receives a progress line once a second; nil for none.
	Progress *Progress
	// NewActor makes the actor of a worker.
	NewActor func(w *Worker) Actor
	// Window, when set, is told when the timed part starts and ends (the
	// CPU accounting of the processes under load).
	Window Window
}

// Window is told when a run's timed part starts and ends.
type Window interface {
	Begin()
	End()
}

// StartDelay is the op an open loop adds to a plan's ops: how long each
// arrival waited past its intended start before a worker took it.
const StartDelay = "start_delay"

// Result is what a run measured. Every arrival and request counts: there
// is no warm-up left out.
type Result struct {
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	Mode     string `json:"mode"` // "open" or "closed"
	Rate     float64
	Workers  int
	Started  time.Time
	Elapsed  time.Duration // from the first arrival to the last answer
	Arrivals int64         // arrivals started (abandoned ones included)
	// Abandoned arrivals were still queued at the drain deadline.
	Abandoned int64
	// AchievedRate is, in an open loop, the arrivals a worker began per
	// second, from the schedule's start to the last one begun: Rate when
	// the generator kept its schedule.
	AchievedRate float64
	// Saturated is set when, in an open loop, an arrival fell due while
	// every worker (the most arrivals in flight) was busy: the target did
	// not keep up, and later arrivals began late, their wait counted.
	Saturated  bool
	Units      int64
	Requests   int64
	Ops        []OpStats
	Hists      []*hdrhistogram.Histogram
	Errors     map[string]int64
	Rejections map[string]int64
	Series     []Second
	// Interrupted is set when the context ended the run early.
	Interrupted bool
}

// Second is one point of the per-second series.
type Second struct {
	T        float64 `json:"t_s"`
	Units    float64 `json:"units_per_s"`
	Requests float64 `json:"requests_per_s"`
	P99      float64 `json:"p99_ms"` // primary op, answers within this second
	Errors   int64   `json:"errors"` // cumulative
}

// UnitsPerSec is the throughput of completed units over the whole run.
func (r *Result) UnitsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Units) / r.Elapsed.Seconds()
}

// RequestsPerSec is the HTTP request rate over the whole run.
func (r *Result) RequestsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Op returns the stats of the named op (zero stats when absent).
func (r *Result) Op(name string) OpStats {
	for _, o := range r.Ops {
		if o.Name == name {
			return o
		}
	}
	return OpStats{Name: name}
}

// Hist returns the histogram of the named op, nil when absent.
func (r *Result) Hist(name string) *hdrhistogram.Histogram {
	for i, o := range r.Ops {
		if o.Name == name {
			return r.Hists[i]
		}
	}
	return nil
}

// NewClient is the HTTP client of a run against addr (host:port), with
// enough connections for every worker.
func NewClient(addr string, conns int, timeout time.Duration) *fasthttp.HostClient {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &fasthttp.HostClient{
		Addr:                     addr,
		MaxConns:                 conns + 8,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		MaxIdleConnDuration:      time.Minute,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
	}
}

// Run runs p against addr (host:port) and returns what it measured. It
// ends early, with Interrupted set, when ctx ends.
func Run(ctx context.Context, addr string, p Plan) (*Result, error) {
	if p.Workers <= 0 || p.NewActor == nil || len(p.Ops) == 0 {
		return nil, errors.New("load: a plan needs workers, ops and an actor")
	}
	if p.Open && p.Rate <= 0 {
		return nil, errors.New("load: an open loop needs a rate")
	}
	if p.Duration <= 0 && p.Arrivals <= 0 {
		return nil, errors.New("load: a plan needs a duration or a number of arrivals")
	}
	if p.At != nil && (!p.Open || p.Arrivals <= 0) {
		return nil, errors.New("load: a schedule (At) needs an open loop and a number of arrivals")
	}
	ops := append([]string(nil), p.Ops...)
	if p.Open {
		ops = append(ops, StartDelay)
	}
	rc := newRecorder(ops, p.Primary)
	conns := p.Workers
	if p.Conns > 0 && p.Conns < conns {
		conns = p.Conns
	}
	hc := NewClient(addr, conns, p.Timeout)
	if conns < p.Workers {
		hc.MaxConnWaitTimeout = hc.ReadTimeout
	}
	defer hc.CloseIdleConnections()

	workers := make([]*Worker, p.Workers)
	actors := make([]Actor, p.Workers)
	for i := range workers {
		w := &Worker{ID: i, Req: fasthttp.AcquireRequest(), Resp: fasthttp.AcquireResponse(), hc: hc, sh: rc.shards[i%numShards], rc: rc}
		workers[i], actors[i] = w, p.NewActor(w)
	}
	defer func() {
		for _, w := range workers {
			fasthttp.ReleaseRequest(w.Req)
			fasthttp.ReleaseResponse(w.Resp)
		}
	}()

	res := &Result{Name: p.Name, Unit: p.Unit, Mode: "closed", Rate: p.Rate, Workers: p.Workers}
	if p.Open {
		res.Mode = "open"
	}
	start := time.Now().Add(5 * time.Millisecond)
	res.Started = start
	stopTicks := startTicker(rc, p, start, &res.Series)
	var arrivals, abandoned atomic.Int64
	if p.Window != nil {
		p.Window.Begin()
	}
	if p.Open {
		k := runOpen(ctx, p, start, workers, actors, len(ops)-1, &arrivals, &abandoned)
		res.AchievedRate, res.Saturated = k.rate(start), k.saturated
	} else {
		runClosed(ctx, p, start, workers, actors, &arrivals)
	}
	res.Elapsed = time.Since(start)
	if p.Window != nil {
		p.Window.End()
	}
	stopTicks(res.Elapsed)

	res.Hists, res.Errors, res.Rejections, res.Requests, res.Units = rc.merged()
	for i, h := range res.Hists {
		res.Ops = append(res.Ops, Stats(ops[i], h))
	}
	res.Arrivals, res.Abandoned = arrivals.Load(), abandoned.Load()
	res.Interrupted = ctx.Err() != nil
	return res, nil
}

// runClosed runs the workers back to back until the duration is over or
// the arrivals are used up.
func runClosed(ctx context.Context, p Plan, start time.Time, workers []*Worker, actors []Actor, arrivals *atomic.Int64) {
	time.Sleep(time.Until(start))
	end := start.Add(p.Duration)
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func(w *Worker, a Actor) {
			defer wg.Done()
			for ctx.Err() == nil {
				now := time.Now()
				if p.Duration > 0 && !now.Before(end) {
					return
				}
				if n := arrivals.Add(1); p.Arrivals > 0 && n > p.Arrivals {
					arrivals.Add(-1)
					return
				}
				a.Arrive(w, now)
			}
		}(w, actors[i])
	}
	wg.Wait()
}

// kept is how an open loop kept its schedule: how many arrivals workers
// began, when the last began, and whether an arrival ever fell due while
// every worker was busy.
type kept struct {
	busy      atomic.Int64 // workers inside an arrival
	begun     atomic.Int64
	last      atomic.Int64 // unix ns of the latest begin
	interval  time.Duration
	schedule  time.Duration // n intervals
	saturated bool
}

func (k *kept) began(t time.Time) {
	k.busy.Add(1)
	k.begun.Add(1)
	ns := t.UnixNano()
	for {
		cur := k.last.Load()
		if ns <= cur || k.last.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// rate is the arrivals begun per second, over the schedule or, when
// arrivals began after it ended, until the last began: n arrivals on
// schedule take n intervals, the last beginning one interval before the end.
func (k *kept) rate(start time.Time) float64 {
	n := k.begun.Load()
	if n == 0 {
		return 0
	}
	span := max(time.Unix(0, k.last.Load()).Sub(start)+k.interval, k.schedule)
	return float64(n) / span.Seconds()
}

// runOpen starts arrival i at start + i/rate, whether or not the server
// kept up: an arrival that finds no free worker waits in the queue with its
// clock running, so its latencies include the wait (coordinated omission
// corrected). Arrivals still queued at the drain deadline are abandoned.
func runOpen(ctx context.Context, p Plan, start time.Time, workers []*Worker, actors []Actor, delayOp int,
	arrivals, abandoned *atomic.Int64) *kept {
	n := p.Arrivals
	if n <= 0 {
		n = int64(p.Rate * p.Duration.Seconds())
	}
	interval := float64(time.Second) / p.Rate
	k := &kept{interval: time.Duration(interval), schedule: time.Duration(float64(n) * interval)}
	at := func(i int64) time.Time { return start.Add(time.Duration(float64(i) * interval)) }
	if p.At != nil {
		// Arrival i at At(i); the end of the schedule, at(n), one mean
		// interval after the last.
		span := p.At(n - 1)
		interval = float64(span) / float64(max(n-1, 1))
		k.interval, k.schedule = time.Duration(interval), span+time.Duration(interval)
		at = func(i int64) time.Time {
			if i >= n {
				return start.Add(k.schedule)
			}
			return start.Add(p.At(i))
		}
	}
	drain := p.Drain
	if drain <= 0 {
		drain = 30 * time.Second
	}
	deadline := at(n).Add(drain)

	abandon := func(w *Worker, intended time.Time) {
		abandoned.Add(1)
		w.ObserveDuration(p.Primary, time.Since(intended))
		w.Error("abandoned")
	}
	queue := make(chan int64, 4096)
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func(w *Worker, a Actor) {
			defer wg.Done()
			for i := range queue {
				intended := at(i)
				now := time.Now()
				if now.After(deadline) {
					abandon(w, intended)
					continue
				}
				k.began(now)
				w.ObserveDuration(delayOp, now.Sub(intended))
				a.Arrive(w, intended)
				k.busy.Add(-1)
			}
		}(w, actors[i])
	}

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	i := int64(0)
dispatch:
	for ; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		if d := time.Until(at(i)); d > 0 {
			if !Sleep(ctx, d) { // at most one interval, unless At leaves a gap
				break
			}
		}
		if k.busy.Load() >= int64(len(workers)) {
			k.saturated = true // arrival i waits for a free worker
		}
		select {
		case queue <- i:
			arrivals.Add(1)
		case <-ctx.Done():
			break dispatch
		case <-timer.C:
			break dispatch
		}
	}
	if ctx.Err() == nil {
		// The drain deadline passed with arrivals never handed to a
		// worker: each counts, with the time it has waited so far.
		for ; i < n; i++ {
			arrivals.Add(1)
			abandon(workers[0], at(i))
		}
	}
	close(queue)
	wg.Wait()
	return k
}

// Sleep waits d, or until ctx ends (false); under 50 ms it only sleeps.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d < 50*time.Millisecond {
		time.Sleep(d)
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Progress writes the progress line of runs.
type Progress struct {
	W io.Writer
	// Carriage rewrites one line with \r (a terminal); otherwise a line is
	// written every Every seconds.
	Carriage bool
	Every    int
}

// Merge joins the results of runs of one plan made one after another (the
// slices of an alternating measurement) into one result, as if they were
// one run: counts and histograms summed, elapsed times added, the series
// laid end to end. Mode, name, unit, workers and start come from the first.
func Merge(parts ...*Result) *Result {
	if len(parts) == 0 {
		return nil
	}
	first := parts[0]
	m := &Result{Name: first.Name, Unit: first.Unit, Mode: first.Mode, Rate: first.Rate, Workers: first.Workers,
		Started: first.Started, Errors: map[string]int64{}, Rejections: map[string]int64{}}
	var begun float64 // open loops: arrivals begun, from each part's rate and length
	for _, p := range parts {
		offset := m.Elapsed.Seconds()
		for _, s := range p.Series {
			s.T += offset
			s.Errors += sum(m.Errors)
			m.Series = append(m.Series, s)
		}
		m.Elapsed += p.Elapsed
		m.Arrivals += p.Arrivals
		m.Abandoned += p.Abandoned
		m.Units += p.Units
		m.Requests += p.Requests
		m.Saturated = m.Saturated || p.Saturated
		m.Interrupted = m.Interrupted || p.Interrupted
		begun += p.AchievedRate * p.Elapsed.Seconds()
		for k, n := range p.Errors {
			m.Errors[k] += n
		}
		for k, n := range p.Rejections {
			m.Rejections[k] += n
		}
		for i, h := range p.Hists {
			if i == len(m.Hists) {
				m.Hists = append(m.Hists, newHist())
			}
			m.Hists[i].Merge(h)
		}
	}
	if m.Elapsed > 0 {
		m.AchievedRate = begun / m.Elapsed.Seconds()
	}
	for i, h := range m.Hists {
		m.Ops = append(m.Ops, Stats(first.Ops[i].Name, h))
	}
	return m
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
