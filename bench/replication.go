package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/durable"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
)

// replicaConf is the shipped replication settings, included after
// durableConf on every node of a primary with replicas.
const replicaConf = "deploy/redis-replica.conf"

// targetReplicatedShare is the least share of the throughput of the same
// durable Redis without a replica the run that waits for one must keep
// on the 2-core bench machine: the replica's own CPU there (about a tenth
// of a pair's) and about as much again for the WAIT (docs/decisions.md,
// "The cost of waiting for a replica").
const targetReplicatedShare = 0.80

// figWaitTimeouts is a figure of flash-replicated its target reads.
const figWaitTimeouts = "payments answered 503 for want of the replica (ticketd_redis_wait_timeouts_total over the run)"

// The CPU rows of flash-replicated's processes.
const (
	replicatedRow   = "ticketd-replicated"
	primaryRow      = "redis-primary (and its forks)"
	replicaRow      = "redis-replica (and its AOF rewrites)"
	unreplicatedRow = "ticketd-unreplicated"
	durableRedisRow = "redis-unreplicated (and its AOF rewrites)"
)

// cpuRole is a role's CPU row on the measured side of a measurement in
// turns and on the side it is compared with ("" when that has none).
type cpuRole struct{ role, measured, base string }

// replicatedRoles pair flash-replicated's rows with flash-unreplicated's.
var replicatedRoles = []cpuRole{
	{"ticketd", replicatedRow, unreplicatedRow},
	{"Redis (primary)", primaryRow, durableRedisRow},
	{"the replica", replicaRow, ""},
	{"Postgres", "postgres", "postgres"},
	{"the load generator", "load generator", "load generator"},
	{"the kernel's interrupts", cpuuse.Interrupts, cpuuse.Interrupts},
}

// replicaSampling is how often the primary's INFO replication is read
// during the run.
const replicaSampling = 500 * time.Millisecond

// startReplicated starts a redis-server primary and one replica of it
// (--replicaof), each with deploy/redis.conf and deploy/redis-replica.conf
// as shipped, and a ticketd of its own on the primary that waits for the
// replica after every payment (TICKETD_REDIS_WAIT_REPLICAS=1). Every
// clean-up step goes on stack.
func (d *deployment) startReplicated(ctx context.Context, stack *procs.Stack) (rd *deployment, primary, replica *procs.Redis, err error) {
	if d.ticketdBin == "" {
		return nil, nil, nil, notLocal("Redis replicas and TICKETD_REDIS_WAIT_REPLICAS are its own (" + replicaConf + " shows the replica settings)")
	}
	fmt.Fprintf(os.Stderr, "bench: starting a redis-server primary and a replica with %s and %s, and ticketd with TICKETD_REDIS_WAIT_REPLICAS=1\n",
		durableConf, replicaConf)
	// An include after --dir is read from that directory: its path must be
	// absolute. The primary refuses writes until the replica is linked
	// (min-replicas-to-write), so ticketd starts after it.
	include := []string{"--include", filepath.Join(d.root, replicaConf), "--latency-monitor-threshold", "1"}
	if primary, err = d.ownRedis(ctx, stack, "redis-primary", nil, include...); err != nil {
		return nil, nil, nil, err
	}
	if replica, err = d.ownRedis(ctx, stack, "redis-replica", primary, include...); err != nil {
		return nil, nil, nil, err
	}
	rd, err = d.onOwnRedis(ctx, stack, "ticketd-replicated", primary, "TICKETD_REDIS_WAIT_REPLICAS=1")
	return rd, primary, replica, err
}

// runReplicated measures flash on a ticketd that waits for a replica after
// every payment, its Redis a durable primary with one replica, in turns
// with flash on flash-durable's deployment (the same durable Redis
// without a replica, no WAIT), then stops both. The replicated run
// carries the payments refused for want of the replica, how far the
// replica stayed behind, and what the primary and the replica did per
// pair. skip, when not empty, says why it did not run.
func runReplicated(ctx context.Context, d *deployment, o scenario.Options) (runs []report.Run, skip string) {
	sc := scenario.FlashReplicated
	name := sc.Name()
	if d.cluster != nil {
		// It would not measure the cluster asked for: on a cluster WAIT
		// waits for the replicas of each event's master, and the
		// cluster the bench starts has none.
		return nil, name + " not run: -redis-cluster (it measures one durable primary and a replica of its own, not the cluster)"
	}
	stack := &procs.Stack{Log: os.Stderr}
	defer stack.Close()
	rd, primary, replica, err := d.startReplicated(ctx, stack)
	if err != nil {
		return notStarted(name, err)
	}
	ud, urs, err := d.startDurable(ctx, stack, "unreplicated", "TICKETD_REDIS_WAIT_REPLICAS=0")
	if err != nil {
		return notStarted(name, err)
	}
	replicaRC, err := connectRedis(ctx, replica.URL())
	if err != nil {
		return failedRun(name, err), ""
	}
	stack.Push("close the replica's redis client", func(context.Context) error { replicaRC.Close(); return nil })

	fsync := fsyncFigures(primary.Dir)
	costs := []*redisCost{takeRedisCost(ctx, "primary Redis", rd.redis, primary.Dir, rd.prefix),
		takeRedisCost(ctx, "replica", replicaRC, replica.Dir, rd.prefix)}
	baseCost := takeRedisCost(ctx, "durable Redis", ud.redis, urs.Dir, ud.prefix)
	timeouts0, timeoutsErr := rd.api.Metric(ctx, metricWaitTimeouts)
	meter := meterOf(d.dbServer, cpuuse.Process(replicatedRow, rd.ticketdPID),
		cpuuse.ProcessAndChildren(primaryRow, primary.PID()), cpuuse.ProcessAndChildren(replicaRow, replica.PID()),
		cpuuse.Process(unreplicatedRow, ud.ticketdPID), cpuuse.ProcessAndChildren(durableRedisRow, urs.PID()))
	stopWatch := durable.WatchReplication(ctx, rd.redis, replicaSampling)
	r, base, err := measureInTurns(ctx, sc, rd, ud, meter, o)
	lag := stopWatch()
	if err != nil {
		return failedRun(name, err), ""
	}

	base.Notes = append(base.Notes, "flash on a ticketd of its own on a redis-server started with "+durableConf+
		" (flash-durable's deployment: AOF, appendfsync always), no replica and no WAIT (TICKETD_REDIS_WAIT_REPLICAS=0), in turns with "+
		name+": the run "+name+" is compared with; Redis log "+urs.Log)
	r.Notes = append(r.Notes, "ticketd with TICKETD_REDIS_WAIT_REPLICAS=1 (WAIT 1 after every script that marks an order paid; "+
		waitTimeout(rd.ticketdEnv)+") on a redis-server primary started with "+durableConf+" and "+replicaConf+
		", and one replica of it started with the same two files (--replicaof), each in a temporary directory on this machine's disk; "+
		"Redis logs "+primary.Log+" and "+replica.Log,
		"what differs from "+sc.Base+" is the replica and the WAIT for it: the durable settings are the same on both sides, so the ratio is "+
			"the cost of waiting for a replica. It is not WAIT's round trip alone: the primary also feeds the replica its stream "+
			"(and checks min-replicas-to-write), and here the replica applies and fsyncs that stream on the same 2 cores as everything else "+
			"(in production it has a machine of its own); the CPU table shows its share as "+replicaRow)
	r.Figures = append(r.Figures, fsync...)
	if timeouts1, err := rd.api.Metric(ctx, metricWaitTimeouts); timeoutsErr == nil && err == nil {
		r.Figures = append(r.Figures, report.Figure{Name: figWaitTimeouts, Value: timeouts1 - timeouts0})
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("ticketd's WAIT timeouts could not be read from /metrics: %v", first(errText(timeoutsErr), errText(err))))
	}
	r.Figures = append(r.Figures, replicationFigures(lag)...)
	if lag.Err != nil {
		r.Notes = append(r.Notes, "INFO replication of the primary failed during the run: "+lag.Err.Error())
	}
	if cmp := cpuBeside(&r, &base, replicatedRoles); cmp != "" {
		r.Notes = append(r.Notes, cmp)
	}
	for _, c := range costs {
		c.addTo(ctx, &r)
	}
	baseCost.addTo(ctx, &base)
	r.VsUnreplicated = costAgainst(&r, &base, "cost of the replica", "without a replica")
	return []report.Run{r, base}, ""
}

// metricWaitTimeouts counts the payments ticketd answered 503 because
// fewer replicas than TICKETD_REDIS_WAIT_REPLICAS acknowledged them.
const metricWaitTimeouts = "ticketd_redis_wait_timeouts_total"

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// waitTimeout says the WAIT timeout of a ticketd with environment env.
func waitTimeout(env []string) string {
	v := "500ms, the default"
	for _, kv := range env {
		if t, ok := strings.CutPrefix(kv, "TICKETD_REDIS_WAIT_TIMEOUT="); ok {
			v = t + " (-ticketd-env)"
		}
	}
	return "timeout " + v
}

// replicationFigures are how far the replica stayed behind the primary
// over the run.
func replicationFigures(l durable.Replication) []report.Figure {
	if l.Samples == 0 {
		return nil
	}
	every := strconv.FormatFloat(replicaSampling.Seconds(), 'f', -1, 64) + " s"
	return []report.Figure{
		{Name: "replica: fewest online in any read of the primary's INFO replication (every " + every + ", " + strconv.Itoa(l.Samples) + " reads)",
			Value: float64(l.FewestOnline)},
		{Name: "replica: longest time since its last acknowledgement (INFO replication lag, whole seconds)", Value: l.MaxLag.Seconds(), Unit: "s"},
		{Name: "replica: most bytes of the primary's stream not yet acknowledged", Value: float64(l.MaxBehind), Unit: "B"}}
}

// replicationTarget judges the run that waits for a replica against the
// same durable Redis without one (base): the share of throughput it
// keeps, and no payment refused for want of the replica.
func replicationTarget(rep, base *report.Run) (report.Target, verdict) {
	t := report.Target{Name: "flash-replicated: a durable primary with one replica, WAIT 1 after every payment, against the same Redis without a replica, measured in turns",
		Want: ">= " + strconv.Itoa(int(targetReplicatedShare*100)) + "% of the throughput (pairs/s) without the replica, no payment answered 503 for want of it, integrity passed"}
	if rep == nil {
		return t, verdict{}
	}
	t, v := turnsTarget(t, rep, rep.VsUnreplicated, targetReplicatedShare)
	if !v.measured {
		return t, v
	}
	if base != nil {
		t.Got += fmt.Sprintf("; confirm p99 %s vs %s", msText(opStats(rep, "confirm").P99), msText(opStats(base, "confirm").P99))
	}
	timeouts, read := figureOf(rep, figWaitTimeouts)
	if read {
		t.Got += fmt.Sprintf("; %s payments answered 503 for want of the replica", thousands(timeouts))
	} else {
		t.Got += "; the payments answered 503 for want of the replica could not be read"
	}
	t.Got += replicaCPU(rep)
	// a payment answered 503 for want of the replica is a buyer told to
	// retry: not sound, however fast
	v.sound = v.sound && read && timeouts == 0
	return t, v
}

// replicaCPU says what the replica took of the CPU per pair of the
// processes measured (the machine's but for other users'), which in
// production is another machine's; empty when not measured.
func replicaCPU(r *report.Run) string {
	replica, _ := microsPerUnit(r, replicaRow)
	machine, _ := microsPerUnit(r, cpuuse.Machine)
	other, _ := microsPerUnit(r, otherRow)
	if replica <= 0 || machine-other <= 0 {
		return ""
	}
	return fmt.Sprintf("; the replica took %s of the %s us of CPU per pair of the processes measured here (%.0f%%)",
		thousands(replica), thousands(machine-other), 100*replica/(machine-other))
}

// cpuBeside gives, role by role, the CPU per unit of r's processes beside
// that of base's; empty when r's CPU was not measured.
func cpuBeside(r, base *report.Run, roles []cpuRole) string {
	var parts []string
	for _, role := range roles {
		m, ok := microsPerUnit(r, role.measured)
		if !ok {
			continue
		}
		p := role.role + " " + thousands(m)
		if b, ok := microsPerUnit(base, role.base); ok {
			p += " vs " + thousands(b)
		}
		parts = append(parts, p+" us")
	}
	if len(parts) == 0 {
		return ""
	}
	return "CPU per " + strings.TrimSuffix(r.Unit, "s") + " here vs in " + base.Scenario + ": " + strings.Join(parts, "; ")
}

// microsPerUnit is the CPU per unit of r's row process, and whether r
// has that row.
func microsPerUnit(r *report.Run, process string) (float64, bool) {
	for _, c := range r.CPU {
		if c.Process == process {
			return c.MicrosPerUnit, true
		}
	}
	return 0, false
}

// figureOf is the named figure of r and whether r has it.
func figureOf(r *report.Run, name string) (float64, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}
