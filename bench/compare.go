package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/ceiling"
	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
	"github.com/ticketd/ticketd/inventory/loopback"
)

// comparisons are the runs ticketd's figures are read against, measured
// in the same invocation on the same machine.
type comparisons struct {
	runs                          []report.Run
	notes                         []string
	ceilingHTTP, ceilingRedis, pg *float64
}

// pairScenarios are the scenarios measured in reserve+confirm pairs.
var pairScenarios = map[string]bool{"flash": true, "flash-durable": true, "flash-replicated": true, "flash-open": true, "sellout": true, "mixed": true}

// needsComparisons: the pair scenarios are read against the ceilings and
// the baseline, the storefront ones against the ceilings (their cost
// targets: the canned server's CPU per pair, the claim script's rate).
func needsComparisons(selected []scenario.Scenario) bool {
	for _, s := range selected {
		if pairScenarios[s.Name()] || strings.HasPrefix(s.Name(), "storefront-") {
			return true
		}
	}
	return false
}

// needsBaseline: only the pair scenarios are read against the baseline.
func needsBaseline(selected []scenario.Scenario) bool {
	for _, s := range selected {
		if pairScenarios[s.Name()] {
			return true
		}
	}
	return false
}

// attach gives a run the comparison figures and, for a pairs run of
// ticketd whose throughput is a capacity, the ratios; otherwise a note
// says why it has none.
func (cmp *comparisons) attach(r *report.Run) {
	r.CeilingPerS, r.CeilingRedisPerS, r.BaselinePerS = cmp.ceilingHTTP, cmp.ceilingRedis, cmp.pg
	if r.Target != "ticketd" || r.Unit != "pairs" {
		return
	}
	if why := cmp.noRatios(r); why != "" {
		r.Notes = append(r.Notes, "no ratios to the ceiling and the baseline: "+why)
		return
	}
	if cmp.ceilingHTTP != nil && *cmp.ceilingHTTP > 0 {
		v := r.ThroughputPerS / *cmp.ceilingHTTP
		r.RatioToCeiling = &v
	}
	if cmp.pg != nil && *cmp.pg > 0 {
		v := r.ThroughputPerS / *cmp.pg
		r.RatioToBaseline = &v
	}
	if r.Mode == "open" {
		r.Notes = append(r.Notes, fmt.Sprintf("ratios of an open loop ticketd did not keep up with (%s arrivals/s offered, at most %d in flight), "+
			"against the closed loops of the ceiling and the baseline", thousands(r.Rate), r.Concurrency))
	}
}

// noRatios says why a pairs run of ticketd gets no ratios: they compare
// capacities, so the run's throughput must be one. A closed loop's is; an
// open loop's only when ticketd fell behind the arrivals (otherwise its
// throughput is the rate asked for).
func (cmp *comparisons) noRatios(r *report.Run) string {
	switch {
	case r.Interrupted:
		return "the run was interrupted"
	case (cmp.ceilingHTTP == nil || *cmp.ceilingHTTP <= 0) && (cmp.pg == nil || *cmp.pg <= 0):
		return "neither the HTTP ceiling nor the baseline ran (see the notes)"
	case r.Mode == "closed":
		return ""
	case r.GeneratorBehind():
		return "the load generator fell behind its schedule, so the run measured less load than intended"
	case !r.Saturated || r.ThroughputPerS >= report.BehindShare*r.Rate:
		return fmt.Sprintf("ticketd kept up with the %s arrivals/s offered, so its throughput is the rate asked for, not a capacity", thousands(r.Rate))
	}
	return ""
}

// compare measures the ceilings and the baseline, each as long as its
// default or -duration, whichever is shorter.
func compare(ctx context.Context, c config, d *deployment, pr *load.Progress, baseline bool) *comparisons {
	cmp := &comparisons{}
	dur := func(def time.Duration) time.Duration {
		if c.Duration > 0 && c.Duration < def {
			return c.Duration
		}
		return def
	}
	if c.NoCeiling {
		cmp.notes = append(cmp.notes, "ceilings not run (-no-ceiling)")
	} else {
		cmp.redisCeiling(ctx, c, d, dur(10*time.Second))
		cmp.httpCeiling(ctx, c, d, pr, dur(10*time.Second))
	}
	switch {
	case c.NoBaseline:
		cmp.notes = append(cmp.notes, "baseline not run (-no-baseline)")
	case !baseline:
		cmp.notes = append(cmp.notes, "baseline not run: no reserve+confirm scenario selected")
	default:
		cmp.baseline(ctx, c, d, pr, dur(15*time.Second))
	}
	return cmp
}

// redisCeiling runs the claim script alone through redis-benchmark.
func (cmp *comparisons) redisCeiling(ctx context.Context, c config, d *deployment, dur time.Duration) {
	if d.redis == nil {
		cmp.notes = append(cmp.notes, "ceiling-redis not run: no Redis to drive (give -redis-url with -target)")
		return
	}
	fmt.Fprintf(os.Stderr, "bench: ceiling-redis (redis-benchmark, EVALSHA of the claim script, -c %d)\n", c.Concurrency)
	res, err := ceiling.RedisClaim(ctx, d.redis, d.redisURL, d.benchPrefix, c.Concurrency, dur)
	if err != nil {
		cmp.notes = append(cmp.notes, "ceiling-redis not run: "+err.Error())
		return
	}
	v := res.PerSec
	cmp.ceilingRedis = &v
	cmp.runs = append(cmp.runs, report.Run{Scenario: "ceiling-redis", Target: "redis-benchmark", Mode: "redis-benchmark",
		Unit: "EVALSHA", Concurrency: res.Clients, DurationS: res.Elapsed.Seconds(), Requests: res.Requests, Units: res.Requests,
		ThroughputPerS: res.PerSec, RequestsPerS: res.PerSec, LatencyOp: "evalsha", P50Ms: res.P50Ms, P99Ms: res.P99Ms, IntegrityOK: true,
		Notes: []string{"redis-benchmark " + res.Command + ": the claim script alone, no HTTP, no ticketd; p99.9 is not reported by redis-benchmark"}})
}

// httpCeiling drives a bare fasthttp server with canned answers, in its
// own process, with the flash run's generator and concurrency.
func (cmp *comparisons) httpCeiling(ctx context.Context, c config, d *deployment, pr *load.Progress, dur time.Duration) {
	fmt.Fprintln(os.Stderr, "bench: ceiling-http (canned fasthttp server, flash closed loop)")
	self, err := os.Executable()
	if err != nil {
		cmp.notes = append(cmp.notes, "ceiling-http not run: "+err.Error())
		return
	}
	addr, err := loopback.FreeAddr()
	if err != nil {
		cmp.notes = append(cmp.notes, "ceiling-http not run: "+err.Error())
		return
	}
	p, err := procs.Start("canned server", self, []string{"-serve-canned", addr}, nil, filepath.Join(d.tmp, "canned.log"))
	if err != nil {
		cmp.notes = append(cmp.notes, "ceiling-http not run: "+err.Error())
		return
	}
	defer p.Stop(5 * time.Second)
	a := &api.Client{Base: "http://" + addr}
	if err := a.Healthy(ctx, 10*time.Second); err != nil {
		cmp.notes = append(cmp.notes, "ceiling-http not run: "+err.Error())
		return
	}
	env := &scenario.Env{API: a, Addr: addr, Run: newRunID(), Allow: d.allow, Canned: true,
		CPU: d.meter(ctx, "", cpuuse.Process("canned server", p.PID()))}
	out, err := scenario.Flash.Run(ctx, env, scenario.Options{Duration: dur, Workers: c.Concurrency, Progress: pr, Label: "ceiling-http"})
	if err != nil {
		cmp.notes = append(cmp.notes, "ceiling-http not run: "+err.Error())
		return
	}
	r := toRun("ceiling-http", "canned fasthttp", out)
	r.Notes = append(r.Notes, "a bare fasthttp handler answering a canned reserve and confirm, driven exactly like flash: pairs/s = requests/s / 2")
	v := r.ThroughputPerS
	cmp.ceilingHTTP = &v
	cmp.runs = append(cmp.runs, r)
}

// baseline builds bench/baseline, starts it on a fresh database and runs
// the flash closed loop against it.
func (cmp *comparisons) baseline(ctx context.Context, c config, d *deployment, pr *load.Progress, dur time.Duration) {
	fail := func(why string) { cmp.notes = append(cmp.notes, "baseline not run: "+why) }
	if d.root == "" || !procs.HasPackage(d.root, "bench/baseline") {
		fail("bench/baseline not found")
		return
	}
	fmt.Fprintln(os.Stderr, "bench: baseline (building bench/baseline; flash closed loop on Postgres row locks)")
	bin := filepath.Join(d.tmp, "baseline")
	if err := procs.Build(ctx, d.root, "./bench/baseline", bin); err != nil {
		fail(err.Error())
		return
	}
	dbURL, drop, err := procs.CreateDatabase(ctx, d.dbServer, "ticketd_baseline_")
	if err != nil {
		fail(err.Error())
		return
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(dctx); err != nil {
			fmt.Fprintln(os.Stderr, "bench: drop the baseline's database:", err)
		}
	}()
	addr, err := loopback.FreeAddr()
	if err != nil {
		fail(err.Error())
		return
	}
	token := randomHex(16)
	p, err := procs.Start("baseline", bin, []string{"-addr", addr, "-database-url", dbURL, "-admin-token", token}, nil,
		filepath.Join(d.outDir, "baseline-"+d.stamp+".log"))
	if err != nil {
		fail(err.Error())
		return
	}
	defer p.Stop(30 * time.Second)
	a := &api.Client{Base: "http://" + addr, AdminToken: token}
	if err := waitUp(ctx, a, p, "/healthz", 30*time.Second); err != nil {
		fail(err.Error())
		return
	}
	env := &scenario.Env{API: a, Addr: addr, Run: newRunID(), Allow: d.allow, Record: scenario.BaselineRecord{API: a},
		DrainTimeout: d.drain, CPU: d.meter(ctx, d.dbServer, cpuuse.Process("baseline server", p.PID()))}
	out, err := scenario.Flash.Run(ctx, env, scenario.Options{Duration: dur, Workers: c.Concurrency, Progress: pr, Label: "baseline"})
	if err != nil {
		fail(err.Error())
		return
	}
	r := toRun("baseline", "postgres row locks", out)
	r.Notes = append(r.Notes, "bench/baseline: the same reserve+confirm flow on Postgres with row locks, one transaction per confirm; log "+p.Log)
	v := r.ThroughputPerS
	cmp.pg = &v
	cmp.runs = append(cmp.runs, r)
}
