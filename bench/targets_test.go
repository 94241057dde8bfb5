package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
)

func status(ts []report.Target, prefix string) string {
	for _, t := range ts {
		if len(t.Name) >= len(prefix) && t.Name[:len(prefix)] == prefix {
			return t.Status
		}
	}
	return "absent"
}

func ops(names ...string) []load.OpStats {
	var out []load.OpStats
	for _, n := range names {
		out = append(out, load.OpStats{Name: n, Count: 1, P50: 1, P99: 5, P999: 8})
	}
	return out
}

// TestJudgeNeverPassesWhatWasNotMeasured: targets whose runs are absent
// are "not measured"; present ones pass or fail on their numbers and on
// integrity.
func TestJudgeNeverPassesWhatWasNotMeasured(t *testing.T) {
	ratio, base := 12.0, 1600.0
	s := &report.Suite{Runs: []report.Run{
		{Scenario: "flash", Target: "ticketd", Mode: "closed", Unit: "pairs", ThroughputPerS: 16000, IntegrityOK: true,
			RatioToBaseline: &ratio, BaselinePerS: &base, Ops: ops("pair"), CPU: []report.CPUShare{{Process: cpuuse.Machine, Cores: 1.9, MicrosPerUnit: 120}}},
		{Scenario: "flash-open", Target: "ticketd", Mode: "open", Rate: 5000, AchievedRate: 4990, IntegrityOK: true, Ops: ops("confirm", "pair")},
	}}
	ts := judge(s, false)
	for prefix, want := range map[string]string{
		"flash, closed loop, capacity": report.Pass, "flash, closed loop: against": report.Pass,
		"flash, open loop": report.Pass, "sell-out": report.NotMeasured, "memory": report.NotMeasured,
		"flash-durable": report.NotMeasured, "flash-replicated": report.NotMeasured, "integrity after": report.Pass, "the standard suite": "absent",
	} {
		if got := status(ts, prefix); got != want {
			t.Errorf("%s: %s, want %s", prefix, got, want)
		}
	}

	s.Runs[0].IntegrityOK = false // fast but wrong is not a pass
	s.Runs[1].Errors = map[string]int64{"timeout": 1}
	ts = judge(s, true)
	for prefix, want := range map[string]string{
		"flash, closed loop, capacity": report.Fail, "flash, open loop": report.Fail, "integrity after": report.Fail,
		"the standard suite": report.Pass,
	} {
		if got := status(ts, prefix); got != want {
			t.Errorf("after breaking: %s: %s, want %s", prefix, got, want)
		}
	}
}

// TestASoundRunThatIsSlowIsAMissNotAFail: a newcomer's first run on a
// small machine reached 5.19x the Postgres baseline (the target 10x) with
// integrity passed: that is a speed not reached (MISS); FAIL is kept for
// a run whose integrity broke, however fast.
func TestASoundRunThatIsSlowIsAMissNotAFail(t *testing.T) {
	ratio, base := 5.19, 526.0
	flash := report.Run{Scenario: "flash", Target: "ticketd", Mode: "closed", Unit: "pairs", ThroughputPerS: 2727, IntegrityOK: true,
		RatioToBaseline: &ratio, BaselinePerS: &base, Ops: ops("pair")}
	mem := report.Run{Scenario: "memory", Target: "ticketd", Mode: "closed", IntegrityOK: true, Ops: ops("hold"),
		Figures: []report.Figure{{Name: scenario.FigEventMB, Value: 10 * targetEventMB}}}
	s := &report.Suite{Runs: []report.Run{flash, mem}, DurationS: 2 * targetSuiteSecs}
	for prefix, want := range map[string]string{"flash, closed loop: against": report.Miss, "memory": report.Miss,
		"the standard suite": report.Miss} {
		if got := status(judge(s, true), prefix); got != want {
			t.Errorf("sound and slow: %s: %s, want %s", prefix, got, want)
		}
	}
	s.Runs[0].IntegrityOK, s.Runs[1].IntegrityOK = false, false
	for _, prefix := range []string{"flash, closed loop: against", "memory", "integrity after"} {
		if got := status(judge(s, true), prefix); got != report.Fail {
			t.Errorf("integrity broken: %s: %s, want FAIL", prefix, got)
		}
	}
}

// TestJudgeReadsAnOpenFlashRunAsTheOpenLoopTarget: "-scenario flash -rate
// 5000" is an open-loop run; its throughput is the offered rate, so it must
// never be judged as the closed-loop maximum.
func TestJudgeReadsAnOpenFlashRunAsTheOpenLoopTarget(t *testing.T) {
	s := &report.Suite{Runs: []report.Run{
		{Scenario: "flash", Target: "ticketd", Mode: "open", Rate: 5000, AchievedRate: 5000, ThroughputPerS: 16000, IntegrityOK: true, Ops: ops("confirm", "pair")},
	}}
	ts := judge(s, false)
	for prefix, want := range map[string]string{
		"flash, closed loop, capacity": report.NotMeasured, "flash, open loop": report.Pass,
	} {
		if got := status(ts, prefix); got != want {
			t.Errorf("%s: %s, want %s", prefix, got, want)
		}
	}
}

// TestTargetsSayWhenTheMachineWasTheLimit: with the CPU measured, the
// throughput target tells how busy the machine was and what its CPU per
// pair allows, so a reader can tell the service's limit from the machine's.
func TestTargetsSayWhenTheMachineWasTheLimit(t *testing.T) {
	s := &report.Suite{Machine: report.Machine{CPUs: 2}, Runs: []report.Run{
		{Scenario: "flash", Target: "ticketd", Mode: "closed", Unit: "pairs", ThroughputPerS: 6000, IntegrityOK: true, Ops: ops("pair"),
			CPU: []report.CPUShare{{Process: "ticketd", Cores: 0.7, MicrosPerUnit: 120},
				{Process: cpuuse.Machine, Cores: 1.96, MicrosPerUnit: 400}}},
	}}
	got := judge(s, false)[0].Got
	if !strings.Contains(got, "1.96 of 2 cores busy, at 400 us of CPU per pair: at most 5,000 pairs/s here") {
		t.Fatalf("got %q", got)
	}
	s.Runs[0].CPU = nil
	if got := judge(s, false)[0].Got; strings.Contains(got, "cores busy") {
		t.Fatalf("CPU not measured, yet: %q", got)
	}
}

func TestJudgeSellOutNeedsAnExactSellOut(t *testing.T) {
	run := report.Run{Scenario: "sellout", Target: "ticketd", Mode: "open", Arrivals: 100_000, IntegrityOK: true, Ops: ops("pair"),
		Figures: []report.Figure{{Name: scenario.FigSold, Value: 10_000}, {Name: scenario.FigCapacity, Value: 10_000},
			{Name: scenario.FigSelloutTime, Value: 2.5}, {Name: scenario.FigSaleRate, Value: 4000}}}
	ts := judge(&report.Suite{Runs: []report.Run{run}}, false)
	if got := status(ts, "sell-out"); got != report.Pass {
		t.Fatalf("exact sell-out: %s", got)
	}
	if got := ts[3].Got; !strings.Contains(got, "in 2.50 s (4,000 pairs/s over the sale)") {
		t.Fatalf("the sell-out target does not give the sale's rate: %q", got)
	}
	run.Figures[0].Value = 9_999
	if got := status(judge(&report.Suite{Runs: []report.Run{run}}, false), "sell-out"); got != report.Fail {
		t.Fatalf("one ticket short: %s", got)
	}
}

func TestSingleJSONCarriesComparisonsAndTargets(t *testing.T) {
	s := &report.Suite{Runs: []report.Run{{Scenario: "ceiling-http", Target: "canned fasthttp"}, {Scenario: "flash", Target: "ticketd"}},
		Targets: []report.Target{{Name: "x"}}, Notes: []string{"n"}}
	r := single(s, "flash")
	if r.Scenario != "flash" || len(r.Comparisons) != 1 || len(r.Targets) != 1 || len(r.Notes) != 1 {
		t.Fatalf("single = %+v", r)
	}
	// flash-durable makes two runs: the JSON is the durable one, with the
	// run without persistence among what it is compared with.
	s = &report.Suite{Runs: []report.Run{{Scenario: "flash-durable", Target: "ticketd"}, {Scenario: "flash-nondurable", Target: "ticketd"}}}
	r = single(s, "flash-durable")
	if r.Scenario != "flash-durable" || len(r.Comparisons) != 1 || r.Comparisons[0].Scenario != "flash-nondurable" {
		t.Fatalf("single = %+v", r)
	}
	s = &report.Suite{Runs: []report.Run{{Scenario: "flash-replicated", Target: "ticketd"}, {Scenario: "flash-unreplicated", Target: "ticketd"}}}
	r = single(s, "flash-replicated")
	if r.Scenario != "flash-replicated" || len(r.Comparisons) != 1 || r.Comparisons[0].Scenario != "flash-unreplicated" {
		t.Fatalf("single = %+v", r)
	}
}

// TestDurableTargetJudgesTheShareOfThroughputKept: the durable flash run
// passes when it keeps 85% of the throughput of flash without persistence
// it was measured in turns with, fails below, and is not measured without
// both.
func TestDurableTargetJudgesTheShareOfThroughputKept(t *testing.T) {
	flash := report.Run{Scenario: "flash-nondurable", Target: "ticketd", Mode: "closed", Unit: "pairs", ThroughputPerS: 4000, P99Ms: 20,
		LatencyOp: "pair", IntegrityOK: true, Ops: ops("pair")}
	durable := flash
	durable.Scenario, durable.ThroughputPerS, durable.P99Ms = "flash-durable", 3600, 30
	s := &report.Suite{Runs: []report.Run{flash, durable}}
	costOfDurability(&s.Runs[1], &s.Runs[0])
	v := s.Runs[1].VsNonDurable
	if v == nil || v.Run != "flash-nondurable" || v.ThroughputRatio != 0.9 || v.P99Ratio != 1.5 {
		t.Fatalf("cost of durability %+v, want 0.9x throughput and 1.5x p99 against flash-nondurable", v)
	}
	ts := judge(s, false)
	if got := status(ts, "flash-durable"); got != report.Pass {
		t.Fatalf("90%% kept: %s", got)
	}
	for _, tg := range ts {
		if strings.HasPrefix(tg.Name, "flash-durable") && !strings.Contains(tg.Got, "90% (3,600 vs 4,000 pairs/s); p99 pair 30.00 ms vs 20.00 ms (1.50x)") {
			t.Fatalf("got %q", tg.Got)
		}
	}

	s.Runs[1].ThroughputPerS = 3000
	costOfDurability(&s.Runs[1], &s.Runs[0])
	if got := status(judge(s, false), "flash-durable"); got != report.Miss {
		t.Fatalf("75%% kept, integrity passed: %s, want a MISS (a cost, not a failure)", got)
	}
	s.Runs[1].IntegrityOK = false
	s.Runs[1].ThroughputPerS = 4000
	costOfDurability(&s.Runs[1], &s.Runs[0])
	if got := status(judge(s, false), "flash-durable"); got != report.Fail {
		t.Fatalf("fast but integrity failed: %s", got)
	}

	// Without a complete run to compare with there is no cost to judge.
	incomplete := flash
	incomplete.Interrupted = true
	s = &report.Suite{Runs: []report.Run{durable}}
	costOfDurability(&s.Runs[0], &incomplete)
	if got := status(judge(s, false), "flash-durable"); got != report.NotMeasured || s.Runs[0].VsNonDurable != nil {
		t.Fatalf("no flash run: %s, %+v", got, s.Runs[0].VsNonDurable)
	}
	if !strings.Contains(strings.Join(s.Runs[0].Notes, " "), "without persistence (flash-nondurable) did not complete") {
		t.Fatalf("notes %v do not say why there is no cost", s.Runs[0].Notes)
	}
}

// TestReplicationTargetJudgesTheShareKeptAndTheTimeouts: the run whose
// payments wait for a replica passes when it keeps the target's share of
// the throughput of the same durable Redis without a replica, measured in
// turns, and no payment was refused for want of the replica; the target
// gives confirm's p99 on both sides and the replica's share of the CPU.
func TestReplicationTargetJudgesTheShareKeptAndTheTimeouts(t *testing.T) {
	base := report.Run{Scenario: "flash-unreplicated", Target: "ticketd", Mode: "closed", Unit: "pairs", ThroughputPerS: 4000, P99Ms: 30,
		LatencyOp: "pair", IntegrityOK: true, Ops: []load.OpStats{{Name: "pair", Count: 1, P99: 30}, {Name: "confirm", Count: 1, P99: 12}}}
	rep := base
	rep.Scenario, rep.P99Ms = "flash-replicated", 45
	rep.ThroughputPerS = 4000 * (targetReplicatedShare + 0.05)
	rep.Ops = []load.OpStats{{Name: "pair", Count: 1, P99: 45}, {Name: "confirm", Count: 1, P99: 20}}
	rep.Figures = []report.Figure{{Name: figWaitTimeouts, Value: 0}}
	rep.CPU = []report.CPUShare{{Process: replicaRow, Cores: 0.3, MicrosPerUnit: 80}, {Process: cpuuse.Machine, Cores: 1.9, MicrosPerUnit: 500},
		{Process: otherRow, Cores: 0.4, MicrosPerUnit: 100}}
	judged := func() report.Target {
		t.Helper()
		s := &report.Suite{Runs: []report.Run{rep, base}}
		s.Runs[0].VsUnreplicated = costAgainst(&s.Runs[0], &s.Runs[1], "cost of the replica", "without a replica")
		for _, tg := range judge(s, false) {
			if strings.HasPrefix(tg.Name, "flash-replicated") {
				return tg
			}
		}
		t.Fatal("no flash-replicated target")
		return report.Target{}
	}
	tg := judged()
	if tg.Status != report.Pass {
		t.Fatalf("%.0f%% kept, no timeouts: %s (%s)", 100*rep.ThroughputPerS/base.ThroughputPerS, tg.Status, tg.Got)
	}
	for _, want := range []string{"p99 pair 45.00 ms vs 30.00 ms (1.50x)", "confirm p99 20.00 ms vs 12.00 ms",
		"0 payments answered 503 for want of the replica", "the replica took 80 of the 400 us of CPU per pair of the processes measured here (20%)"} {
		if !strings.Contains(tg.Got, want) {
			t.Errorf("got %q, want %q in it", tg.Got, want)
		}
	}

	rep.Figures[0].Value = 3 // buyers told to retry: not a pass, however fast
	if tg := judged(); tg.Status != report.Fail || !strings.Contains(tg.Got, "3 payments answered 503") {
		t.Fatalf("3 timeouts: %s (%s)", tg.Status, tg.Got)
	}
	rep.Figures = nil // not read: not a pass either
	if tg := judged(); tg.Status != report.Fail || !strings.Contains(tg.Got, "could not be read") {
		t.Fatalf("timeouts not read: %s (%s)", tg.Status, tg.Got)
	}
	rep.Figures = []report.Figure{{Name: figWaitTimeouts, Value: 0}}
	rep.ThroughputPerS = 4000 * (targetReplicatedShare - 0.05)
	if tg := judged(); tg.Status != report.Miss {
		t.Fatalf("%.0f%% kept, no timeouts: %s, want a MISS", 100*rep.ThroughputPerS/base.ThroughputPerS, tg.Status)
	}
	rep.IntegrityOK = false
	if tg := judged(); tg.Status != report.Fail {
		t.Fatalf("integrity failed: %s, want FAIL", tg.Status)
	}

	// Without the run it is compared with there is no cost to judge.
	base.Interrupted = true
	if tg := judged(); tg.Status != report.NotMeasured {
		t.Fatalf("base interrupted: %s", tg.Status)
	}
}

// TestCPUBesideSetsEachRoleAgainstTheBase: each role's CPU per pair on
// the measured side beside the base's, rows the base lacks alone, rows
// the measured side lacks left out.
func TestCPUBesideSetsEachRoleAgainstTheBase(t *testing.T) {
	rep := report.Run{Unit: "pairs", CPU: []report.CPUShare{{Process: replicatedRow, MicrosPerUnit: 397}, {Process: primaryRow, MicrosPerUnit: 300},
		{Process: replicaRow, MicrosPerUnit: 141}, {Process: unreplicatedRow, MicrosPerUnit: 27}, {Process: "postgres", MicrosPerUnit: 147}}}
	base := report.Run{Scenario: "flash-unreplicated", Unit: "pairs", CPU: []report.CPUShare{{Process: replicatedRow, MicrosPerUnit: 26},
		{Process: unreplicatedRow, MicrosPerUnit: 263}, {Process: durableRedisRow, MicrosPerUnit: 198}, {Process: "postgres", MicrosPerUnit: 114}}}
	want := "CPU per pair here vs in flash-unreplicated: ticketd 397 vs 263 us; Redis (primary) 300 vs 198 us; the replica 141 us; Postgres 147 vs 114 us"
	if got := cpuBeside(&rep, &base, replicatedRoles); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := cpuBeside(&report.Run{}, &base, replicatedRoles); got != "" {
		t.Fatalf("not measured: %q", got)
	}
}

// TestWaitTimeoutSaysWhereItCameFrom: ticketd's default unless
// -ticketd-env sets it.
func TestWaitTimeoutSaysWhereItCameFrom(t *testing.T) {
	if got := waitTimeout([]string{"GOGC=800"}); got != "timeout 500ms, the default" {
		t.Fatalf("default: %q", got)
	}
	if got := waitTimeout([]string{"TICKETD_REDIS_WAIT_TIMEOUT=2s", "TICKETD_REDIS_WAIT_REPLICAS=1"}); got != "timeout 2s (-ticketd-env)" {
		t.Fatalf("set: %q", got)
	}
}

// TestJudgeOpenLoopNeedsTheRateOffered: an open loop whose generator fell
// behind offered less than the target rate: not measured, never passed.
// One where ticketd fell behind on a machine with room misses.
func TestJudgeOpenLoopNeedsTheRateOffered(t *testing.T) {
	run := report.Run{Scenario: "flash-open", Target: "ticketd", Mode: "open", Rate: 5000, AchievedRate: 4000, IntegrityOK: true, Ops: ops("confirm", "pair")}
	ts := judge(&report.Suite{Runs: []report.Run{run}}, false)
	if got := status(ts, "flash, open loop"); got != report.NotMeasured {
		t.Fatalf("generator behind: %s", got)
	}
	if !strings.Contains(ts[2].Got, "the load generator fell behind: 4,000 arrivals/s begun") {
		t.Fatalf("got %q", ts[2].Got)
	}
	run.Saturated = true
	if got := status(judge(&report.Suite{Runs: []report.Run{run}}, false), "flash, open loop"); got != report.Miss {
		t.Fatalf("ticketd behind: %s", got)
	}
}

// Issue 21: the first bench run on a 2-core machine printed FAIL for
// 15,000 pairs/s, which docs/decisions.md says 2 cores cannot reach. The
// flash target is the machine's CPU a pair (133 us: 15,000 pairs/s on 2
// cores), so the same code passes or misses alike on any machine, and a
// miss is a MISS, never a FAIL; FAIL is for broken integrity. The open
// loop's p99 at a rate that kept the machine over 80% busy is info.
func TestSpeedTargetsCompareFairlyAcrossMachines(t *testing.T) {
	flash := func(cpus int, pairsPerS, us float64) []report.Target {
		s := &report.Suite{Machine: report.Machine{CPUs: cpus}, Runs: []report.Run{{Scenario: "flash", Target: "ticketd", Mode: "closed",
			Unit: "pairs", ThroughputPerS: pairsPerS, IntegrityOK: true, Ops: ops("pair"),
			CPU: []report.CPUShare{{Process: cpuuse.Machine, Cores: float64(cpus) * 0.95, MicrosPerUnit: us}}}}}
		return judge(s, false)
	}
	const name = "flash, closed loop, capacity"
	for _, tc := range []struct {
		cpus      int
		pairs, us float64
		want      string
	}{
		{2, 14_300, 130, report.Pass},  // the aim, on the machine
		{16, 40_000, 130, report.Pass}, // the same cost on a larger machine: its rate does not count
		{2, 6_000, 330, report.Miss},   // docs/decisions.md's 2-core machine: a cost missed, not a failure
		{64, 100_000, 330, report.Miss},
	} {
		ts := flash(tc.cpus, tc.pairs, tc.us)
		if got := status(ts, name); got != tc.want {
			t.Errorf("%d cores, %.0f pairs/s, %.0f us a pair: %s, want %s", tc.cpus, tc.pairs, tc.us, got, tc.want)
		}
		for _, tg := range ts {
			if strings.HasPrefix(tg.Name, name) && !strings.Contains(tg.Want, "<= 133 us a pair") {
				t.Errorf("want %q", tg.Want)
			}
		}
	}

	open := func(busy float64, p99 float64) string {
		r := report.Run{Scenario: "flash-open", Target: "ticketd", Mode: "open", Rate: 5000, AchievedRate: 5000, IntegrityOK: true,
			Ops: []load.OpStats{{Name: "confirm", Count: 1, P50: 1, P99: p99, P999: p99}},
			CPU: []report.CPUShare{{Process: cpuuse.Machine, Cores: 2 * busy, MicrosPerUnit: 2e6 * busy / 5000}}}
		return status(judge(&report.Suite{Machine: report.Machine{CPUs: 2}, Runs: []report.Run{r}}, false), "flash, open loop")
	}
	for _, tc := range []struct {
		busy, p99 float64
		want      string
	}{{0.93, 60, report.Info}, {0.5, 60, report.Miss}, {0.5, 5, report.Pass}} {
		if got := open(tc.busy, tc.p99); got != tc.want {
			t.Errorf("open loop, machine %.0f%% busy, p99 %.0f ms: %s, want %s", 100*tc.busy, tc.p99, got, tc.want)
		}
	}
	if missed([]report.Target{{Status: report.Info}}) {
		t.Error("an info line counts as missed")
	}
}

// TestSelloutHeadlineIsTheSaleRate: a sell-out's throughput is the pairs
// paid over the sale, not over a run whose tail only answers sold out.
func TestSelloutHeadlineIsTheSaleRate(t *testing.T) {
	o := &scenario.Outcome{Result: &load.Result{Mode: "open", Unit: "pairs", Rate: 20000, Elapsed: 10 * time.Second, Units: 10_000},
		LatencyOp: "pair", Figures: []scenario.Figure{{Name: scenario.FigCapacity, Value: 10_000}, {Name: scenario.FigSold, Value: 10_000},
			{Name: scenario.FigSelloutTime, Value: 2.5}, {Name: scenario.FigSaleRate, Value: 4000}}}
	r := toRun("sellout", "ticketd", o)
	if r.ThroughputPerS != 4000 {
		t.Fatalf("throughput %.0f, want 4,000 pairs/s over the sale (not 1,000 over the run)", r.ThroughputPerS)
	}
	if figure(&r, "pairs/s over the whole run (the sale and the sold-out answers after it)") != 1000 {
		t.Fatalf("the whole run's rate is not kept: %+v", r.Figures)
	}
	o.Figures = o.Figures[:2] // not sold out
	r = toRun("sellout", "ticketd", o)
	if r.ThroughputPerS != 1000 || !strings.Contains(strings.Join(r.Notes, " "), "did not sell out") {
		t.Fatalf("not sold out: throughput %.0f, notes %v", r.ThroughputPerS, r.Notes)
	}
}

// TestRatiosOnlyForCapacities: a closed loop and an open loop that
// ticketd could not keep up with (the sell-out) get ratios; an open loop
// at a rate ticketd kept up with says why it has none.
func TestRatiosOnlyForCapacities(t *testing.T) {
	ceil, pg := 8000.0, 500.0
	cmp := &comparisons{ceilingHTTP: &ceil, pg: &pg}
	sell := report.Run{Scenario: "sellout", Target: "ticketd", Unit: "pairs", Mode: "open", Rate: 20000, AchievedRate: 4100,
		Saturated: true, Concurrency: 1024, ThroughputPerS: 4000}
	cmp.attach(&sell)
	if sell.RatioToCeiling == nil || *sell.RatioToCeiling != 0.5 || sell.RatioToBaseline == nil || *sell.RatioToBaseline != 8 {
		t.Fatalf("sell-out ratios %v %v, want 0.5 and 8", sell.RatioToCeiling, sell.RatioToBaseline)
	}
	if !strings.Contains(strings.Join(sell.Notes, " "), "open loop ticketd did not keep up with (20,000 arrivals/s offered") {
		t.Fatalf("notes %v", sell.Notes)
	}
	open := report.Run{Scenario: "flash-open", Target: "ticketd", Unit: "pairs", Mode: "open", Rate: 5000, AchievedRate: 5000, ThroughputPerS: 4990}
	cmp.attach(&open)
	if open.RatioToCeiling != nil || !strings.Contains(strings.Join(open.Notes, " "), "ticketd kept up with the 5,000 arrivals/s offered") {
		t.Fatalf("flash-open: ratio %v, notes %v", open.RatioToCeiling, open.Notes)
	}
	none := report.Run{Scenario: "sellout", Target: "ticketd", Unit: "pairs", Mode: "open", Rate: 20000, AchievedRate: 4100, Saturated: true}
	(&comparisons{}).attach(&none)
	if none.RatioToCeiling != nil || !strings.Contains(strings.Join(none.Notes, " "), "neither the HTTP ceiling nor the baseline ran") {
		t.Fatalf("no comparisons: notes %v", none.Notes)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -1500: "-1,500"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestRoomTargets: issue 20's targets are judged on queue-sellout's
// figures; a rate the run did not offer and a figure it could not measure
// are "not measured" (with the run's reason), never passed.
func TestRoomTargets(t *testing.T) {
	r := report.Run{Scenario: scenario.QueueSellout.Name(), Target: "ticketd", Mode: "open", IntegrityOK: true, Ops: ops("join"),
		Notes: []string{"not measured: " + scenario.FigQueueReturnP99 + ": no pass lapsed"},
		Figures: []report.Figure{
			{Name: scenario.FigQueueJoinRate, Value: 1900}, {Name: scenario.FigQueueJoinOffered, Value: 2000},
			{Name: scenario.FigQueueJoinP99, Value: 20}, {Name: scenario.FigQueuePollAsked, Value: 9000},
			{Name: scenario.FigQueueFirstPass, Value: 0.1}, {Name: scenario.FigQueueWaveP99, Value: 2},
			{Name: scenario.FigQueueSpearman, Value: 0.9995}, {Name: scenario.FigQueueSoldOutP99, Value: 900},
			{Name: scenario.FigQueueRedisCPU, Value: 350}, {Name: scenario.FigQueueRedisPerWait, Value: 450},
		}}
	ts := judge(&report.Suite{Runs: []report.Run{r}}, false)
	for prefix, want := range map[string]string{
		"issue 20, queue-sellout: joins":                   report.NotMeasured,
		"issue 20, queue-sellout: join p99":                report.NotMeasured,
		"issue 20, queue-sellout: status polls":            report.NotMeasured,
		"issue 20, queue-sellout: first pass":              report.Pass,
		"issue 20, queue-sellout: the initial wave":        report.Miss,
		"issue 20, queue-sellout: returned stock":          report.NotMeasured,
		"issue 20, queue-sellout: Spearman":                report.Pass,
		"issue 20, queue-sellout: sold-out broadcast":      report.Miss,
		"issue 20, queue-sellout: Redis CPU per admitted":  report.Pass,
		"issue 20, queue-sellout: Redis memory per waiter": report.Miss,
	} {
		if got := status(ts, prefix); got != want {
			t.Errorf("%s: %s, want %s", prefix, got, want)
		}
	}
	// an admission order off the committed one is unfair: a failure
	r.Figures[6] = report.Figure{Name: scenario.FigQueueSpearman, Value: 0.99}
	if got := status(judge(&report.Suite{Runs: []report.Run{r}}, false), "issue 20, queue-sellout: Spearman"); got != report.Fail {
		t.Errorf("rho 0.99: %s, want FAIL", got)
	}
	for _, tg := range ts {
		if strings.HasPrefix(tg.Name, "issue 20, queue-sellout: returned") && !strings.Contains(tg.Got, "no pass lapsed") {
			t.Errorf("returned stock: got %q, want the run's reason", tg.Got)
		}
	}
	if got := status(judge(&report.Suite{}, false), "issue 20"); got != "absent" {
		t.Errorf("without the run: %s, want no issue 20 target", got)
	}
}
