// Package durable measures what Redis durability costs a bench run: what a
// Redis the bench owns did over the run (commands and writes per unit of
// work, by command; AOF rewrites; fsync stalls its latency monitor saw),
// and how long an fsync takes on the disk of its directory. With
// appendfsync always every event loop that wrote waits for an fsync before
// it answers, so writes per unit and the disk's fsync time are where the
// cost comes from. For a primary with replicas, how far they stayed
// behind it over the run (replica.go).
package durable

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/redismem"
)

// Snapshot is a Redis's counters at one moment.
type Snapshot struct {
	// calls counts each command's calls ("hset", "xinfo|groups"), those
	// made by scripts included.
	calls       map[string]int64
	commands    int64 // total_commands_processed: those inside scripts included
	aofRewrites int64
}

// Take reads the counters of INFO commandstats, stats and persistence; on
// a Redis Cluster, every master's, summed (a replica's would count the
// writes its master sent it again).
func Take(ctx context.Context, rc rueidis.Client) (Snapshot, error) {
	if rc.Mode() != rueidis.ClientModeCluster {
		return take(ctx, rc, false)
	}
	var sum Snapshot
	for _, node := range rc.Nodes() {
		s, err := take(ctx, node, true)
		if err != nil {
			return Snapshot{}, err
		}
		sum = sum.Add(s)
	}
	return sum, nil
}

// take reads one node's counters; mastersOnly leaves a replica's out (zero).
func take(ctx context.Context, rc rueidis.Client, mastersOnly bool) (Snapshot, error) {
	sections := []string{"commandstats", "stats", "persistence"}
	if mastersOnly {
		sections = append(sections, "replication")
	}
	fields, err := redismem.Info(ctx, rc, sections...)
	if err != nil {
		return Snapshot{}, fmt.Errorf("durable: %w", err)
	}
	if mastersOnly && fields["role"] != "master" {
		return Snapshot{}, nil
	}
	return FromInfo(fields), nil
}

// FromInfo reads the counters of INFO's fields ("cmdstat_hset":
// "calls=12,usec=34,...", "total_commands_processed": "56").
func FromInfo(fields map[string]string) Snapshot {
	s := Snapshot{calls: map[string]int64{}}
	for k, v := range fields {
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			// calls=12,usec=34,...
			for _, kv := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(kv, "calls="); ok {
					s.calls[name], _ = strconv.ParseInt(n, 10, 64)
				}
			}
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "total_commands_processed":
			s.commands = n
		case "aof_rewrites":
			s.aofRewrites = n
		}
	}
	return s
}

// Sub is what happened from before to s: each counter's increase.
func (s Snapshot) Sub(before Snapshot) Snapshot {
	d := Snapshot{calls: make(map[string]int64, len(s.calls)), commands: s.commands - before.commands,
		aofRewrites: s.aofRewrites - before.aofRewrites}
	for name, n := range s.calls {
		d.calls[name] = n - before.calls[name]
	}
	return d
}

// Add sums s and o, counter by counter: the increases of several windows.
func (s Snapshot) Add(o Snapshot) Snapshot {
	sum := Snapshot{calls: make(map[string]int64, len(s.calls)+len(o.calls)), commands: s.commands + o.commands,
		aofRewrites: s.aofRewrites + o.aofRewrites}
	for name, n := range s.calls {
		sum.calls[name] += n
	}
	for name, n := range o.calls {
		sum.calls[name] += n
	}
	return sum
}

// Commands is every command counted (total_commands_processed: those inside
// scripts included).
func (s Snapshot) Commands() int64 { return s.commands }

// commandCost is one command's calls per unit of work.
type commandCost struct {
	name    string
	perUnit float64
	write   bool
}

// Cost is what a Redis did between two snapshots, per unit of work.
type Cost struct {
	CommandsPerUnit float64 // every command run, those inside scripts included
	WritesPerUnit   float64 // commands flagged write, those in scripts included
	ScriptsPerUnit  float64 // EVALSHA, EVAL, FCALL
	AOFRewrites     int64
	perCommand      []commandCost
}

// scripts are the commands that run a script; the writes inside count
// under their own names.
var scripts = map[string]bool{"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true, "fcall": true, "fcall_ro": true}

// Since is what rc did from before until now for units of work, the
// writes told by COMMAND INFO's "write" flag.
func Since(ctx context.Context, rc rueidis.Client, before Snapshot, units int64) (Cost, error) {
	after, err := Take(ctx, rc)
	if err != nil {
		return Cost{}, err
	}
	return CostOf(ctx, rc, after.Sub(before), units)
}

// CostOf is the cost of delta, what rc did (Sub of two snapshots, or a sum
// of such), for units of work; with rc nil, no command counts as a write.
func CostOf(ctx context.Context, rc rueidis.Client, delta Snapshot, units int64) (Cost, error) {
	writes := map[string]bool{}
	if rc != nil {
		var err error
		if writes, err = writeFlags(ctx, rc, called(Snapshot{}, delta)); err != nil {
			return Cost{}, err
		}
	}
	return compare(Snapshot{}, delta, units, writes), nil
}

// compare is what happened between before and after for units of work;
// writes holds the write commands.
func compare(before, after Snapshot, units int64, writes map[string]bool) Cost {
	c := Cost{AOFRewrites: after.aofRewrites - before.aofRewrites}
	if units <= 0 {
		return c
	}
	per := func(n int64) float64 { return float64(n) / float64(units) }
	c.CommandsPerUnit = per(after.commands - before.commands)
	for name, n := range after.calls {
		d := n - before.calls[name]
		if d <= 0 {
			continue
		}
		cc := commandCost{name: name, perUnit: per(d), write: writes[name]}
		c.perCommand = append(c.perCommand, cc)
		switch {
		case scripts[name]:
			c.ScriptsPerUnit += cc.perUnit
		case cc.write:
			c.WritesPerUnit += cc.perUnit
		}
	}
	sort.Slice(c.perCommand, func(i, j int) bool {
		a, b := c.perCommand[i], c.perCommand[j]
		if a.perUnit != b.perUnit {
			return a.perUnit > b.perUnit
		}
		return a.name < b.name
	})
	return c
}

// Breakdown lists the commands of c worth a line, "hset 2.00 (w)", the
// writes marked: those at least min per unit.
func (c Cost) Breakdown(min float64) string {
	var parts []string
	for _, cc := range c.perCommand {
		if cc.perUnit < min {
			continue
		}
		p := cc.name + " " + strconv.FormatFloat(cc.perUnit, 'f', 2, 64)
		if cc.write {
			p += " (w)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// writeFlags asks Redis (COMMAND INFO) which of cmds are write commands.
func writeFlags(ctx context.Context, rc rueidis.Client, cmds []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(cmds) == 0 {
		return out, nil
	}
	infos, err := rc.Do(ctx, rc.B().CommandInfo().CommandName(cmds...).Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("durable: command info: %w", err)
	}
	for i, info := range infos {
		if i >= len(cmds) {
			break
		}
		fields, err := info.ToArray()
		if err != nil || len(fields) < 3 { // unknown command: nil
			continue
		}
		flags, _ := fields[2].AsStrSlice()
		for _, f := range flags {
			if f == "write" {
				out[cmds[i]] = true
			}
		}
	}
	return out, nil
}

// called are the commands called between before and after.
func called(before, after Snapshot) []string {
	var out []string
	for name, n := range after.calls {
		if n > before.calls[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// FsyncStall is the largest fsync stall Redis's latency monitor recorded
// ("aof-fsync-always", with latency-monitor-threshold set), in ms, and the
// number of seconds it recorded one in; zeros when none.
func FsyncStall(ctx context.Context, rc rueidis.Client) (maxMs int64, seconds int, err error) {
	hist, err := rc.Do(ctx, rc.B().LatencyHistory().Event("aof-fsync-always").Build()).ToArray()
	if err != nil {
		return 0, 0, fmt.Errorf("durable: latency history: %w", err)
	}
	for _, h := range hist {
		p, err := h.AsIntSlice() // [unix time, ms]
		if err != nil || len(p) < 2 {
			continue
		}
		seconds++
		maxMs = max(maxMs, p[1])
	}
	return maxMs, seconds, nil
}
