// Package durable measures what Redis durability costs a bench run: what a
// Redis the bench owns did over the run (commands and writes per unit of
// work, by command; AOF rewrites; fsync stalls its latency monitor saw),
// and how long an fsync takes on the disk of its directory. With
// appendfsync always every event loop that wrote waits for an fsync before
// it answers, so writes per unit and the disk's fsync time are where the
// cost comes from.
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
	// Calls counts each command's calls ("hset", "xinfo|groups"), those
	// made by scripts included.
	Calls       map[string]int64
	Commands    int64 // total_commands_processed: those inside scripts included
	AOFRewrites int64
	// AOFDelayedFsync counts fsyncs Redis postponed (everysec only).
	AOFDelayedFsync int64
}

// Take reads the counters of INFO commandstats, stats and persistence.
func Take(ctx context.Context, rc rueidis.Client) (Snapshot, error) {
	fields, err := redismem.Info(ctx, rc, "commandstats", "stats", "persistence")
	if err != nil {
		return Snapshot{}, fmt.Errorf("durable: %w", err)
	}
	return snapshot(fields), nil
}

// snapshot reads the counters of INFO's fields.
func snapshot(fields map[string]string) Snapshot {
	s := Snapshot{Calls: map[string]int64{}}
	for k, v := range fields {
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			// calls=12,usec=34,...
			for _, kv := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(kv, "calls="); ok {
					s.Calls[name], _ = strconv.ParseInt(n, 10, 64)
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
			s.Commands = n
		case "aof_rewrites":
			s.AOFRewrites = n
		case "aof_delayed_fsync":
			s.AOFDelayedFsync = n
		}
	}
	return s
}

// CommandCost is one command's calls per unit of work.
type CommandCost struct {
	Name    string
	PerUnit float64
	Write   bool
}

// Cost is what a Redis did between two snapshots, per unit of work.
type Cost struct {
	Units           int64
	CommandsPerUnit float64 // every command run, those inside scripts included
	WritesPerUnit   float64 // commands flagged write, those in scripts included
	ScriptsPerUnit  float64 // EVALSHA, EVAL, FCALL
	PerCommand      []CommandCost
	AOFRewrites     int64
	AOFDelayedFsync int64
}

// scripts are the commands that run a script; the writes inside count
// under their own names.
var scripts = map[string]bool{"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true, "fcall": true, "fcall_ro": true}

// Compare is what happened between before and after for units of work;
// isWrite tells a write command (COMMAND INFO's "write" flag).
func Compare(before, after Snapshot, units int64, isWrite func(cmd string) bool) Cost {
	c := Cost{Units: units, AOFRewrites: after.AOFRewrites - before.AOFRewrites,
		AOFDelayedFsync: after.AOFDelayedFsync - before.AOFDelayedFsync}
	if units <= 0 {
		return c
	}
	per := func(n int64) float64 { return float64(n) / float64(units) }
	c.CommandsPerUnit = per(after.Commands - before.Commands)
	for name, n := range after.Calls {
		d := n - before.Calls[name]
		if d <= 0 {
			continue
		}
		cc := CommandCost{Name: name, PerUnit: per(d), Write: isWrite(name)}
		c.PerCommand = append(c.PerCommand, cc)
		switch {
		case scripts[name]:
			c.ScriptsPerUnit += cc.PerUnit
		case cc.Write:
			c.WritesPerUnit += cc.PerUnit
		}
	}
	sort.Slice(c.PerCommand, func(i, j int) bool {
		a, b := c.PerCommand[i], c.PerCommand[j]
		if a.PerUnit != b.PerUnit {
			return a.PerUnit > b.PerUnit
		}
		return a.Name < b.Name
	})
	return c
}

// Breakdown lists the commands of c worth a line, "hset 2.00 (w)", the
// writes marked: those at least min per unit.
func (c Cost) Breakdown(min float64) string {
	var parts []string
	for _, cc := range c.PerCommand {
		if cc.PerUnit < min {
			continue
		}
		p := cc.Name + " " + strconv.FormatFloat(cc.PerUnit, 'f', 2, 64)
		if cc.Write {
			p += " (w)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// WriteFlags asks Redis (COMMAND INFO) which of cmds are write commands.
func WriteFlags(ctx context.Context, rc rueidis.Client, cmds []string) (map[string]bool, error) {
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

// Names are the commands called between before and after.
func Names(before, after Snapshot) []string {
	var out []string
	for name, n := range after.Calls {
		if n > before.Calls[name] {
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
