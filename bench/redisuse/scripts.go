package redisuse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
)

// Where Redis spends its time, by script: INFO commandstats adds every
// FCALL up in one line, whatever script it ran. So a window is sampled:
// a second after it begins, the slow log logs every command for a fifth of
// a second (slowlog-log-slower-than 0, on every master), and each
// top-level command's logged execution time is summed by command, an
// FCALL by the name of the ticketd script it ran. Commands a script
// calls are in the log too; they are left out (their time is inside their
// script's). The threshold is put back when the fifth of a second ends;
// the log is read, and its length put back, when the window has ended and
// its counters are read, so that reading it is not counted. Logging every
// command costs Redis more CPU while it lasts (each entry copies its
// arguments), in 0.2 s of the run: 1% of a 20 s flash run, 3% of a 6 s
// one. A server that logs every command already (another bench sampling
// it, or set so) is not sampled: its settings are not the ones to put back.
const (
	sampleAfter  = time.Second
	sampleFor    = 200 * time.Millisecond
	sampleMaxLen = 50000
	// inScript is the client a command a script called is logged with.
	inScript = "?:0"
)

var (
	// errWindowShort: the window ended before its sample began.
	errWindowShort = errors.New("the window ended before the sample")
	// errLogsAll: the server's slow log logs every command already.
	errLogsAll = errors.New("its slow log logs every command already (slowlog-log-slower-than 0: another bench sampling it?); not sampled")
)

// scriptNames maps the function name of each of ticketd's scripts to its
// name.
var scriptNames = sync.OnceValue(eval.Names)

// sampler samples one window's script time in the background.
type sampler struct {
	stop chan struct{} // closed by end: the window ended
	done chan struct{} // closed when the logging is over and the threshold back
	logs []*nodeLog    // the servers sampled, read by collect
	err  error
}

// nodeLog is one server being sampled: what to put back, and where its
// log's entries of the sample begin.
type nodeLog struct {
	rc                rueidis.Client
	threshold, maxLen string
	last              int64
}

// startSample begins sampling rc's Redis (each master of a Cluster) once
// sampleAfter has passed, unless end comes first.
func startSample(rc rueidis.Client) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTimer(sampleAfter)
		defer t.Stop()
		select {
		case <-s.stop:
			s.err = errWindowShort
			return
		case <-t.C:
		}
		s.logs, s.err = logEverything(rc, s.stop)
		if len(s.logs) == 0 {
			return
		}
		t.Reset(sampleFor)
		select {
		case <-s.stop:
		case <-t.C:
		}
		for _, n := range s.logs {
			s.err = errors.Join(s.err, n.set(n.threshold, ""))
		}
	}()
	return s
}

// end ends the sample, early when the window ends first: once it returns
// no server logs every command.
func (s *sampler) end() {
	close(s.stop)
	<-s.done
}

// collect reads what the servers logged, after end, and puts their logs'
// length back (and the threshold again, should putting it back have
// failed).
func (s *sampler) collect() (us map[string]int64, calls int64, err error) {
	us = map[string]int64{}
	err = s.err
	for _, n := range s.logs {
		got, c, rerr := n.read()
		err = errors.Join(err, rerr, n.set(n.threshold, n.maxLen))
		calls += c
		for k, v := range got {
			us[k] += v
		}
	}
	return us, calls, err
}

// logEverything turns every master's slow log to log every command and
// returns those it turned; nothing when stop came first.
func logEverything(rc rueidis.Client, stop <-chan struct{}) ([]*nodeLog, error) {
	var logs []*nodeLog
	var errs error
	for addr, n := range rc.Nodes() {
		l, err := start(n, stop)
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("%s: %w", addr, err))
		}
		if l != nil {
			logs = append(logs, l)
		}
	}
	return logs, errs
}

// start reads one server's slow log settings and newest entry, then sets
// it to log every command (nil, nil: a replica, not sampled).
func start(rc rueidis.Client, stop <-chan struct{}) (*nodeLog, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	// A replica logs what its primary's scripts wrote as top-level
	// commands: counted there, they would be counted twice.
	role, err := rc.Do(ctx, rc.B().Role().Build()).ToArray()
	if err != nil || len(role) == 0 {
		return nil, fmt.Errorf("role: %w", err)
	}
	if r, _ := role[0].ToString(); r != "master" {
		return nil, nil
	}
	old, err := rc.Do(ctx, rc.B().ConfigGet().Parameter("slowlog-*").Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("slow log settings: %w", err)
	}
	n := &nodeLog{rc: rc, threshold: old["slowlog-log-slower-than"], maxLen: old["slowlog-max-len"]}
	switch {
	case n.threshold == "" || n.maxLen == "":
		return nil, fmt.Errorf("slow log settings: CONFIG GET answered %v", old)
	case n.threshold == "0":
		return nil, errLogsAll
	}
	if n.last, err = lastEntry(ctx, rc); err != nil {
		return nil, err
	}
	select {
	case <-stop:
		return nil, errWindowShort
	default:
	}
	if err := n.set("0", strconv.Itoa(sampleMaxLen)); err != nil {
		// It may have been set with its answer lost: put it back.
		return nil, errors.Join(fmt.Errorf("log every command: %w", err), n.set(n.threshold, n.maxLen))
	}
	return n, nil
}

// set sets the server's slow log threshold and length ("": left as is),
// with a context of its own: a setting must not stay for want of time.
func (n *nodeLog) set(threshold, maxLen string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	cmd := n.rc.B().ConfigSet().ParameterValue()
	switch {
	case threshold != "" && maxLen != "":
		return n.rc.Do(ctx, cmd.ParameterValue("slowlog-max-len", maxLen).ParameterValue("slowlog-log-slower-than", threshold).Build()).Error()
	case threshold != "":
		return n.rc.Do(ctx, cmd.ParameterValue("slowlog-log-slower-than", threshold).Build()).Error()
	case maxLen != "":
		return n.rc.Do(ctx, cmd.ParameterValue("slowlog-max-len", maxLen).Build()).Error()
	}
	return nil
}

// read is the sample's entries of the server's log, by command, and how
// many top-level commands they are.
func (n *nodeLog) read() (map[string]int64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	entries, err := n.rc.Do(ctx, n.rc.B().SlowlogGet().Count(sampleMaxLen).Build()).ToArray()
	if err != nil {
		return nil, 0, fmt.Errorf("read the slow log: %w", err)
	}
	us, calls := byCommand(entries, n.last)
	return us, calls, nil
}

// lastEntry is the id of the slow log's newest entry (-1: none), so that
// the sample reads only what was logged after it.
func lastEntry(ctx context.Context, rc rueidis.Client) (int64, error) {
	entries, err := rc.Do(ctx, rc.B().SlowlogGet().Count(1).Build()).ToArray()
	if err != nil {
		return 0, fmt.Errorf("read the slow log: %w", err)
	}
	if len(entries) == 0 {
		return -1, nil
	}
	e, err := entries[0].ToArray()
	if err != nil || len(e) == 0 {
		return 0, fmt.Errorf("read the slow log: an entry of %d fields (%v)", len(e), err)
	}
	return e[0].AsInt64()
}

// byCommand sums SLOWLOG GET's entries after id last by top-level
// command: an FCALL by its script's name, any other command by its
// lower-case name; the sample's own CONFIG and SLOWLOG are left out.
// Each entry is id, time, duration (us), arguments, client address, name.
// calls is how many top-level commands were summed.
func byCommand(entries []rueidis.RedisMessage, last int64) (us map[string]int64, calls int64) {
	names := scriptNames()
	us = map[string]int64{}
	for _, m := range entries {
		e, err := m.ToArray()
		if err != nil || len(e) < 5 {
			continue
		}
		id, _ := e[0].AsInt64()
		dur, _ := e[2].AsInt64()
		args, _ := e[3].AsStrSlice()
		client, _ := e[4].ToString()
		if id <= last || client == inScript || len(args) == 0 {
			continue
		}
		cmd := strings.ToLower(args[0])
		switch {
		case cmd == "config" || cmd == "slowlog":
			continue
		case cmd == "fcall" && len(args) > 1:
			if n, ok := names[args[1]]; ok {
				cmd = n
			} else {
				cmd = "script " + args[1][:min(8, len(args[1]))]
			}
		}
		us[cmd] += dur
		calls++
	}
	return us, calls
}

// Shares is a sample's time by command, the largest first, as percent
// of the sample's whole ("order_reserve 48%, order_confirm 41%, set 3%");
// commands under half a percent are left out.
func Shares(us map[string]int64) string {
	var total int64
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range us {
		total += v
		all = append(all, kv{k, v})
	}
	if total <= 0 {
		return ""
	}
	slices.SortFunc(all, func(a, b kv) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for _, e := range all {
		pct := float64(e.v) * 100 / float64(total)
		if pct < 0.5 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", e.k, pct))
	}
	return strings.Join(parts, ", ")
}
