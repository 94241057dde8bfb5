package report

import (
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// HTML writes the suite as one self-contained HTML page: tables and
// inline SVG plots, no script, nothing fetched from the network.
func HTML(w io.Writer, s *Suite) error {
	type runView struct {
		Run
		Mode             string
		Latency, Through template.HTML
		P99              template.HTML
	}
	data := struct {
		*Suite
		Verdict    string
		Comparison template.HTML
		Views      []runView
	}{Suite: s, Verdict: "PASSED"}
	if !s.IntegrityOK {
		data.Verdict = "FAILED"
	}
	var labels []string
	var values []float64
	for _, r := range s.Runs {
		if r.Unit == "pairs" && r.Mode == "closed" {
			labels = append(labels, r.Scenario+" ("+r.Target+")")
			values = append(values, r.ThroughputPerS)
		}
	}
	if len(labels) > 0 {
		data.Comparison = template.HTML(bars("reserve+confirm pairs per second, closed loop, same machine", "pairs/s", labels, values))
	}
	for _, r := range s.Runs {
		v := runView{Run: r, Mode: mode(r)}
		if len(r.Ops) > 0 {
			v.Latency = template.HTML(latencyPlot(r))
		}
		if len(r.Series) > 1 {
			v.Through = template.HTML(throughputPlot(r))
			v.P99 = template.HTML(p99Plot(r))
		}
		data.Views = append(data.Views, v)
	}
	return page.Execute(w, data)
}

// WriteHTML writes the HTML report to path (creating its directory).
func WriteHTML(path string, s *Suite) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := HTML(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// nines maps a percentile to the plot's x: 0 at 0%, 1 at 90%, 2 at 99%...
func nines(p float64) float64 {
	if p >= 100 {
		return 5.5
	}
	return math.Min(-math.Log10(1-p/100), 5)
}

func latencyPlot(r Run) string {
	p := &plot{title: r.Scenario + ": latency by percentile", xLabel: "percentile", yLabel: "ms (log scale)", logY: true,
		xmin: 0, xmax: 5.5, ymin: math.Inf(1), ymax: 0}
	for _, o := range r.Ops {
		if o.Count == 0 {
			continue
		}
		var pts [][2]float64
		for _, c := range o.Curve {
			v := math.Max(c.Ms, 0.01) // the plot's floor: 10 µs
			pts = append(pts, [2]float64{nines(c.Percentile), v})
			p.ymin, p.ymax = math.Min(p.ymin, v), math.Max(p.ymax, v)
		}
		p.lines = append(p.lines, series{name: o.Name, points: pts})
	}
	if len(p.lines) == 0 {
		return ""
	}
	p.ymin = math.Pow(10, math.Floor(math.Log10(p.ymin)))
	p.ymax = math.Pow(10, math.Ceil(math.Log10(math.Max(p.ymax, p.ymin*10))))
	p.yTicks = logTicks(p.ymin, p.ymax)
	p.xTicks = []tick{{0, "0%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {4, "99.99%"}, {5, "99.999%"}, {5.5, "max"}}
	return p.svg()
}

func throughputPlot(r Run) string {
	p := &plot{title: r.Scenario + ": throughput over time", xLabel: "seconds", yLabel: "per second"}
	var units, reqs [][2]float64
	for _, s := range r.Series {
		units = append(units, [2]float64{s.T, s.Units})
		reqs = append(reqs, [2]float64{s.T, s.Requests})
		p.xmax, p.ymax = math.Max(p.xmax, s.T), math.Max(p.ymax, math.Max(s.Units, s.Requests))
	}
	p.lines = []series{{name: r.Unit + "/s", points: units}, {name: "requests/s", points: reqs}}
	p.ymax *= 1.05
	p.xTicks, p.yTicks = niceTicks(p.xmax, 8, seconds), niceTicks(p.ymax, 5, num)
	return p.svg()
}

func seconds(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func p99Plot(r Run) string {
	p := &plot{title: r.Scenario + ": p99 of " + r.LatencyOp + " per second", xLabel: "seconds", yLabel: "ms"}
	var pts [][2]float64
	for _, s := range r.Series {
		pts = append(pts, [2]float64{s.T, s.P99})
		p.xmax, p.ymax = math.Max(p.xmax, s.T), math.Max(p.ymax, s.P99)
	}
	p.lines = []series{{name: "p99 " + r.LatencyOp, points: pts}}
	p.ymax = math.Max(p.ymax*1.05, 1)
	p.xTicks, p.yTicks = niceTicks(p.xmax, 8, seconds), niceTicks(p.ymax, 5, num)
	return p.svg()
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{"num": num, "ms": ms, "ratio": ratio, "fixed2": fixed2, "codes": codes, "one": one, "maybe": maybe}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ticketd bench {{.StartedAt.Format "2006-01-02 15:04"}}</title>
<style>
body{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ddd;padding:3px 8px;font-size:13px}
td.n{text-align:right}th{background:#f3f3f3}.PASS,.pass{color:#1a7f37;font-weight:bold}.FAIL{color:#cf222e;font-weight:bold}
.nm{color:#9a6700}section{border-top:2px solid #eee;margin-top:2em}.plots{display:flex;flex-wrap:wrap;gap:12px}
small{color:#666}
</style></head><body>
<h1>ticketd bench</h1>
<p>{{.StartedAt.Format "2006-01-02 15:04:05"}} &middot; {{.Machine.CPUs}} CPUs &middot; {{.Machine.GoVersion}} &middot; {{.Machine.OS}} &middot; host {{.Machine.Host}} &middot; target: {{.Target}} &middot; took {{printf "%.0f" .DurationS}} s &middot; integrity <span class="{{if .IntegrityOK}}PASS{{else}}FAIL{{end}}">{{.Verdict}}</span></p>
<h2>Targets</h2>
<table><tr><th>status</th><th>target</th><th>today (the issue's run)</th><th>want</th><th>got</th></tr>
{{range .Targets}}<tr><td class="{{if eq .Status "PASS"}}PASS{{else if or (eq .Status "FAIL") (eq .Status "MISS")}}FAIL{{else}}nm{{end}}">{{.Status}}</td><td>{{.Name}}</td><td>{{.Today}}</td><td>{{.Want}}</td><td>{{.Got}}</td></tr>
{{end}}</table>
<h2>Runs</h2>
<p><small>Throughput is completed units per second over the whole run; every request counts, no warm-up is excluded. Open-loop latencies run from each arrival's intended start (coordinated omission corrected). ceiling-http is a bare fasthttp server with canned answers driven by the same generator (pairs/s = requests/s &divide; 2); ceiling-redis is the claim script alone through redis-benchmark (EVALSHA/s); baseline is the same flow on Postgres with row locks.</small></p>
<table><tr><th>run</th><th>target</th><th>mode</th><th>throughput</th><th>unit</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>of</th><th>errors</th><th>integrity</th><th>&times; ceiling</th><th>&times; baseline</th></tr>
{{range .Views}}<tr><td><a href="#{{.Scenario}}">{{.Scenario}}</a></td><td>{{.Target}}</td><td>{{.Mode}}</td><td class="n">{{num .ThroughputPerS}}</td><td>{{.Unit}}</td><td class="n">{{num .RequestsPerS}}</td><td class="n">{{ms .P50Ms}}</td><td class="n">{{ms .P99Ms}}</td><td class="n">{{ms .P999Ms}}</td><td>{{.LatencyOp}}</td><td>{{codes .Errors}}</td><td class="{{if .IntegrityOK}}pass{{else}}FAIL{{end}}">{{if .Integrity}}{{if .IntegrityOK}}pass{{else}}FAIL{{end}}{{else}}-{{end}}</td><td class="n">{{ratio .RatioToCeiling}}</td><td class="n">{{ratio .RatioToBaseline}}</td></tr>
{{end}}</table>
{{if .Comparison}}<p>{{.Comparison}}</p>{{end}}
{{range .Notes}}<p><small>{{.}}</small></p>{{end}}
{{range .Views}}<section id="{{.Scenario}}"><h2>{{.Scenario}} <small>{{.Target}}, {{.Mode}}, {{printf "%.1f" .DurationS}} s</small></h2>
<p>{{num .ThroughputPerS}} {{.Unit}}/s &middot; {{num .RequestsPerS}} requests/s &middot; {{.Arrivals}} arrivals &middot; {{.Requests}} requests{{if .Interrupted}} &middot; <b>interrupted</b>{{end}}</p>
{{if gt .Rate 0.0}}<p>open loop: {{num .AchievedRate}} arrivals/s begun of {{num .Rate}}/s intended</p>{{end}}
{{range .Warnings}}<p class="FAIL">WARNING: {{.}}</p>{{end}}
{{with .VsPartnerFlash}}<p>beside the partner {{.Run}} run of this invocation: {{num .ThroughputPerS}} {{.Unit}}/s ({{num .RequestsPerS}} requests/s) there, {{fixed2 .ThroughputRatio}}x here; p99 of {{.LatencyOp}} {{ms .P99Ms}} ms there</p>{{end}}
{{with .VsNonDurable}}<p>cost of durability against {{.Run}} (Redis without persistence, same invocation): throughput {{num .ThroughputPerS}} there, {{fixed2 .ThroughputRatio}}x here; p99 {{ms .P99Ms}} ms there, {{fixed2 .P99Ratio}}x here</p>{{end}}
{{with .VsUnreplicated}}<p>cost of a replica waited for against {{.Run}} (the same durable Redis without a replica, no WAIT, in turns): throughput {{num .ThroughputPerS}} there, {{fixed2 .ThroughputRatio}}x here; p99 {{ms .P99Ms}} ms there, {{fixed2 .P99Ratio}}x here</p>{{end}}
<div class="plots">{{.Latency}}{{.Through}}{{.P99}}</div>
{{if .Ops}}<table><tr><th>op</th><th>count</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max (ms)</th></tr>
{{range .Ops}}{{if .Count}}<tr><td>{{.Name}}</td><td class="n">{{.Count}}</td><td class="n">{{ms .Mean}}</td><td class="n">{{ms .P50}}</td><td class="n">{{ms .P90}}</td><td class="n">{{ms .P99}}</td><td class="n">{{ms .P999}}</td><td class="n">{{ms .Max}}</td></tr>{{end}}
{{end}}</table>{{end}}
<p>errors: {{codes .Errors}}<br>rejections (expected under load): {{codes .Rejections}}</p>
{{if .Integrity}}<table><tr><th>integrity</th><th>check</th><th>numbers</th></tr>
{{range .Integrity}}<tr><td class="{{if eq .Status "pass"}}pass{{else if eq .Status "FAIL"}}FAIL{{else}}nm{{end}}">{{.Status}}</td><td>{{.Name}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{end}}
{{if .Figures}}<table><tr><th>figure</th><th>value</th></tr>
{{range .Figures}}<tr><td>{{.Name}}</td><td class="n">{{num .Value}} {{.Unit}}</td></tr>
{{end}}</table>{{end}}
{{if .CPU}}<table><tr><th>process (CPU over the timed run)</th><th>cores busy</th><th>&micro;s of CPU per {{one .Unit}}</th></tr>
{{range .CPU}}<tr><td>{{.Process}}</td><td class="n">{{printf "%.2f" .Cores}}</td><td class="n">{{if gt .MicrosPerUnit 0.0}}{{num .MicrosPerUnit}}{{else}}-{{end}}</td></tr>
{{end}}</table>{{end}}
{{$unit := .Unit}}{{with .Redis}}<table><tr><th>Redis per {{one $unit}} (timed run)</th><th>value</th></tr>
<tr><td>round trips (ticketd_redis_round_trips_total of ticketd's API nodes)</td><td class="n">{{maybe .RoundTripsPerUnit}}</td></tr>
<tr><td>commands (INFO commandstats of the whole Redis: inside scripts included, every client's)</td><td class="n">{{maybe .CommandsPerUnit}}</td></tr>
<tr><td>scripts (EVALSHA, EVAL, FCALL)</td><td class="n">{{maybe .ScriptsPerUnit}}</td></tr>
</table>{{if .ByCommand}}<p><small>calls by command ((w): write): {{.ByCommand}}</small></p>{{end}}{{if .ByScriptTime}}<p><small>Redis time by script and command (sampled for 0.2 s, 1 s into the run): {{.ByScriptTime}}</small></p>{{end}}{{range .Why}}<p><small>{{.}}</small></p>{{end}}{{end}}
{{range .Notes}}<p><small>{{.}}</small></p>{{end}}
</section>
{{end}}
</body></html>
`))
