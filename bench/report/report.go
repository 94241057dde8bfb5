// Package report presents bench results three ways: a table on the
// terminal, a JSON file for machines, and a self-contained HTML report
// with inline SVG plots (no scripts, no network) for people.
package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

// Run is one measured run: a scenario against ticketd, or a comparison
// (ceiling, baseline). The JSON keys are the bench's output contract.
type Run struct {
	Scenario string `json:"scenario"`
	// Target is what was measured: ticketd, baseline (Postgres row locks),
	// ceiling-http (canned fasthttp) or ceiling-redis (redis-benchmark).
	Target string  `json:"target"`
	Mode   string  `json:"mode"` // open, closed, or redis-benchmark
	Unit   string  `json:"unit"`
	Rate   float64 `json:"rate_per_s,omitempty"` // open loop: the arrival rate asked for
	// AchievedRate is, in an open loop, the arrivals begun per second;
	// Saturated says every worker (the most arrivals in flight) was busy at
	// times, so arrivals waited for one: the target did not keep up.
	AchievedRate float64 `json:"achieved_rate_per_s,omitempty"`
	Saturated    bool    `json:"saturated,omitempty"`
	Concurrency  int     `json:"concurrency"`
	DurationS    float64 `json:"duration_s"`
	Arrivals     int64   `json:"arrivals"`
	Units        int64   `json:"units"`
	Requests     int64   `json:"requests"`

	ThroughputPerS float64 `json:"throughput_per_s"`
	RequestsPerS   float64 `json:"requests_per_s"`
	LatencyOp      string  `json:"latency_op"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	P999Ms         float64 `json:"p999_ms"`

	Ops        []load.OpStats   `json:"ops"`
	Errors     map[string]int64 `json:"errors"`
	Rejections map[string]int64 `json:"rejections"`

	IntegrityOK bool             `json:"integrity_ok"`
	Integrity   integrity.Checks `json:"integrity"`

	// CeilingPerS is the canned-HTTP ceiling in pairs/s (requests/s / 2);
	// CeilingRedisPerS the claim script alone, EVALSHA/s.
	CeilingPerS      *float64 `json:"ceiling_per_s"`
	CeilingRedisPerS *float64 `json:"ceiling_redis_evalsha_per_s"`
	BaselinePerS     *float64 `json:"baseline_per_s"`
	RatioToCeiling   *float64 `json:"ratio_to_ceiling"`
	RatioToBaseline  *float64 `json:"ratio_to_baseline"`
	// VsNonDurable compares a run on durable Redis (flash-durable) with the
	// same load on Redis without persistence in the same invocation.
	VsNonDurable *Versus `json:"vs_non_durable"`
	// VsUnreplicated compares a run whose payments wait for a Redis
	// replica (flash-replicated: WAIT 1) with the same load on the same
	// durable Redis without a replica and without WAIT, measured in turns.
	VsUnreplicated *Versus `json:"vs_unreplicated,omitempty"`
	// VsPartnerFlash compares a storefront run with the partner flash run
	// (closed loop, reserve+confirm pairs) of the same invocation.
	VsPartnerFlash *Versus `json:"vs_partner_flash,omitempty"`

	RedisBytesPerHold         *float64 `json:"redis_bytes_per_hold"`
	RedisBytesPerPendingOrder *float64 `json:"redis_bytes_per_pending_order"`

	Figures []Figure `json:"figures"`
	// CPU is what each process on the machine spent over the timed run
	// (from /proc; empty when not measured): their sum per unit is what
	// caps throughput when the service, its stores and the load generator
	// share the machine.
	CPU []CPUShare `json:"cpu"`
	// Redis is what the run asked of Redis over the timed run, per unit;
	// nil when not measured (a run not on ticketd).
	Redis  *RedisUse     `json:"redis,omitempty"`
	Series []load.Second `json:"series"`
	Notes  []string      `json:"notes"`
	// Warnings are what makes the run's figures doubtful: a load generator
	// behind its schedule, a machine busy with other work.
	Warnings    []string `json:"warnings"`
	Interrupted bool     `json:"interrupted"`
	// Targets are the targets this run is judged on (single-scenario JSON).
	Targets []Target `json:"targets,omitempty"`
	// Comparisons are the ceiling and baseline runs behind the ratios
	// (single-scenario JSON).
	Comparisons []Run `json:"comparisons,omitempty"`
}

// CPUShare is one process's CPU over a run: cores (1 = one CPU busy the
// whole run) and microseconds of CPU per unit of throughput.
type CPUShare struct {
	Process       string  `json:"process"`
	Cores         float64 `json:"cores"`
	MicrosPerUnit float64 `json:"us_per_unit"`
}

// RedisUse is what a run asked of Redis per unit of work over its timed
// run. A figure that could not be read is nil, and Why says why.
type RedisUse struct {
	// RoundTripsPerUnit is ticketd's ticketd_redis_round_trips_total
	// (every API node's) over the run, per unit: a command or a pipeline
	// sent and answered.
	RoundTripsPerUnit *float64 `json:"round_trips_per_unit"`
	// CommandsPerUnit is the Redis server's total_commands_processed over
	// the run, per unit: those inside scripts included, and every client's.
	CommandsPerUnit *float64 `json:"commands_per_unit"`
	// ScriptsPerUnit is the EVALSHA, EVAL and FCALL calls among them.
	ScriptsPerUnit *float64 `json:"scripts_per_unit"`
	// ByCommand lists the calls per unit by command ("evalsha 2.00, hset
	// 1.00 (w)"; (w): a write).
	ByCommand string `json:"by_command,omitempty"`
	// ByScriptTime is Redis's execution time by top-level command, a
	// script by its name, as shares of a sample of the run ("order_reserve
	// 48%, order_confirm 41%"; bench/redisuse).
	ByScriptTime string   `json:"by_script_time,omitempty"`
	Why          []string `json:"why,omitempty"`
}

// Figure is a named figure beside throughput and latency.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Versus is a run's throughput and p99 against another run's.
type Versus struct {
	Run            string  `json:"run"`
	Unit           string  `json:"unit,omitempty"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	RequestsPerS   float64 `json:"requests_per_s,omitempty"`
	P99Ms          float64 `json:"p99_ms"`
	LatencyOp      string  `json:"latency_op,omitempty"`
	// ThroughputRatio and P99Ratio are this run's figure over the other's.
	ThroughputRatio float64 `json:"throughput_ratio"`
	P99Ratio        float64 `json:"p99_ratio"`
}

// Against compares r with other (nil when other has no throughput).
func (r *Run) Against(other *Run) *Versus {
	if other == nil || other.ThroughputPerS <= 0 {
		return nil
	}
	v := &Versus{Run: other.Scenario, Unit: other.Unit, ThroughputPerS: other.ThroughputPerS, RequestsPerS: other.RequestsPerS,
		P99Ms: other.P99Ms, LatencyOp: other.LatencyOp, ThroughputRatio: r.ThroughputPerS / other.ThroughputPerS}
	if other.P99Ms > 0 {
		v.P99Ratio = r.P99Ms / other.P99Ms
	}
	return v
}

// BehindShare is the share of its intended arrival rate below which an
// open loop is reported as behind its schedule.
const BehindShare = 0.95

// Behind reports whether an open loop began its arrivals slower than
// intended.
func (r *Run) Behind() bool {
	return r.Mode == "open" && r.Rate > 0 && r.AchievedRate < BehindShare*r.Rate
}

// GeneratorBehind reports whether the load generator itself fell behind:
// an open loop behind its schedule while workers were free, so the target
// got less load than asked.
func (r *Run) GeneratorBehind() bool { return r.Behind() && !r.Saturated }

// scheduleNote says why an open loop is behind its schedule: a warning
// when the load generator fell behind, a note when the target did.
func scheduleNote(r *Run) (warning, note string) {
	if !r.Behind() {
		return "", ""
	}
	got := fmt.Sprintf("began %s arrivals/s of the %s/s intended (%.0f%%)", num(r.AchievedRate), num(r.Rate), 100*r.AchievedRate/r.Rate)
	if r.Saturated {
		return "", "open loop " + got + ": all " + strconv.Itoa(r.Concurrency) +
			" workers were busy at times, so arrivals waited for one (the target did not keep up); each arrival's latency counts from its intended start"
	}
	return "the load generator fell behind: it " + got + " while workers were free, so the target got less load than asked and its figures are for a lighter load than intended", ""
}

// Target statuses. Miss is a target of cost or speed (a ratio within one
// run, CPU per unit, a latency) not reached: the code costs more than the
// target, the run is sound. Info is a figure shown, not judged: what it
// measured on this machine depends on the machine's size (a latency at a
// rate the machine had no room for).
const (
	Pass        = "PASS"
	Fail        = "FAIL"
	Miss        = "MISS"
	NotMeasured = "not measured"
	Info        = "info"
)

// Target is one of the targets, judged on this machine.
type Target struct {
	Name   string `json:"name"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Status string `json:"status"`
	// Today is the figure the issue that set the target measured, to read
	// Got against; Value is Got's ratio, nil when not measured.
	Today string   `json:"today,omitempty"`
	Value *float64 `json:"value,omitempty"`
}

// Suite is a whole bench invocation.
type Suite struct {
	StartedAt   time.Time `json:"started_at"`
	DurationS   float64   `json:"duration_s"`
	Machine     Machine   `json:"machine"`
	Target      string    `json:"target"`
	IntegrityOK bool      `json:"integrity_ok"`
	Runs        []Run     `json:"runs"`
	Targets     []Target  `json:"targets"`
	Notes       []string  `json:"notes"`
}

// Machine describes where the bench ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Host      string `json:"host"`
}

// FromResult fills a Run's load figures from a load result, the headline
// latency taken from latencyOp.
func FromResult(scenario, target string, res *load.Result, latencyOp string) Run {
	r := Run{Scenario: scenario, Target: target, Mode: res.Mode, Unit: res.Unit, Concurrency: res.Workers,
		DurationS: res.Elapsed.Seconds(), Arrivals: res.Arrivals, Units: res.Units, Requests: res.Requests,
		ThroughputPerS: res.UnitsPerSec(), RequestsPerS: res.RequestsPerSec(), LatencyOp: latencyOp,
		Ops: res.Ops, Errors: res.Errors, Rejections: res.Rejections, Series: res.Series, Interrupted: res.Interrupted,
		IntegrityOK: true}
	if res.Mode == "open" {
		r.Rate, r.AchievedRate, r.Saturated = res.Rate, res.AchievedRate, res.Saturated
		if warn, note := scheduleNote(&r); warn != "" {
			r.Warnings = append(r.Warnings, warn)
		} else if note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	h := res.Op(latencyOp)
	r.P50Ms, r.P99Ms, r.P999Ms = h.P50, h.P99, h.P999
	return r
}

// WriteJSON writes v, indented, to path (creating its directory).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Normalize gives nil maps and slices their empty JSON form.
func (r *Run) Normalize() {
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	if r.Rejections == nil {
		r.Rejections = map[string]int64{}
	}
	if r.Integrity == nil {
		r.Integrity = integrity.Checks{}
	}
	if r.Ops == nil {
		r.Ops = []load.OpStats{}
	}
	if r.Figures == nil {
		r.Figures = []Figure{}
	}
	if r.CPU == nil {
		r.CPU = []CPUShare{}
	}
	if r.Series == nil {
		r.Series = []load.Second{}
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
}
