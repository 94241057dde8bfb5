package main

import (
	"math"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/report"
)

// costTarget is the issue 19 target whose name starts with prefix.
func costTarget(t *testing.T, ts []report.Target, prefix string) report.Target {
	t.Helper()
	for _, tg := range ts {
		if strings.HasPrefix(tg.Name, issue19+prefix) {
			return tg
		}
	}
	t.Fatalf("no target %q", prefix)
	return report.Target{}
}

func cpu(rows map[string]float64) []report.CPUShare {
	var out []report.CPUShare
	for p, us := range rows {
		out = append(out, report.CPUShare{Process: p, Cores: 0.5, MicrosPerUnit: us})
	}
	return out
}

// TestCostTargetsAreRatiosWithinTheRun: each cost target divides figures
// of the same run (the canned server's CPU per pair, one claim-script
// call at the EVALSHA rate, the flash pair) and passes at its bound, not
// past it.
func TestCostTargetsAreRatiosWithinTheRun(t *testing.T) {
	if got := claimCalls(64, 135_866); math.Abs(got-8.6954) > 1e-3 {
		t.Fatalf("64 us at 135,866 EVALSHA/s = %.4f calls, want 8.6954 (the issue's 8.7)", got)
	}
	ceilings := []report.Run{
		{Scenario: "ceiling-http", Target: "canned fasthttp", Unit: "pairs", CPU: cpu(map[string]float64{cannedRow: 10})},
		{Scenario: "ceiling-redis", Target: "redis-benchmark", Unit: "EVALSHA", ThroughputPerS: 100_000}, // 10 us a call
	}
	suite := func(ticketd, redis, postgres, machine, sfMachine float64) *report.Suite {
		runs := append([]report.Run{}, ceilings...)
		return &report.Suite{Runs: append(runs,
			report.Run{Scenario: "flash", Target: "ticketd", Mode: "closed", Unit: "pairs", IntegrityOK: true, Ops: ops("pair"),
				CPU: cpu(map[string]float64{ticketdRow: ticketd, "redis": redis, postgresRow: postgres, cpuuse.Machine: machine})},
			report.Run{Scenario: "storefront-flash", Target: "ticketd", Mode: "closed", Unit: "registrations", IntegrityOK: true, Ops: ops("buyer"),
				CPU: cpu(map[string]float64{cpuuse.Machine: sfMachine, "redis 127.0.0.1:7001": 60, "redis 127.0.0.1:7002": 62})})}
	}
	type want struct {
		status string
		value  float64
	}
	check := func(s *report.Suite, wants map[string]want) {
		t.Helper()
		ts := judge(s, false)
		for prefix, w := range wants {
			tg := costTarget(t, ts, prefix)
			if tg.Status != w.status || tg.Value == nil || math.Abs(*tg.Value-w.value) > 1e-9 || tg.Today == "" {
				t.Errorf("%s: %s %v (%s), want %s %v and today's figure", prefix, tg.Status, tg.Value, tg.Got, w.status, w.value)
			}
		}
	}
	// At the bounds: 30 / 10 = 3x, 47.5 us / 10 us = 4.75 calls, 20 / 10 = 2x,
	// 200 / 100 = 2x the flash pair, (60 + 62) / 10 = 12.2 calls.
	check(suite(30, 47.5, 20, 100, 200), map[string]want{
		"flash: ticketd":              {report.Pass, 3},
		"flash: Redis":                {report.Pass, 4.75},
		"flash: Postgres":             {report.Pass, 2},
		"storefront-flash: machine":   {report.Pass, 2},
		"storefront-flash: Redis CPU": {report.Pass, 12.2},
	})
	// Just past them.
	check(suite(30.3, 48, 20.5, 100, 201), map[string]want{
		"flash: ticketd":            {report.Miss, 3.03},
		"flash: Redis":              {report.Miss, 4.8},
		"flash: Postgres":           {report.Miss, 2.05},
		"storefront-flash: machine": {report.Miss, 2.01},
	})

	// Without the ceilings the ratios have no denominator: not measured,
	// never passed.
	s := suite(30, 47.5, 20, 100, 200)
	s.Runs = s.Runs[2:]
	ts := judge(s, false)
	for _, prefix := range []string{"flash: ticketd", "flash: Redis", "flash: Postgres", "storefront-flash: Redis CPU", "storefront-seats: ticketd"} {
		if tg := costTarget(t, ts, prefix); tg.Status != report.NotMeasured || tg.Value != nil || tg.Got == "" {
			t.Errorf("%s without the ceilings: %+v", prefix, tg)
		}
	}
	if tg := costTarget(t, ts, "storefront-flash: machine"); tg.Status != report.Pass {
		t.Errorf("the storefront against the flash pair needs no ceiling: %+v", tg)
	}

	// The older targets keep their bounds beside issue 19's.
	ratio, base := 12.0, 1000.0
	s = suite(30, 47.5, 20, 100, 200)
	s.Runs[2].RatioToBaseline, s.Runs[2].BaselinePerS = &ratio, &base
	ts = judge(s, false)
	if got := status(ts, "flash, closed loop: against"); got != report.Pass {
		t.Errorf("12x against the baseline, older target (>= 10x): %s", got)
	}
	if tg := costTarget(t, ts, "flash, closed loop: against"); tg.Status != report.Miss || *tg.Value != 12 {
		t.Errorf("12x against the baseline, issue 19 (>= 15x): %+v", tg)
	}
}
