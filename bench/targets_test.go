package main

import (
	"strings"
	"testing"

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
			RatioToBaseline: &ratio, BaselinePerS: &base, Ops: ops("pair")},
		{Scenario: "flash-open", Target: "ticketd", Mode: "open", Rate: 5000, IntegrityOK: true, Ops: ops("confirm", "pair")},
	}}
	ts := judge(s, false)
	for prefix, want := range map[string]string{
		"flash, closed loop, capacity": report.Pass, "flash, closed loop: against": report.Pass,
		"flash, open loop": report.Pass, "sell-out": report.NotMeasured, "memory": report.NotMeasured,
		"integrity after": report.Pass, "the standard suite": "absent",
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

// TestJudgeReadsAnOpenFlashRunAsTheOpenLoopTarget: "-scenario flash -rate
// 5000" is an open-loop run; its throughput is the offered rate, so it must
// never be judged as the closed-loop maximum.
func TestJudgeReadsAnOpenFlashRunAsTheOpenLoopTarget(t *testing.T) {
	s := &report.Suite{Runs: []report.Run{
		{Scenario: "flash", Target: "ticketd", Mode: "open", Rate: 5000, ThroughputPerS: 16000, IntegrityOK: true, Ops: ops("confirm", "pair")},
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
			{Name: scenario.FigSelloutTime, Value: 2.5}}}
	if got := status(judge(&report.Suite{Runs: []report.Run{run}}, false), "sell-out"); got != report.Pass {
		t.Fatalf("exact sell-out: %s", got)
	}
	run.Figures[0].Value = 9_999
	if got := status(judge(&report.Suite{Runs: []report.Run{run}}, false), "sell-out"); got != report.Fail {
		t.Fatalf("one ticket short: %s", got)
	}
}

func TestSingleJSONCarriesComparisonsAndTargets(t *testing.T) {
	s := &report.Suite{Runs: []report.Run{{Scenario: "ceiling-http", Target: "canned fasthttp"}, {Scenario: "flash", Target: "ticketd"}},
		Targets: []report.Target{{Name: "x"}}, Notes: []string{"n"}}
	r := single(s)
	if r.Scenario != "flash" || len(r.Comparisons) != 1 || len(r.Targets) != 1 || len(r.Notes) != 1 {
		t.Fatalf("single = %+v", r)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -1500: "-1,500"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}
