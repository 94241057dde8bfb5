package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

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

// notLocal is the error of a scenario that starts a ticketd of its own
// when the bench measures a running deployment (-target), which starts
// none; it says what of the deployment is its own.
type notLocal string

func (e notLocal) Error() string { return "-target measures a running deployment, whose " + string(e) }

// ownRedis starts a redis-server of the bench's own with deploy/redis.conf
// and then args, on a free loopback port and a temporary directory, its
// log bench/out/<name>-<stamp>.log; with primary set, a replica of it,
// returned once its link is up. Stopping it and removing its files goes
// on stack.
func (d *deployment) ownRedis(ctx context.Context, stack *procs.Stack, name string, primary *procs.Redis, args ...string) (*procs.Redis, error) {
	conf, logPath := filepath.Join(d.root, durableConf), filepath.Join(d.outDir, name+"-"+d.stamp+".log")
	var rs *procs.Redis
	var err error
	if primary == nil {
		rs, err = procs.StartRedis(ctx, conf, logPath, args...)
	} else {
		rs, err = procs.StartReplica(ctx, primary, conf, logPath, args...)
	}
	if err != nil {
		return nil, err
	}
	stack.Push("stop "+name+" and remove its files", func(context.Context) error { return rs.Stop(30 * time.Second) })
	return rs, nil
}

// onOwnRedis starts a ticketd of its own named name on rs (fresh database
// and key prefix), env added to its environment after -ticketd-env's (so
// env wins). Every clean-up step goes on stack.
func (d *deployment) onOwnRedis(ctx context.Context, stack *procs.Stack, name string, rs *procs.Redis, env ...string) (*deployment, error) {
	dd := &deployment{stamp: d.stamp, drain: d.drain, allow: d.allow, root: d.root, tmp: d.tmp, ticketdBin: d.ticketdBin,
		ticketdEnv: append(slices.Clip(d.ticketdEnv), env...), dbServer: d.dbServer, outDir: d.outDir, redisURL: rs.URL()}
	rc, err := connectRedis(ctx, dd.redisURL)
	if err != nil {
		return nil, err
	}
	stack.Push("close "+name+"'s redis client", func(context.Context) error { rc.Close(); return nil })
	dd.redis = rc
	if err := dd.startTicketd(ctx, stack, name, false); err != nil {
		return nil, err
	}
	return dd, nil
}

// startDurable starts a redis-server with deploy/redis.conf and a ticketd
// of its own on it, named redis-<side> and ticketd-<side>, env added to
// the ticketd's environment. Every clean-up step goes on stack, which the
// caller closes right after the run, also after Ctrl-C.
func (d *deployment) startDurable(ctx context.Context, stack *procs.Stack, side string, env ...string) (*deployment, *procs.Redis, error) {
	if d.ticketdBin == "" {
		return nil, nil, notLocal("Redis persistence is its own (" + durableConf + " shows the durable settings)")
	}
	fmt.Fprintf(os.Stderr, "bench: starting redis-server with %s (AOF, appendfsync always)\n", durableConf)
	// The latency monitor at 1 ms shows the fsync stalls of the run.
	rs, err := d.ownRedis(ctx, stack, "redis-"+side, nil, "--latency-monitor-threshold", "1")
	if err != nil {
		return nil, nil, err
	}
	dd, err := d.onOwnRedis(ctx, stack, "ticketd-"+side, rs, env...)
	return dd, rs, err
}

// notStarted is what a scenario in turns reports when its deployments did
// not start: not run without redis-server or with -target, a failed run
// otherwise.
func notStarted(name string, err error) (runs []report.Run, skip string) {
	if nl := notLocal(""); errors.Is(err, procs.ErrNoRedisServer) || errors.As(err, &nl) {
		return nil, name + " not run: " + err.Error()
	}
	return failedRun(name, err), ""
}

// failedRun is the run of a scenario that could not complete.
func failedRun(name string, err error) []report.Run {
	return []report.Run{{Scenario: name, Target: "ticketd", Integrity: failed(name, err)}}
}

// measureInTurns runs sc on measured and base in turns, both metered by
// meter in every slice (nil: not metered), and returns each side's run.
func measureInTurns(ctx context.Context, sc *scenario.InTurns, measured, base *deployment, meter *cpuuse.Meter, o scenario.Options) (r, b report.Run, err error) {
	mEnv, bEnv := measured.env(), base.env()
	if meter != nil {
		mEnv.CPU, bEnv.CPU = meter, meter
	}
	measured.use.Take() // what ran before is not this run's
	base.use.Take()
	mOut, bOut, err := sc.Pair(ctx, mEnv, bEnv, o)
	if err != nil {
		return report.Run{}, report.Run{}, err
	}
	r, b = toRun(sc.Name(), "ticketd", mOut), toRun(sc.Base, "ticketd", bOut)
	measured.redisPerUnit(ctx, &r)
	base.redisPerUnit(ctx, &b)
	return r, b, nil
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
	dd, rs, err := d.startDurable(ctx, stack, "durable")
	if err != nil {
		return notStarted(name, err)
	}
	fsync := fsyncFigures(rs.Dir)
	cost := takeRedisCost(ctx, "durable Redis", dd.redis, rs.Dir, dd.prefix)
	r, plain, err := measureInTurns(ctx, scenario.FlashDurable, dd, d, pairMeter(ctx, d, dd, rs.PID()), o)
	if err != nil {
		return failedRun(name, err), ""
	}
	plain.Notes = append(plain.Notes, "flash on the bench's ticketd and its Redis without persistence, in turns with "+name+
		": the run "+name+" is compared with")
	r.Notes = append(r.Notes, "ticketd on a redis-server of its own started with "+durableConf+
		" (AOF, appendfsync always, RDB preamble, noeviction) in a temporary directory on this machine's disk; Redis log "+rs.Log)
	r.Figures = append(r.Figures, fsync...)
	cost.addTo(ctx, &r)
	costOfDurability(&r, &plain)
	return []report.Run{r, plain}, ""
}

// fsyncFigures probes the fsync of the disk of dir (a Redis's own) before
// the load: it bounds how fast an event loop that wrote can answer. None
// when the probe failed.
func fsyncFigures(dir string) []report.Figure {
	p50, p99, err := durable.FsyncTime(dir, 200)
	if err != nil {
		return nil
	}
	return []report.Figure{
		{Name: "fsync of a 4 KiB append on the durable Redis's disk, p50 (before the run)", Value: ms(p50), Unit: "ms"},
		{Name: "fsync of a 4 KiB append on the durable Redis's disk, p99 (before the run)", Value: ms(p99), Unit: "ms"}}
}

// pairMeter meters the processes of both deployments in every slice of
// the durable measurement, so that what one side leaves running into the
// other's slice (its sync worker draining, an AOF rewrite: the durable
// Redis, durRedisPID, counts with its ended children) shows in that
// slice's table. nil off Linux.
func pairMeter(ctx context.Context, plain, dur *deployment, durRedisPID int) *cpuuse.Meter {
	srcs := []cpuuse.Source{cpuuse.Process("ticketd", plain.ticketdPID), cpuuse.Process("ticketd-durable", dur.ticketdPID)}
	if pid, ok := localRedisPID(ctx, plain.redis, plain.redisURL); ok {
		srcs = append(srcs, cpuuse.Process("redis", pid))
	}
	return meterOf(plain.dbServer, append(srcs, cpuuse.ProcessAndChildren("redis-durable (and its AOF rewrites)", durRedisPID))...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// redisCost is what a Redis the bench started does over a measurement,
// from the counters taken before it.
type redisCost struct {
	label     string // names the Redis in figures and notes: "durable Redis"
	rc        rueidis.Client
	dir       string // its directory, with its AOF
	prefixLen int    // of the key prefix of the ticketd on it
	before    durable.Snapshot
	err       error
}

// takeRedisCost takes rc's counters before a measurement.
func takeRedisCost(ctx context.Context, label string, rc rueidis.Client, dir, prefix string) *redisCost {
	c := &redisCost{label: label, rc: rc, dir: dir, prefixLen: len(prefix)}
	c.before, c.err = durable.Take(ctx, rc)
	return c
}

// addTo gives r what the Redis did since its counters were taken, per pair
// (the reserve, the confirm and the sync worker's acknowledgements
// together), and what its AOF holds per paid pair; a note when its
// counters could not be read.
func (c *redisCost) addTo(ctx context.Context, r *report.Run) {
	err := c.err
	if err == nil {
		err = c.add(ctx, r)
	}
	if err != nil {
		r.Notes = append(r.Notes, "the "+c.label+"'s counters could not be read: "+err.Error())
	}
}

func (c *redisCost) add(ctx context.Context, r *report.Run) error {
	cost, err := durable.Since(ctx, c.rc, c.before, r.Units)
	if err != nil {
		return err
	}
	r.Figures = append(r.Figures,
		report.Figure{Name: c.label + ": commands per pair (those inside scripts included; reserve, confirm, sync worker)", Value: cost.CommandsPerUnit},
		report.Figure{Name: c.label + ": scripts per pair", Value: cost.ScriptsPerUnit},
		report.Figure{Name: c.label + ": write commands per pair (those inside scripts included)", Value: cost.WritesPerUnit},
		report.Figure{Name: c.label + ": AOF rewrites during the run", Value: float64(cost.AOFRewrites)})
	if maxMs, secs, err := durable.FsyncStall(ctx, c.rc); err == nil {
		r.Figures = append(r.Figures,
			report.Figure{Name: c.label + ": largest fsync stall (latency monitor, aof-fsync-always)", Value: float64(maxMs), Unit: "ms"},
			report.Figure{Name: c.label + ": seconds with an fsync stall of 1 ms or more", Value: float64(secs), Unit: "s"})
	}
	if a, err := durable.ReadAOF(c.dir); err == nil && a.Calls["xadd"] > 0 {
		// One XADD per paid pair: the pairs of the AOF since its last rewrite.
		paid := a.Calls["xadd"]
		r.Figures = append(r.Figures, report.Figure{Name: c.label + ": AOF bytes per paid pair (since its last rewrite)",
			Value: float64(a.Total) / float64(paid), Unit: "B"})
		r.Notes = append(r.Notes, c.label+", AOF bytes per paid pair by command (calls per pair; every key carries the bench's "+
			strconv.Itoa(c.prefixLen)+"-byte key prefix): "+a.Breakdown(paid))
	}
	r.Notes = append(r.Notes, c.label+", calls per pair by command ((w): write, waits for the fsync): "+cost.Breakdown(0.005))
	return nil
}

// costOfDurability gives a complete flash-durable run its comparison with
// the flash run it alternated with (Redis without persistence).
func costOfDurability(dur, plain *report.Run) {
	dur.VsNonDurable = costAgainst(dur, plain, "cost of durability", "without persistence")
}

// costAgainst compares a complete run r with the run it was measured in
// turns with, base ("its run <baseIs>"); nil when r did not complete, and
// nil with a note saying so when base did not.
func costAgainst(r, base *report.Run, what, baseIs string) *report.Versus {
	if r.Interrupted || len(r.Ops) == 0 {
		return nil
	}
	baseName := base.Scenario
	if base.Interrupted || len(base.Ops) == 0 {
		base = nil
	}
	v := r.Against(base)
	if v == nil {
		r.Notes = append(r.Notes, "no "+what+": its run "+baseIs+" ("+baseName+") did not complete")
	}
	return v
}

// durabilityTarget judges the durable run against the one without
// persistence: it keeps at least share of its throughput.
func durabilityTarget(dur *report.Run, share float64) (report.Target, verdict) {
	t := report.Target{Name: "flash-durable: Redis with " + durableConf + " (AOF, appendfsync always) against Redis without persistence, measured in turns",
		Want: ">= " + strconv.Itoa(int(math.Round(share*100))) + "% of the throughput (pairs/s) without persistence, integrity passed"}
	if dur == nil {
		return t, verdict{}
	}
	return turnsTarget(t, dur, dur.VsNonDurable, share)
}

// turnsTarget judges run r against v, the run it was measured in turns
// with: it keeps at least share of v's throughput (sound when its
// integrity passed). Not measured without both.
func turnsTarget(t report.Target, r *report.Run, v *report.Versus, share float64) (report.Target, verdict) {
	if r == nil || v == nil {
		return t, verdict{}
	}
	t.Got = fmt.Sprintf("%.0f%% (%s vs %s pairs/s); p99 %s %s vs %s (%.2fx); integrity %s", 100*v.ThroughputRatio,
		thousands(r.ThroughputPerS), thousands(v.ThroughputPerS), r.LatencyOp, msText(r.P99Ms), msText(v.P99Ms), v.P99Ratio,
		okWord(r.IntegrityOK))
	ratio := v.ThroughputRatio
	t.Value = &ratio
	return t, verdict{measured: true, ok: v.ThroughputRatio >= share, sound: r.IntegrityOK}
}
