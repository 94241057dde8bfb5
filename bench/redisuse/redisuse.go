// Package redisuse measures what a bench run asks of Redis over its timed
// part: ticketd's round trips (ticketd_redis_round_trips_total on each API
// node's /metrics, summed) and the commands Redis ran (INFO commandstats,
// read with bench/durable's counters). A Meter is a load.Window: it adds
// up its windows (a run measured in slices) until Take.
package redisuse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/durable"
	"github.com/ticketd/ticketd/bench/report"
)

// RoundTripsMetric is ticketd's counter of its Redis round trips.
const RoundTripsMetric = "ticketd_redis_round_trips_total"

// readTimeout bounds each reading of /metrics or INFO.
const readTimeout = 5 * time.Second

// Meter reads ticketd's round trips and Redis's command counters at the
// start and the end of each window. Safe for one run at a time.
type Meter struct {
	redis rueidis.Client // nil: commands not measured
	nodes []string       // base URLs of ticketd's API nodes; none: round trips not measured
	http  *http.Client

	mu      sync.Mutex
	before  Reading
	errs    readErrs // of the reading at Begin
	use     Use
	sampler *sampler // of the window in progress (nil: none)
	sampled bool     // a window since the last Take has its sample
}

// New meters the Redis rc (nil: not measured) and the round trips of the
// ticketd API nodes at the base URLs nodes (none: not measured).
func New(rc rueidis.Client, nodes ...string) *Meter {
	return &Meter{redis: rc, nodes: nodes, http: &http.Client{Timeout: readTimeout}}
}

// Reading is the counters at one moment.
type Reading struct {
	RoundTrips int64 // every node's, summed
	Commands   durable.Snapshot
}

// Sub is what happened from before to r.
func (r Reading) Sub(before Reading) Reading {
	return Reading{RoundTrips: r.RoundTrips - before.RoundTrips, Commands: r.Commands.Sub(before.Commands)}
}

// Use is what the windows measured, summed: the increases of the counters
// and why one could not be read (then it is not reported).
type Use struct {
	Windows       int
	Delta         Reading
	RoundTripsErr error
	CommandsErr   error
	// ScriptTime is the sampled execution time by top-level command, a
	// script by its name (scripts.go), in microseconds; ScriptTimeErr why
	// no window could be sampled.
	ScriptTime    map[string]int64
	ScriptCalls   int64 // the top-level commands the sample summed
	ScriptTimeErr error
}

type readErrs struct{ trips, cmds error }

// add counts one window's increase, or the errors that spoil it.
func (u *Use) add(d Reading, e readErrs) {
	u.Windows++
	u.Delta = Reading{RoundTrips: u.Delta.RoundTrips + d.RoundTrips, Commands: u.Delta.Commands.Add(d.Commands)}
	u.RoundTripsErr = errors.Join(u.RoundTripsErr, e.trips)
	u.CommandsErr = errors.Join(u.CommandsErr, e.cmds)
}

// Begin reads the counters at the start of a window.
func (m *Meter) Begin() {
	if m == nil {
		return
	}
	r, e := m.read()
	m.mu.Lock()
	m.before, m.errs = r, e
	if m.redis != nil && !m.sampled && m.sampler == nil {
		m.sampler = startSample(m.redis)
	}
	m.mu.Unlock()
}

// End reads them at its end and adds the window's increase.
func (m *Meter) End() {
	if m == nil {
		return
	}
	m.mu.Lock()
	s := m.sampler
	m.sampler = nil
	m.mu.Unlock()
	if s != nil {
		s.end() // the sample ends with the window
	}
	r, e := m.read()
	var us map[string]int64
	var calls int64
	var serr error
	if s != nil {
		us, calls, serr = s.collect() // after the reading: reading the log is not counted
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case s == nil:
	case serr == nil:
		m.sampled = true
		m.use.ScriptTime, m.use.ScriptCalls, m.use.ScriptTimeErr = us, calls, nil
	case !errors.Is(serr, errWindowShort) || m.use.ScriptTimeErr == nil:
		m.use.ScriptTimeErr = serr
	}
	e.trips = errors.Join(m.errs.trips, e.trips)
	e.cmds = errors.Join(m.errs.cmds, e.cmds)
	m.use.add(r.Sub(m.before), e)
}

// Take is what the windows since the last Take measured.
func (m *Meter) Take() Use {
	if m == nil {
		return Use{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.use
	m.use = Use{}
	m.sampled = false
	return u
}

// Redis is the Redis the meter reads (nil: none).
func (m *Meter) Redis() rueidis.Client {
	if m == nil {
		return nil
	}
	return m.redis
}

var (
	errNoNodes = errors.New("no ticketd API node to read /metrics from")
	errNoRedis = errors.New("no Redis to read INFO from (give -redis-url with -target)")
)

func (m *Meter) read() (Reading, readErrs) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var r Reading
	var e readErrs
	if len(m.nodes) == 0 {
		e.trips = errNoNodes
	}
	for _, base := range m.nodes {
		n, err := m.roundTrips(ctx, base)
		r.RoundTrips += n
		e.trips = errors.Join(e.trips, err)
	}
	if m.redis == nil {
		e.cmds = errNoRedis
	} else {
		r.Commands, e.cmds = durable.Take(ctx, m.redis)
	}
	return r, e
}

// roundTrips reads one node's counter from its /metrics.
func (m *Meter) roundTrips(ctx context.Context, base string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(base, "/")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", base, resp.Status)
	}
	n, ok := RoundTrips(body)
	if !ok {
		return 0, fmt.Errorf("%s/metrics has no %s (a ticketd older than issue 19?)", base, RoundTripsMetric)
	}
	return n, nil
}

// RoundTrips is the value of ticketd_redis_round_trips_total in a
// Prometheus text exposition, and whether it is there.
func RoundTrips(metrics []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), RoundTripsMetric)
		if !ok || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		// "<value>" or "<value> <timestamp>"; a counter may be written as
		// 1.234567e+06.
		v, err := strconv.ParseFloat(strings.Fields(rest + " x")[0], 64)
		if err != nil || math.IsNaN(v) {
			return 0, false
		}
		return int64(math.Round(v)), true
	}
	return 0, false
}

// PerUnit is u per unit of work: round trips and commands (the commands
// rc, when not nil, flags as writes marked in the breakdown). A figure
// that could not be read is nil, and Why says why.
func (u Use) PerUnit(ctx context.Context, rc rueidis.Client, units int64) *report.RedisUse {
	if u.Windows == 0 {
		return nil
	}
	out := &report.RedisUse{}
	if units <= 0 {
		out.Why = append(out.Why, "no unit completed")
		return out
	}
	per := func(n int64) *float64 {
		v := float64(n) / float64(units)
		return &v
	}
	if u.RoundTripsErr != nil {
		out.Why = append(out.Why, "round trips not read: "+oneLine(u.RoundTripsErr))
	} else {
		out.RoundTripsPerUnit = per(u.Delta.RoundTrips)
	}
	if u.CommandsErr != nil {
		out.Why = append(out.Why, "commands not read: "+oneLine(u.CommandsErr))
		return out
	}
	cost, err := durable.CostOf(ctx, rc, u.Delta.Commands, units)
	if err != nil {
		out.Why = append(out.Why, "commands not read: "+oneLine(err))
		return out
	}
	out.CommandsPerUnit = per(u.Delta.Commands.Commands())
	out.ScriptsPerUnit = &cost.ScriptsPerUnit
	out.ByCommand = cost.Breakdown(0.005)
	switch {
	case Shares(u.ScriptTime) != "":
		out.ByScriptTime = fmt.Sprintf("%s (of %d commands)", Shares(u.ScriptTime), u.ScriptCalls)
	case u.ScriptTimeErr != nil:
		out.Why = append(out.Why, "time by script not sampled: "+oneLine(u.ScriptTimeErr))
	}
	return out
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
