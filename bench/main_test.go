package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
)

func TestSelectionTakesOneNameAListOrAll(t *testing.T) {
	got := func(v string) string {
		sel, err := selection(v)
		if err != nil {
			return "error"
		}
		var names []string
		for _, s := range sel {
			names = append(names, s.Name())
		}
		return strings.Join(names, ",")
	}
	var suite []string
	for _, s := range scenario.All {
		suite = append(suite, s.Name())
	}
	// A list runs in the suite's order, each scenario once.
	for in, want := range map[string]string{
		"storefront-flash":              "storefront-flash",
		"storefront-flash,flash":        "flash,storefront-flash",
		"flash, storefront-seats,flash": "flash,storefront-seats",
		"flash,nope":                    "error",
		"":                              "error",
		"all":                           strings.Join(suite, ","),
		"queue-sellout":                 "queue-sellout",
		"queue-sellout,flash":           "flash,queue-sellout",
	} {
		if g := got(in); g != want {
			t.Errorf("selection(%q) = %s, want %s", in, g, want)
		}
	}
	if !strings.Contains(got("all"), "storefront-flash,storefront-seats") {
		t.Fatalf("the standard suite lacks the storefront scenarios: %s", got("all"))
	}
	if got("flash-replicated") != "flash-replicated" || !strings.Contains(got("all"), "flash-durable,flash-replicated") {
		t.Fatalf("flash-replicated: alone %s, in the suite %s", got("flash-replicated"), got("all"))
	}
}

// TestStorefrontRunsStandBesideThePartnerFlash: each storefront run of the
// invocation is compared with the closed-loop flash run, in the table too;
// without one, a note says how to get it.
func TestStorefrontRunsStandBesideThePartnerFlash(t *testing.T) {
	runs := []report.Run{
		{Scenario: "flash", Target: "ticketd", Mode: "closed", Unit: "pairs", ThroughputPerS: 8000, RequestsPerS: 16000, LatencyOp: "pair", P99Ms: 20, Ops: ops("pair")},
		{Scenario: scenario.StorefrontFlash.Name(), Target: "ticketd", Mode: "closed", Unit: "registrations", ThroughputPerS: 2000, RequestsPerS: 8800,
			LatencyOp: "buyer", P99Ms: 40, Ops: ops("buyer")},
	}
	besideFlash(runs)
	v := runs[1].VsPartnerFlash
	if v == nil || v.ThroughputRatio != 0.25 || v.Unit != "pairs" || v.RequestsPerS != 16000 || runs[0].VsPartnerFlash != nil {
		t.Fatalf("storefront beside flash: %+v", v)
	}
	var out bytes.Buffer
	report.Table(&out, &report.Suite{Runs: runs, IntegrityOK: true})
	if !strings.Contains(out.String(), "storefront-flash: 2,000 registrations/s (8,800 req/s) vs flash 8,000 pairs/s (16,000 req/s) = 0.25x") {
		t.Fatalf("table:\n%s", out.String())
	}

	alone := runs[1:]
	alone[0].VsPartnerFlash = nil
	besideFlash(alone)
	if alone[0].VsPartnerFlash != nil || len(alone[0].Notes) != 1 || !strings.Contains(alone[0].Notes[0], "-scenario flash,storefront-flash") {
		t.Fatalf("alone: %+v", alone[0])
	}
}

// TestScenariosInTurnsSayWhyTheyDidNotRun: against -target (no ticketd of
// the bench's own) and -redis-cluster, flash-durable and flash-replicated
// start nothing and say why.
func TestScenariosInTurnsSayWhyTheyDidNotRun(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func(context.Context, *deployment, scenario.Options) ([]report.Run, string)
		d    *deployment
		want string
	}{
		{"flash-durable", runDurable, &deployment{}, "flash-durable not run: -target measures a running deployment, whose Redis persistence is its own"},
		{"flash-replicated", runReplicated, &deployment{}, "flash-replicated not run: -target measures a running deployment, whose Redis replicas and TICKETD_REDIS_WAIT_REPLICAS are its own"},
		{"flash-durable", runDurable, &deployment{cluster: &procs.Cluster{}}, "flash-durable not run: -redis-cluster"},
		{"flash-replicated", runReplicated, &deployment{cluster: &procs.Cluster{}}, "flash-replicated not run: -redis-cluster"},
	} {
		runs, skip := c.run(ctx, c.d, scenario.Options{})
		if len(runs) != 0 || !strings.HasPrefix(skip, c.want) {
			t.Errorf("%s: runs %v, skip %q, want %q", c.name, runs, skip, c.want)
		}
	}
}

func TestProfilePathNamesEachScenario(t *testing.T) {
	if got := profilePath("out/cpu.prof", "flash", false); got != "out/cpu.prof" {
		t.Errorf("one scenario: %s", got)
	}
	if got := profilePath("out/cpu.prof", "storefront-seats", true); got != "out/cpu-storefront-seats.prof" {
		t.Errorf("several: %s", got)
	}
	if got := profilePath("cpu", "flash", true); got != "cpu-flash" {
		t.Errorf("no extension: %s", got)
	}
}
