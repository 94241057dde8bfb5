// Command bench is ticketd's bench suite: it measures how much a
// deployment holds and where it stands against the machine's ceiling and
// against the way most ticket shops do it (Postgres row locks), and checks
// after every run that the numbers add up.
//
//	make bench                                     # the standard suite, starting what it needs
//	go run ./bench -scenario flash -duration 10s -json out.json
//	go run ./bench -target http://host:8080 -admin-token T -redis-url redis://... -database-url postgres://...
//
// Without -target it builds ticketd and the baseline server with go build
// and starts each as its own process, on a fresh Postgres database and a
// fresh Redis key prefix, and removes all of it at the end (also on Ctrl-C).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/bench/ceiling"
	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
)

// openInFlight caps the arrivals of an open loop in flight at once; later
// arrivals wait for a free worker with their clocks running.
const openInFlight = 1024

// config is the command line.
type config struct {
	Scenario      string
	Duration      time.Duration
	Rate          float64
	Concurrency   int
	JSON, HTML    string
	Target        string
	AdminToken    string
	RedisURL      string
	DatabaseURL   string
	BaselineDBURL string
	KeyPrefix     string
	prefixSet     bool
	NoBaseline    bool
	NoCeiling     bool
	Strict        bool
	Allow         string
	DrainTimeout  time.Duration
	TicketdEnv    []string
	CardSecret    string
	RedisCluster  int
	Capacity      int64
	Arrivals      int64
	Profile       string
	MetricsURLs   string
	scenarios     int // how many -scenario selects
}

func main() { os.Exit(run()) }

func run() int {
	var c config
	flag.StringVar(&c.Scenario, "scenario", "all", "what to run: "+strings.Join(names(), " | ")+" | all (the standard suite); several: a comma-separated list")
	flag.DurationVar(&c.Duration, "duration", 0, "length of each timed run (0: each scenario's default)")
	flag.Float64Var(&c.Rate, "rate", 0, "open-loop arrivals (pairs) per second; with one scenario it runs it open loop, in the suite it sets flash-open's rate")
	flag.IntVar(&c.Concurrency, "concurrency", 128, "closed-loop workers (also redis-benchmark's clients); 128 is about where the flash closed loop peaks on 2 cores")
	flag.StringVar(&c.JSON, "json", "", "write the results as JSON to this file")
	flag.StringVar(&c.HTML, "html", "", "write the HTML report to this file (default bench/out/report-<time>.html; \"none\" for no report)")
	flag.StringVar(&c.Target, "target", "", "base URL of a running deployment to measure instead of starting ticketd")
	flag.StringVar(&c.AdminToken, "admin-token", os.Getenv("TICKETD_ADMIN_TOKEN"), "admin token of -target, to provision the bench catalogs")
	flag.StringVar(&c.RedisURL, "redis-url", "", "Redis of -target (memory figures, redis-benchmark); without -target, where ticketd runs (default $REDIS_URL or the local Redis)")
	flag.StringVar(&c.DatabaseURL, "database-url", "", "Postgres of -target, to check the record (without it: \"not checked\"); without -target, the server the bench creates its databases on")
	flag.StringVar(&c.BaselineDBURL, "baseline-database-url", "", "with -target: the Postgres server for the baseline's own database (default the local one)")
	flag.StringVar(&c.KeyPrefix, "key-prefix", "", "TICKETD_KEY_PREFIX of -target (found from the keys when not given)")
	flag.BoolVar(&c.NoBaseline, "no-baseline", false, "skip the Postgres baseline")
	flag.BoolVar(&c.NoCeiling, "no-ceiling", false, "skip the ceilings (canned HTTP, redis-benchmark)")
	flag.BoolVar(&c.Strict, "strict", false, "exit non-zero when a target is missed, not only when integrity fails")
	flag.StringVar(&c.Allow, "allow", "127.0.0.1/32,::1/128", "IP allowlist (CIDRs) of the bench channels: where the load comes from")
	flag.StringVar(&c.CardSecret, "card-webhook-secret", os.Getenv("TICKETD_CARD_WEBHOOK_SECRET"), "with -target: its TICKETD_CARD_WEBHOOK_SECRET, to sign the card webhooks of the storefront scenarios (without it they do not run)")
	flag.DurationVar(&c.DrainTimeout, "drain-timeout", 2*time.Minute, "how long the integrity check waits for the sync worker to write everything to Postgres")
	flag.IntVar(&c.RedisCluster, "redis-cluster", 0, "start a Redis Cluster of this many masters (at least 3; redis-server --cluster-enabled yes on loopback ports) for the ticketd the bench starts, and remove it at the end; 0: one Redis")
	flag.Int64Var(&c.Capacity, "capacity", 0, "capacity of the flash scenarios' event (0: one no run reaches); a small one makes a run of sold-out refusals, to measure what a refused buyer costs; queue-sellout's tickets (0: its default, 1,000)")
	flag.Int64Var(&c.Arrivals, "arrivals", 0, "queue-sellout's arrivals, 60% before T0 (0: its default, 10,000); with it -duration is the pre-queue window (default 10 s) and -rate the arrivals per second after T0 (default 2,000)")
	flag.StringVar(&c.Profile, "profile", "", "write the CPU profile of the ticketd the bench starts over each run's timed part to this file (go tool pprof); with several scenarios, one file each, the scenario's name before the extension")
	flag.StringVar(&c.MetricsURLs, "metrics-url", "", "with -target: base URLs of every ticketd API node, comma-separated, whose /metrics are summed for the Redis round trips (default -target)")
	ticketdEnv := flag.String("ticketd-env", "", "extra environment of the ticketd processes the bench starts, NAME=value words (\"TICKETD_REDIS_FLUSH_DELAY=200us GOGC=800\")")
	serveCanned := flag.String("serve-canned", "", "internal: serve canned responses on this address (the HTTP ceiling)")
	flag.Parse()
	c.TicketdEnv = strings.Fields(*ticketdEnv)
	flag.Visit(func(f *flag.Flag) { c.prefixSet = c.prefixSet || f.Name == "key-prefix" })

	if *serveCanned != "" {
		return serveCannedMain(*serveCanned)
	}
	for _, kv := range c.TicketdEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			fmt.Fprintf(os.Stderr, "bench: -ticketd-env: %q is not NAME=value\n", kv)
			return 2
		}
	}
	switch {
	case c.RedisCluster != 0 && c.RedisCluster < 3:
		fmt.Fprintln(os.Stderr, "bench: -redis-cluster: a Redis Cluster needs at least 3 masters")
		return 2
	case c.RedisCluster > 0 && (c.Target != "" || c.RedisURL != ""):
		fmt.Fprintln(os.Stderr, "bench: -redis-cluster starts its own cluster: not with -target or -redis-url (give a running cluster's node as -redis-url instead)")
		return 2
	case c.Capacity < 0:
		fmt.Fprintln(os.Stderr, "bench: -capacity must not be negative")
		return 2
	case c.Profile != "" && c.Target != "":
		fmt.Fprintln(os.Stderr, "bench: -profile profiles the ticketd the bench starts: with -target, read the running one's TICKETD_PPROF_ADDR")
		return 2
	case c.MetricsURLs != "" && c.Target == "":
		fmt.Fprintln(os.Stderr, "bench: -metrics-url names the nodes of -target")
		return 2
	}
	selected, err := selection(c.Scenario)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	c.scenarios = len(selected)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stack := &procs.Stack{Log: os.Stderr}
	defer stack.Close()

	s, err := runSuite(ctx, c, selected, stack)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	report.Table(os.Stdout, s)
	if err := writeOutputs(c, s); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "bench: interrupted: the figures above are partial")
		return 130
	case !s.IntegrityOK:
		fmt.Fprintln(os.Stderr, "bench: integrity FAILED: the figures above cannot be trusted")
		return 1
	case c.Strict && missed(s.Targets):
		fmt.Fprintln(os.Stderr, "bench: a target was missed (-strict)")
		return 1
	}
	return 0
}

// names lists the scenario names.
func names() []string {
	var out []string
	for _, s := range scenario.All {
		out = append(out, s.Name())
	}
	return out
}

// selection returns the scenarios a -scenario value names: all, one name,
// or a comma-separated list (run in the standard suite's order).
func selection(value string) ([]scenario.Scenario, error) {
	if value == "all" {
		return scenario.All, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if !slices.ContainsFunc(scenario.All, func(s scenario.Scenario) bool { return s.Name() == name }) {
			return nil, fmt.Errorf("unknown -scenario %q; want one of %s, all, or a comma-separated list", name, strings.Join(names(), ", "))
		}
		want[name] = true
	}
	var out []scenario.Scenario
	for _, s := range scenario.All {
		if want[s.Name()] {
			out = append(out, s)
		}
	}
	return out, nil
}

func missed(ts []report.Target) bool {
	for _, t := range ts {
		if t.Status == report.Fail || t.Status == report.Miss {
			return true
		}
	}
	return false
}

// runSuite deploys, measures the comparisons, runs the scenarios and
// judges the targets.
func runSuite(ctx context.Context, c config, selected []scenario.Scenario, stack *procs.Stack) (*report.Suite, error) {
	start := time.Now()
	host, _ := os.Hostname()
	s := &report.Suite{StartedAt: start, Machine: report.Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Host: host}}
	d, err := deploy(ctx, c, stack)
	if err != nil {
		return nil, err
	}
	s.Target = d.describe
	progress := &load.Progress{W: os.Stderr, Carriage: isTerminal(os.Stderr), Every: 5}

	cmp := &comparisons{}
	if needsComparisons(selected) {
		cmp = compare(ctx, c, d, progress, needsBaseline(selected))
		s.Runs = append(s.Runs, cmp.runs...)
		s.Notes = append(s.Notes, cmp.notes...)
	} else {
		s.Notes = append(s.Notes, "no reserve+confirm or storefront scenario selected: ceilings and baseline not run")
	}
	for _, sc := range selected {
		if ctx.Err() != nil {
			break
		}
		runs, skip := runScenario(ctx, c, d, sc, len(selected) == 1, progress)
		if skip != "" {
			fmt.Fprintln(os.Stderr, "bench:", skip)
			s.Notes = append(s.Notes, skip)
		}
		for _, r := range runs {
			cmp.attach(&r)
			s.Runs = append(s.Runs, r)
		}
	}
	besideFlash(s.Runs)
	s.IntegrityOK = true
	for i := range s.Runs {
		s.Runs[i].Normalize()
		s.IntegrityOK = s.IntegrityOK && s.Runs[i].IntegrityOK
	}
	s.DurationS = time.Since(start).Seconds()
	s.Targets = judge(s, len(selected) == len(scenario.All))
	if ctx.Err() != nil {
		s.Notes = append(s.Notes, "interrupted: the suite stopped early")
	}
	return s, nil
}

// runScenario runs one scenario and turns its outcome into report runs
// (flash-durable and flash-replicated make two); skip says why a scenario
// did not run.
func runScenario(ctx context.Context, c config, d *deployment, sc scenario.Scenario, alone bool, pr *load.Progress) (runs []report.Run, skip string) {
	fmt.Fprintf(os.Stderr, "bench: %s\n", sc.Name())
	o := scenario.Options{Duration: c.Duration, Workers: c.Concurrency, Progress: pr}
	if sc.Name() == scenario.Flash.Name() || sc.Name() == scenario.FlashOpen.Name() {
		o.Capacity = c.Capacity // 0: the scenario's own
	}
	if sc == scenario.QueueSellout {
		// Every buyer waits in a worker of its own: -concurrency does not apply.
		o.Capacity, o.Arrivals, o.Workers = c.Capacity, c.Arrivals, 0
	}
	switch sc { // closed loops only: -rate does not apply
	case scenario.FlashDurable:
		return runDurable(ctx, d, o)
	case scenario.FlashReplicated:
		return runReplicated(ctx, d, o)
	}
	if c.Rate > 0 && (alone || sc.Name() == scenario.FlashOpen.Name()) {
		o.Rate = c.Rate
	}
	if o.Rate > 0 || sc.Name() == scenario.FlashOpen.Name() || sc.Name() == scenario.Sellout.Name() {
		o.Workers = openInFlight
	}
	env := d.env()
	if d.prof != nil {
		env.Extra = windows{d.prof, d.use} // the profile's slices begin before the counters are read
	}
	d.use.Take() // what ran before is not this run's
	out, err := sc.Run(ctx, env, o)
	if err != nil {
		return failedRun(sc.Name(), err), ""
	}
	r := toRun(sc.Name(), "ticketd", out)
	d.redisPerUnit(ctx, &r)
	if d.prof != nil {
		d.writeProfile(ctx, &r, profilePath(c.Profile, sc.Name(), c.scenarios > 1))
	}
	return []report.Run{r}, ""
}

// redisPerUnit gives r what its deployment asked of Redis per unit over
// the timed run, and forgets it.
func (d *deployment) redisPerUnit(ctx context.Context, r *report.Run) {
	r.Redis = d.use.Take().PerUnit(ctx, d.use.Redis(), r.Units)
}

// writeProfile writes the CPU profile ticketd's profiler took over r's
// timed part to path, and says so, or why not, in r's notes.
func (d *deployment) writeProfile(ctx context.Context, r *report.Run, path string) {
	n, err := d.prof.Write(ctx, path)
	if err != nil {
		r.Notes = append(r.Notes, "-profile: no CPU profile written: "+err.Error())
		return
	}
	note := fmt.Sprintf("ticketd's CPU profile over the timed run (%d slices of 1 s merged): %s (go tool pprof -top %s)", n, path, path)
	if total := profileTotal(ctx, path); total != "" {
		// The profile samples; /proc counts. Beside each other, a reader
		// sees how much of ticketd's CPU the samples account for.
		if us, ok := microsPerUnit(r, ticketdRow); ok {
			total += fmt.Sprintf("; /proc counted %.2f s of ticketd CPU over the %.1f s run", us*float64(r.Units)/1e6, r.DurationS)
		}
		note += "; " + total
	}
	r.Notes = append(r.Notes, note)
	fmt.Fprintf(os.Stderr, "bench: %s: ticketd's CPU profile written to %s\n", r.Scenario, path)
}

// profileTotal is go tool pprof's "Duration: ..., Total samples = ..."
// line of a profile; empty when it cannot be read.
func profileTotal(ctx context.Context, path string) string {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=1", path).Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "Total samples") {
			return "pprof: " + strings.TrimSpace(line)
		}
	}
	return ""
}

// profilePath is -profile's file for a scenario: the file itself, or with
// several scenarios the scenario's name before its extension
// (cpu.prof -> cpu-flash.prof).
func profilePath(file, scenario string, several bool) string {
	if !several {
		return file
	}
	ext := filepath.Ext(file)
	return strings.TrimSuffix(file, ext) + "-" + scenario + ext
}

// windows tells its windows a timed part begins in order, and ends in
// reverse order.
type windows []load.Window

func (ws windows) Begin() {
	for _, w := range ws {
		w.Begin()
	}
}

func (ws windows) End() {
	for i := len(ws) - 1; i >= 0; i-- {
		ws[i].End()
	}
}

// toRun turns a scenario outcome into a report run.
func toRun(name, target string, o *scenario.Outcome) report.Run {
	r := report.Run{Scenario: name, Target: target}
	if o.Result != nil {
		r = report.FromResult(name, target, o.Result, o.LatencyOp)
	}
	r.Integrity, r.IntegrityOK = o.Checks, o.Checks.OK()
	for _, f := range o.Figures {
		r.Figures = append(r.Figures, report.Figure{Name: f.Name, Value: f.Value, Unit: f.Unit})
	}
	r.RedisBytesPerHold, r.RedisBytesPerPendingOrder = o.BytesPerHold, o.BytesPerPendingOrder
	r.CPU = cpuShares(o.CPU, r.ThroughputPerS) // CPU over the whole run, per unit over the whole run
	if w := busyMachine(r.CPU, runtime.NumCPU()); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	r.Notes = append(r.Notes, o.Notes...)
	if _, ok := o.Figure(scenario.FigCapacity); ok && o.Result != nil {
		saleRate(&r, o)
	}
	return r
}

// saleRate makes a sell-out's headline rate the rate of the sale, first
// arrival to last paid confirm (or confirmed registration): after it the
// run only answers sold out.
func saleRate(r *report.Run, o *scenario.Outcome) {
	rate, ok := o.Figure(scenario.FigSaleRate)
	if !ok {
		rate, ok = o.Figure(scenario.FigRegistrationRate)
	}
	if !ok {
		r.Notes = append(r.Notes, "it did not sell out: throughput is over the whole run")
		return
	}
	whole := r.ThroughputPerS
	r.ThroughputPerS = rate
	r.Figures = append(r.Figures, report.Figure{Name: r.Unit + "/s over the whole run (the sale and the sold-out answers after it)", Value: whole, Unit: r.Unit + "/s"})
	r.Notes = append(r.Notes, "throughput is over the sale (first arrival to last "+strings.TrimSuffix(r.Unit, "s")+" paid), not the whole run")
}

// besideFlash compares each storefront run with the partner flash run of
// the same invocation (closed loop, reserve+confirm pairs).
func besideFlash(runs []report.Run) {
	var flash *report.Run
	for i := range runs {
		if r := &runs[i]; r.Scenario == scenario.Flash.Name() && r.Target == "ticketd" && r.Mode == "closed" && !r.Interrupted {
			flash = r
			break
		}
	}
	for i := range runs {
		r := &runs[i]
		if !strings.HasPrefix(r.Scenario, "storefront-") || r.Target != "ticketd" || len(r.Ops) == 0 {
			continue
		}
		if flash == nil {
			r.Notes = append(r.Notes, "no partner flash run in this invocation to compare with (-scenario flash,"+r.Scenario+")")
			continue
		}
		r.VsPartnerFlash = r.Against(flash)
	}
}

// serveCannedMain is the hidden -serve-canned mode: the HTTP ceiling's
// server, run as its own process like ticketd.
func serveCannedMain(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: canned server:", err)
		return 1
	}
	if err := ceiling.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintln(os.Stderr, "bench: canned server:", err)
		return 1
	}
	return 0
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// failed is the integrity of a run that could not complete: it fails.
func failed(name string, err error) integrity.Checks {
	return integrity.Checks{{Name: name + ": run completed", Status: integrity.Fail, Detail: err.Error()}}
}
