package redisuse

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/lua"
)

// Where Redis spends its time, by script: INFO commandstats adds every
// EVALSHA up in one line, whatever script it ran. So a window is sampled:
// a second after it begins, the slow log logs every command for a fifth of
// a second (slowlog-log-slower-than 0), and each top-level command's
// logged execution time is summed by command, an EVALSHA by the name of
// the ticketd script it ran. Commands a script calls are in the log too;
// they are left out (their time is inside their script's). The slow log's
// settings are put back after. Logging every command costs Redis more CPU
// while it lasts (each entry copies its arguments), in 0.2 s of the run:
// 1% of a 20 s flash run, 3% of a 6 s one.
const (
	sampleAfter  = time.Second
	sampleFor    = 200 * time.Millisecond
	sampleMaxLen = 50000
	// inScript is the client a command a script called is logged with.
	inScript = "?:0"
)

// errWindowShort: the window ended before its sample began.
var errWindowShort = errors.New("the window ended before the sample")

// scriptNames maps the SHA-1 of each of ticketd's scripts, as EVALSHA
// names it, to the script's name.
var scriptNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	files, _ := fs.Glob(lua.Files, "*.lua")
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		if src, err := eval.Source(name); err == nil {
			sum := sha1.Sum(src)
			names[hex.EncodeToString(sum[:])] = name
		}
	}
	return names
})

// sampler samples one window's script time in the background.
type sampler struct {
	stop chan struct{}
	done chan struct{}
	us   map[string]int64 // execution time by command, microseconds
	err  error
}

// startSample begins sampling rc's Redis (each node of a Cluster) once
// sampleAfter has passed, unless finish comes first.
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
		s.us, s.err = sampleNodes(rc, s.stop)
	}()
	return s
}

// finish ends the sample (early, when the window ends first) and returns
// what it logged.
func (s *sampler) finish() (map[string]int64, error) {
	close(s.stop)
	<-s.done
	return s.us, s.err
}

func sampleNodes(rc rueidis.Client, stop <-chan struct{}) (map[string]int64, error) {
	nodes := rc.Nodes()
	type got struct {
		us  map[string]int64
		err error
	}
	out := make(chan got, len(nodes))
	for _, n := range nodes {
		go func() {
			us, err := sample(n, stop)
			out <- got{us, err}
		}()
	}
	sum := map[string]int64{}
	var errs error
	for range nodes {
		g := <-out
		errs = errors.Join(errs, g.err)
		for k, v := range g.us {
			sum[k] += v
		}
	}
	return sum, errs
}

// sample logs every command of one Redis for sampleFor (or until stop)
// and returns the top-level commands' execution time by command.
func sample(rc rueidis.Client, stop <-chan struct{}) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	old, err := rc.Do(ctx, rc.B().ConfigGet().Parameter("slowlog-*").Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("slow log settings: %w", err)
	}
	threshold, maxLen := old["slowlog-log-slower-than"], old["slowlog-max-len"]
	if threshold == "" || maxLen == "" {
		return nil, fmt.Errorf("slow log settings: CONFIG GET answered %v", old)
	}
	last, err := lastEntry(ctx, rc)
	if err != nil {
		return nil, err
	}
	set := func(ctx context.Context, threshold, maxLen string) error {
		return rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("slowlog-max-len", maxLen).
			ParameterValue("slowlog-log-slower-than", threshold).Build()).Error()
	}
	if err := set(ctx, "0", strconv.Itoa(sampleMaxLen)); err != nil {
		return nil, fmt.Errorf("log every command: %w", err)
	}
	t := time.NewTimer(sampleFor)
	select {
	case <-stop:
	case <-t.C:
	}
	t.Stop()
	// Put back with a context of its own: the settings must not stay.
	rctx, rcancel := context.WithTimeout(context.Background(), readTimeout)
	defer rcancel()
	if err := set(rctx, threshold, maxLen); err != nil {
		return nil, fmt.Errorf("put the slow log's settings back (slowlog-log-slower-than %s, slowlog-max-len %s): %w", threshold, maxLen, err)
	}
	entries, err := rc.Do(rctx, rc.B().SlowlogGet().Count(sampleMaxLen).Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("read the slow log: %w", err)
	}
	return byCommand(entries, last), nil
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
// command: an EVALSHA by its script's name, any other command by its
// lower-case name; the sample's own CONFIG and SLOWLOG are left out.
// Each entry is id, time, duration (us), arguments, client address, name.
func byCommand(entries []rueidis.RedisMessage, last int64) map[string]int64 {
	names := scriptNames()
	us := map[string]int64{}
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
		case cmd == "evalsha" && len(args) > 1:
			if n, ok := names[strings.ToLower(args[1])]; ok {
				cmd = n
			} else {
				cmd = "script " + args[1][:min(8, len(args[1]))]
			}
		}
		us[cmd] += dur
	}
	return us
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
