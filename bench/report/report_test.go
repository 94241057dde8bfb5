package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

func sample() *Suite {
	ceil, base, ratio, bph := 23000.0, 400.0, 7.5, 210.0
	flash := Run{Scenario: "flash", Target: "ticketd", Mode: "closed", Unit: "pairs", Concurrency: 64, DurationS: 20,
		ThroughputPerS: 3000, RequestsPerS: 6000, LatencyOp: "pair", P50Ms: 15, P99Ms: 40, P999Ms: 50,
		Ops: []load.OpStats{{Name: "pair", Count: 60000, P50: 15, P99: 40, P999: 50, Max: 60,
			Curve: []load.CurvePoint{{Percentile: 0, Ms: 1}, {Percentile: 50, Ms: 15}, {Percentile: 99, Ms: 40}, {Percentile: 100, Ms: 60}}}},
		Errors: map[string]int64{"timeout": 2}, IntegrityOK: false,
		Integrity:   integrity.Checks{{Name: "flash: no oversell", Status: integrity.Fail, Detail: "sold 10001 of 10000"}},
		CeilingPerS: &ceil, BaselinePerS: &base, RatioToBaseline: &ratio, RedisBytesPerHold: &bph,
		Series: []load.Second{{T: 1, Units: 2900, Requests: 5800, P99: 39}, {T: 2, Units: 3100, Requests: 6200, P99: 41}},
		CPU:    []CPUShare{{Process: "ticketd", Cores: 0.73, MicrosPerUnit: 243.3}, {Process: "load generator", Cores: 0.31}}}
	flash.Normalize()
	return &Suite{StartedAt: time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC), DurationS: 200, Machine: Machine{CPUs: 2},
		Target: "test", Runs: []Run{flash},
		Targets: []Target{{Name: "flash pairs", Want: ">= 15,000", Got: "3,000", Status: Fail}}}
}

// TestRunJSONKeys: the keys the issue promises are in every run's JSON,
// errors as an object of code to count.
func TestRunJSONKeys(t *testing.T) {
	b, err := json.Marshal(sample().Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "throughput_per_s", "p50_ms", "p99_ms", "p999_ms", "errors", "integrity_ok",
		"ceiling_per_s", "baseline_per_s", "redis_bytes_per_hold", "cpu"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
	if e, ok := m["errors"].(map[string]any); !ok || e["timeout"] != float64(2) {
		t.Fatalf("errors = %v, want {timeout: 2}", m["errors"])
	}
	var empty Run
	empty.Normalize()
	b, _ = json.Marshal(empty)
	if !bytes.Contains(b, []byte(`"errors":{}`)) || !bytes.Contains(b, []byte(`"ceiling_per_s":null`)) {
		t.Fatalf("an empty run must still carry errors {} and null comparisons: %s", b)
	}
}

func TestTableShowsFailuresAndTargets(t *testing.T) {
	var b bytes.Buffer
	Table(&b, sample())
	out := b.String()
	for _, want := range []string{"flash", "3,000", "40.0", "FAIL", "no oversell", "sold 10001 of 10000", "timeout 2", "want >= 15,000", "integrity FAILED",
		"CPU by process", "243 us/pair"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestHTMLIsSelfContained: the report opens without a network: no
// scripts, no external style sheets or images, the plots inline.
func TestHTMLIsSelfContained(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "r.html")
	if err := WriteHTML(path, sample()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := string(b)
	for _, bad := range []string{"<script", "src=", `href="http`, "@import", "url("} {
		if strings.Contains(h, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if n := strings.Count(h, "<svg"); n < 3 {
		t.Errorf("%d inline plots, want the latency curve, throughput and p99 over time", n)
	}
	for _, want := range []string{"flash: latency by percentile", "flash: throughput over time", "no oversell", "FAILED",
		"CPU per pair</th>", "<td>ticketd</td><td class=\"n\">0.73</td><td class=\"n\">243</td>"} {
		if !strings.Contains(h, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestTableShowsTheCostOfDurabilityAndTheSchedule: the durable run is
// printed against the run without persistence, and each open loop with
// the arrivals it began against those intended, warned when behind.
func TestTableShowsTheCostOfDurabilityAndTheSchedule(t *testing.T) {
	s := sample()
	durable := s.Runs[0]
	durable.Scenario, durable.ThroughputPerS, durable.P99Ms = "flash-durable", 2400, 60
	durable.VsNonDurable = durable.Against(&s.Runs[0])
	behind := FromResult("flash-open", "ticketd", &load.Result{Mode: "open", Unit: "pairs", Rate: 5000, AchievedRate: 4000,
		Workers: 1024, Elapsed: time.Second}, "pair")
	saturated := FromResult("sellout", "ticketd", &load.Result{Mode: "open", Unit: "pairs", Rate: 20000, AchievedRate: 4000,
		Saturated: true, Workers: 1024, Elapsed: time.Second}, "pair")
	onTime := FromResult("flash-open", "ticketd", &load.Result{Mode: "open", Unit: "pairs", Rate: 5000, AchievedRate: 4990,
		Workers: 1024, Elapsed: time.Second}, "pair")
	// Only a generator that fell behind is a warning: a target that did not
	// keep up is what an overload run (the sell-out) is for.
	if len(onTime.Warnings) != 0 || len(behind.Warnings) != 1 || len(saturated.Warnings) != 0 || len(saturated.Notes) != 1 {
		t.Fatalf("warnings: on time %v, behind %v, saturated %v (notes %v)", onTime.Warnings, behind.Warnings, saturated.Warnings, saturated.Notes)
	}
	replicated := s.Runs[0]
	replicated.Scenario, replicated.ThroughputPerS, replicated.P99Ms = "flash-replicated", 2700, 50
	replicated.VsUnreplicated = replicated.Against(&s.Runs[0])
	s.Runs = append(s.Runs, durable, replicated, behind, saturated)
	var b bytes.Buffer
	Table(&b, s)
	out := b.String()
	for _, want := range []string{
		"flash-durable vs flash: throughput 2,400 vs 3,000 pairs/s = 0.80x; p99 pair 60.0 vs 40.0 ms = 1.50x",
		"== Cost of a replica waited for",
		"flash-replicated vs flash: throughput 2,700 vs 3,000 pairs/s = 0.90x; p99 pair 50.0 vs 40.0 ms = 1.25x",
		"achieved 4,000/s (80%)  BEHIND: the load generator fell behind",
		"achieved 4,000/s (20%)  behind: ticketd did not keep up",
		"WARNING flash-open: the load generator fell behind: it began 4,000 arrivals/s of the 5,000/s intended (80%) while workers were free",
		"sellout        note: open loop began 4,000 arrivals/s of the 20,000/s intended (20%): all 1024 workers were busy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var h bytes.Buffer
	if err := HTML(&h, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cost of durability against flash", "0.80x here", "cost of a replica waited for against flash", "0.90x here", "4,000 arrivals/s begun of 5,000/s intended", "WARNING: the load generator fell behind"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}
