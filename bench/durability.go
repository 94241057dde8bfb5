package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/durable"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
)

// durableConf is the shipped production Redis settings, in the module.
const durableConf = "deploy/redis.conf"

// targetDurableShare is the least share of the throughput without
// persistence the durable run must keep.
const targetDurableShare = 0.85

// errNotLocal: with -target the bench starts no ticketd of its own.
var errNotLocal = errors.New("-target measures a running deployment, whose Redis persistence is its own (" + durableConf + " shows the durable settings)")

// startDurable starts a redis-server with deploy/redis.conf on a free
// loopback port and a temporary directory, and a ticketd of its own on it
// (fresh database and key prefix). Every clean-up step goes on stack,
// which the caller closes right after the run, also after Ctrl-C.
func (d *deployment) startDurable(ctx context.Context, stack *procs.Stack) (*deployment, *procs.Redis, error) {
	if d.ticketdBin == "" {
		return nil, nil, errNotLocal
	}
	fmt.Fprintf(os.Stderr, "bench: starting redis-server with %s (AOF, appendfsync always)\n", durableConf)
	// The latency monitor at 1 ms shows the fsync stalls of the run.
	rs, err := procs.StartRedis(ctx, filepath.Join(d.root, durableConf), filepath.Join(d.outDir, "redis-durable-"+d.stamp+".log"),
		"--latency-monitor-threshold", "1")
	if err != nil {
		return nil, nil, err
	}
	stack.Push("stop the durable redis-server and remove its files", func(context.Context) error { return rs.Stop(30 * time.Second) })
	dd := &deployment{stamp: d.stamp, drain: d.drain, allow: d.allow, root: d.root, tmp: d.tmp, ticketdBin: d.ticketdBin,
		ticketdEnv: d.ticketdEnv, dbServer: d.dbServer, outDir: d.outDir, redisURL: rs.URL()}
	rc, err := connectRedis(ctx, dd.redisURL)
	if err != nil {
		return nil, nil, err
	}
	stack.Push("close the durable redis client", func(context.Context) error { rc.Close(); return nil })
	dd.redis = rc
	if err := dd.startTicketd(ctx, stack, "ticketd-durable", false); err != nil {
		return nil, nil, err
	}
	return dd, rs, nil
}

// runDurable measures flash on a deployment of its own whose Redis uses
// the shipped durable settings, in turns with flash on the bench's
// ticketd (Redis without persistence), then stops the durable deployment.
// The durable run carries what its Redis did per pair and this disk's
// fsync time. skip, when not empty, says why it did not run.
func runDurable(ctx context.Context, d *deployment, o scenario.Options) (runs []report.Run, skip string) {
	name := scenario.FlashDurable.Name()
	if d.cluster != nil {
		// Its durable side is one redis-server: against a cluster the
		// comparison would measure the cluster, not persistence.
		return nil, name + " not run: -redis-cluster (it compares one Redis with and without persistence)"
	}
	stack := &procs.Stack{Log: os.Stderr}
	defer stack.Close()
	dd, rs, err := d.startDurable(ctx, stack)
	switch {
	case errors.Is(err, procs.ErrNoRedisServer), errors.Is(err, errNotLocal):
		return nil, name + " not run: " + err.Error()
	case err != nil:
		return []report.Run{{Scenario: name, Target: "ticketd", Integrity: failed(name, err)}}, ""
	}
	// The disk's fsync, probed before the load: it bounds how fast an
	// event loop that wrote can answer.
	p50, p99, fsyncErr := durable.FsyncTime(rs.Dir, 200)
	before, statErr := durable.Take(ctx, dd.redis)
	durEnv, plainEnv := dd.env(), d.env()
	if m := pairMeter(ctx, d, dd, rs.PID()); m != nil {
		durEnv.CPU, plainEnv.CPU = m, m
	}
	durOut, plainOut, err := scenario.FlashDurable.Pair(ctx, durEnv, plainEnv, o)
	if err != nil {
		return []report.Run{{Scenario: name, Target: "ticketd", Integrity: failed(name, err)}}, ""
	}
	r := toRun(name, "ticketd", durOut)
	plain := toRun(scenario.FlashNonDurable, "ticketd", plainOut)
	plain.Notes = append(plain.Notes, "flash on the bench's ticketd and its Redis without persistence, in turns with "+name+
		": the run "+name+" is compared with")
	r.Notes = append(r.Notes, "ticketd on a redis-server of its own started with "+durableConf+
		" (AOF, appendfsync always, RDB preamble, noeviction) in a temporary directory on this machine's disk; Redis log "+rs.Log)
	if fsyncErr == nil {
		r.Figures = append(r.Figures,
			report.Figure{Name: "fsync of a 4 KiB append on the durable Redis's disk, p50 (before the run)", Value: ms(p50), Unit: "ms"},
			report.Figure{Name: "fsync of a 4 KiB append on the durable Redis's disk, p99 (before the run)", Value: ms(p99), Unit: "ms"})
	}
	if statErr == nil {
		statErr = addRedisCost(ctx, &r, dd, rs.Dir, before)
	}
	if statErr != nil {
		r.Notes = append(r.Notes, "the durable Redis's counters could not be read: "+statErr.Error())
	}
	costOfDurability(&r, &plain)
	return []report.Run{r, plain}, ""
}

// pairMeter meters the processes of both deployments in every slice of
// the durable measurement, so that what one side leaves running into the
// other's slice (its sync worker draining, an AOF rewrite: the durable
// Redis, durRedisPID, counts with its ended children) shows in that
// slice's table. nil off Linux.
func pairMeter(ctx context.Context, plain, dur *deployment, durRedisPID int) *cpuuse.Meter {
	if !cpuuse.Supported() {
		return nil
	}
	srcs := []cpuuse.Source{cpuuse.Process("ticketd", plain.ticketdPID), cpuuse.Process("ticketd-durable", dur.ticketdPID)}
	if pid, ok := localRedisPID(ctx, plain.redis, plain.redisURL); ok {
		srcs = append(srcs, cpuuse.Process("redis", pid))
	}
	srcs = append(srcs, cpuuse.ProcessAndChildren("redis-durable (and its AOF rewrites)", durRedisPID))
	if isLocalPostgres(plain.dbServer) {
		srcs = append(srcs, cpuuse.Command("postgres", "postgres"))
	}
	return cpuuse.New(append(srcs, cpuuse.Self("load generator"))...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// addRedisCost gives r what the durable Redis did since before, per pair
// (the reserve, the confirm and the sync worker's acknowledgements
// together), and what its AOF in dir holds per paid pair.
func addRedisCost(ctx context.Context, r *report.Run, dd *deployment, dir string, before durable.Snapshot) error {
	c, err := durable.Since(ctx, dd.redis, before, r.Units)
	if err != nil {
		return err
	}
	r.Figures = append(r.Figures,
		report.Figure{Name: "durable Redis: commands per pair (those inside scripts included; reserve, confirm, sync worker)", Value: c.CommandsPerUnit},
		report.Figure{Name: "durable Redis: scripts per pair", Value: c.ScriptsPerUnit},
		report.Figure{Name: "durable Redis: write commands per pair (those inside scripts included)", Value: c.WritesPerUnit},
		report.Figure{Name: "durable Redis: AOF rewrites during the run", Value: float64(c.AOFRewrites)})
	if maxMs, secs, err := durable.FsyncStall(ctx, dd.redis); err == nil {
		r.Figures = append(r.Figures,
			report.Figure{Name: "durable Redis: largest fsync stall (latency monitor, aof-fsync-always)", Value: float64(maxMs), Unit: "ms"},
			report.Figure{Name: "durable Redis: seconds with an fsync stall of 1 ms or more", Value: float64(secs), Unit: "s"})
	}
	if a, err := durable.ReadAOF(dir); err == nil && a.Calls["xadd"] > 0 {
		// One XADD per paid pair: the pairs of the AOF since its last rewrite.
		paid := a.Calls["xadd"]
		r.Figures = append(r.Figures, report.Figure{Name: "durable Redis: AOF bytes per paid pair (since its last rewrite)",
			Value: float64(a.Total) / float64(paid), Unit: "B"})
		r.Notes = append(r.Notes, "durable Redis, AOF bytes per paid pair by command (calls per pair; every key carries the bench's "+
			strconv.Itoa(len(dd.prefix))+"-byte key prefix): "+a.Breakdown(paid))
	}
	r.Notes = append(r.Notes, "durable Redis, calls per pair by command ((w): write, waits for the fsync): "+c.Breakdown(0.005))
	return nil
}

// costOfDurability gives a complete flash-durable run its comparison with
// the flash run it alternated with (Redis without persistence).
func costOfDurability(dur, plain *report.Run) {
	if dur.Interrupted || len(dur.Ops) == 0 {
		return
	}
	if plain.Interrupted || len(plain.Ops) == 0 {
		plain = nil
	}
	if dur.VsNonDurable = dur.Against(plain); dur.VsNonDurable == nil {
		dur.Notes = append(dur.Notes, "no cost of durability: its run without persistence ("+scenario.FlashNonDurable+") did not complete")
	}
}

// durabilityTarget judges the durable run against the one without
// persistence.
func durabilityTarget(dur *report.Run) (report.Target, bool, bool) {
	t := report.Target{Name: "flash-durable: Redis with " + durableConf + " (AOF, appendfsync always) against Redis without persistence, measured in turns",
		Want: ">= " + strconv.Itoa(int(targetDurableShare*100)) + "% of the throughput (pairs/s) without persistence, integrity passed"}
	if dur == nil || dur.VsNonDurable == nil {
		return t, false, false
	}
	v := dur.VsNonDurable
	t.Got = fmt.Sprintf("%.0f%% (%s vs %s pairs/s); p99 %s %s vs %s (%.2fx); integrity %s", 100*v.ThroughputRatio,
		thousands(dur.ThroughputPerS), thousands(v.ThroughputPerS), dur.LatencyOp, msText(dur.P99Ms), msText(v.P99Ms), v.P99Ratio,
		okWord(dur.IntegrityOK))
	return t, v.ThroughputRatio >= targetDurableShare && dur.IntegrityOK, true
}
