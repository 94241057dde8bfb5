package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
)

// Table writes the suite as terminal tables: runs, latencies per
// operation, answers by code, integrity, figures and targets.
func Table(w io.Writer, s *Suite) {
	fmt.Fprintf(w, "\nticketd bench  %s  %d CPUs  %s  %s  target: %s  took %.0fs\n",
		s.StartedAt.Format("2006-01-02 15:04:05"), s.Machine.CPUs, s.Machine.GoVersion, s.Machine.OS, s.Target, s.DurationS)

	section(w, "Runs (throughput = completed units per second over the whole run; latency of latency_op; no warm-up excluded)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\ttarget\tmode\tthroughput\tunit\treq/s\tp50 ms\tp99 ms\tp99.9 ms\tlatency of\terrors\tintegrity\tx ceiling\tx baseline\t")
	for _, r := range s.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n",
			r.Scenario, r.Target, mode(r), num(r.ThroughputPerS), r.Unit, num(r.RequestsPerS),
			ms(r.P50Ms), ms(r.P99Ms), ms(r.P999Ms), r.LatencyOp, total(r.Errors), integrityWord(r), ratio(r.RatioToCeiling), ratio(r.RatioToBaseline))
	}
	tw.Flush()
	for _, r := range s.Runs {
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "  WARNING %s: %s\n", r.Scenario, warn)
		}
	}
	openLoops(w, s)
	durability(w, s)
	storefront(w, s)

	section(w, "Latency by operation, ms (open loop: from the intended start; confirm: from its send)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\top\tcount\tmean\tp50\tp90\tp99\tp99.9\tmax\t")
	for _, r := range s.Runs {
		for _, o := range r.Ops {
			if o.Count == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, o.Name, o.Count,
				ms(o.Mean), ms(o.P50), ms(o.P90), ms(o.P99), ms(o.P999), ms(o.Max))
		}
	}
	tw.Flush()

	section(w, "CPU by process over the timed run (from /proc): cores busy, and microseconds of CPU per unit")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tprocess\tcores\tus per unit\t")
	for _, r := range s.Runs {
		for _, c := range r.CPU {
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t\n", r.Scenario, c.Process, c.Cores, perUnit(c.MicrosPerUnit, r.Unit))
		}
	}
	tw.Flush()

	redisUse(w, s)

	section(w, "Answers by code (errors: unexpected, transport errors as their own codes; rejections: expected under load)")
	for _, r := range s.Runs {
		fmt.Fprintf(w, "  %-14s errors: %s\n", r.Scenario, codes(r.Errors))
		if len(r.Rejections) > 0 {
			fmt.Fprintf(w, "  %-14s rejections: %s\n", "", codes(r.Rejections))
		}
	}

	section(w, "Integrity (\"not checked\" is never counted as passed)")
	for _, r := range s.Runs {
		for _, c := range r.Integrity {
			fmt.Fprintf(w, "  %-11s %-14s %s\n  %-26s   %s\n", c.Status, r.Scenario, c.Name, "", c.Detail)
		}
	}

	section(w, "Figures")
	for _, r := range s.Runs {
		for _, f := range r.Figures {
			fmt.Fprintf(w, "  %-14s %-70s %s %s\n", r.Scenario, f.Name, num(f.Value), f.Unit)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %-14s note: %s\n", r.Scenario, n)
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}

	section(w, "Targets (set on a 2-core machine with the load generator on it; speed judged as CPU per unit or a ratio, so any machine "+
		"compares: FAIL broken integrity or errors, MISS a cost or speed not reached, info a figure of this machine's size)")
	for _, t := range s.Targets {
		fmt.Fprintf(w, "  %-12s %s\n", t.Status, t.Name)
		if t.Today != "" {
			fmt.Fprintf(w, "  %-12s   today %s\n", "", t.Today)
		}
		fmt.Fprintf(w, "  %-12s   want %s\n  %-12s   got  %s\n", "", t.Want, "", t.Got)
	}
	verdict := "PASSED"
	if !s.IntegrityOK {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "\nintegrity %s\n", verdict)
}

// redisUse writes what each run asked of Redis per unit, beside the CPU
// table; nothing when no run measured it.
func redisUse(w io.Writer, s *Suite) {
	titled := false
	var tw *tabwriter.Writer
	for _, r := range s.Runs {
		u := r.Redis
		if u == nil {
			continue
		}
		if !titled {
			section(w, "Redis per unit over the timed run: round trips (ticketd_redis_round_trips_total of ticketd's API nodes) and "+
				"commands (INFO commandstats of the whole Redis: those inside scripts included, every client's)")
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "run\tunit\tround trips\tcommands\tscripts\t")
			titled = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, one(r.Unit), maybe(u.RoundTripsPerUnit), maybe(u.CommandsPerUnit), maybe(u.ScriptsPerUnit))
	}
	if !titled {
		return
	}
	tw.Flush()
	for _, r := range s.Runs {
		if u := r.Redis; u != nil {
			if u.ByCommand != "" {
				fmt.Fprintf(w, "  %s, calls per %s by command ((w): write): %s\n", r.Scenario, one(r.Unit), u.ByCommand)
			}
			if u.ByScriptTime != "" {
				fmt.Fprintf(w, "  %s, Redis time by script and command (sampled for 0.2 s, 1 s into the run): %s\n", r.Scenario, u.ByScriptTime)
			}
			for _, why := range u.Why {
				fmt.Fprintf(w, "  %s: %s\n", r.Scenario, why)
			}
		}
	}
}

// maybe formats a figure that may not have been measured ("-").
func maybe(v *float64) string {
	if v == nil {
		return "-"
	}
	return fixed2(*v)
}

// openLoops writes, for each open loop, the arrivals it began per second
// against the rate intended.
func openLoops(w io.Writer, s *Suite) {
	var open []Run
	for _, r := range s.Runs {
		if r.Mode == "open" && r.Rate > 0 {
			open = append(open, r)
		}
	}
	if len(open) == 0 {
		return
	}
	section(w, "Open loops: arrivals begun per second against the schedule")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range open {
		verdict := "on schedule"
		switch {
		case r.GeneratorBehind():
			verdict = "BEHIND: the load generator fell behind"
		case r.Behind():
			verdict = "behind: ticketd did not keep up, arrivals waited for a worker"
		}
		fmt.Fprintf(tw, "  %s\tintended %s/s\tachieved %s/s (%.0f%%)\t%s\n", r.Scenario, num(r.Rate), num(r.AchievedRate),
			100*r.AchievedRate/r.Rate, verdict)
	}
	tw.Flush()
}

// durability writes the cost of durability (each run on durable Redis
// against the same load without persistence) and the cost of waiting for
// a replica (each run whose payments WAIT for one against the same
// durable Redis without a replica).
func durability(w io.Writer, s *Suite) {
	versusSection(w, s, "Cost of durability (Redis with deploy/redis.conf: AOF, appendfsync always; against Redis without persistence, same invocation)",
		func(r Run) *Versus { return r.VsNonDurable }, costLine)
	versusSection(w, s, "Cost of a replica waited for (deploy/redis.conf primary with one replica, WAIT 1 after every payment; against the same primary alone, no WAIT; in turns)",
		func(r Run) *Versus { return r.VsUnreplicated }, costLine)
}

// costLine is a run against the run it was measured in turns with.
func costLine(r Run, v *Versus) string {
	return fmt.Sprintf("%s vs %s: throughput %s vs %s %s/s = %sx; p99 %s %s vs %s ms = %sx", r.Scenario, v.Run,
		num(r.ThroughputPerS), num(v.ThroughputPerS), r.Unit, fixed2(v.ThroughputRatio),
		r.LatencyOp, ms(r.P99Ms), ms(v.P99Ms), fixed2(v.P99Ratio))
}

// storefront writes each storefront run beside the partner flash run of
// the same invocation.
func storefront(w io.Writer, s *Suite) {
	versusSection(w, s, "Storefront beside the partner flash run (same invocation; a storefront buyer makes 4 or more calls, a partner pair 2)",
		func(r Run) *Versus { return r.VsPartnerFlash }, func(r Run, v *Versus) string {
			return fmt.Sprintf("%s: %s %s/s (%s req/s) vs %s %s %s/s (%s req/s) = %sx; p99 %s %s vs %s %s ms", r.Scenario,
				num(r.ThroughputPerS), r.Unit, num(r.RequestsPerS), v.Run, num(v.ThroughputPerS), v.Unit, num(v.RequestsPerS),
				fixed2(v.ThroughputRatio), r.LatencyOp, ms(r.P99Ms), v.LatencyOp, ms(v.P99Ms))
		})
}

// versusSection writes, under title, a line for each run compared with
// another (vs not nil); nothing when there is none.
func versusSection(w io.Writer, s *Suite, title string, vs func(Run) *Versus, line func(r Run, v *Versus) string) {
	titled := false
	for _, r := range s.Runs {
		v := vs(r)
		if v == nil {
			continue
		}
		if !titled {
			section(w, title)
			titled = true
		}
		fmt.Fprintln(w, "  "+line(r, v))
	}
}

// perUnit formats microseconds of CPU per unit ("122 us/pair").
func perUnit(us float64, unit string) string {
	if us <= 0 {
		return "-"
	}
	return num(us) + " us/" + one(unit)
}

// one is the singular of a unit ("pairs" -> "pair").
func one(unit string) string { return strings.TrimSuffix(unit, "s") }

func section(w io.Writer, title string) { fmt.Fprintf(w, "\n== %s\n", title) }

func mode(r Run) string {
	switch {
	case r.Mode == "open":
		return "open " + num(r.Rate) + "/s"
	case r.Concurrency > 0:
		return r.Mode + " c=" + strconv.Itoa(r.Concurrency)
	}
	return r.Mode
}

func integrityWord(r Run) string {
	switch {
	case r.Interrupted:
		return "partial"
	case len(r.Integrity) == 0:
		return "-"
	case !r.IntegrityOK:
		return "FAIL"
	}
	for _, c := range r.Integrity {
		if c.Status == integrity.NotChecked {
			return "pass*"
		}
	}
	return "pass"
}

// num formats a figure with thousands separators and no more precision
// than it deserves.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100 || v <= -100:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 10 || v <= -10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ms(v float64) string {
	if v == 0 {
		return "-"
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return num(v)
}

func ratio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fixed2(*v)
}

// fixed2 formats a ratio with two decimals ("0.80").
func fixed2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func codes(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range load.SortedCodes(m) {
		parts = append(parts, fmt.Sprintf("%s %s", k, group(strconv.FormatInt(m[k], 10))))
	}
	return strings.Join(parts, ", ")
}
