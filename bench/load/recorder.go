// Package load is the bench suite's load generator: an open loop (arrivals
// on a fixed schedule, each measured from its intended start, so a slow
// server cannot hide its latency) and a closed loop (N workers back to back,
// for maximum throughput), over fasthttp, with latencies in HDR histograms
// per operation, answers counted by code and a per-second series.
package load

import (
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: microseconds from 1 µs to 5 minutes, 3 significant
// digits. Longer values are recorded as the maximum.
const (
	histMin    = 1
	histMax    = int64(5 * time.Minute / time.Microsecond)
	histDigits = 3
	numShards  = 16
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// micros converts d for the histogram, clamped to its range.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if us < histMin {
		return histMin
	}
	if us > histMax {
		return histMax
	}
	return us
}

// shard is the slice of the recorder one group of workers writes to; the
// ticker reads it once a second under the same lock.
type shard struct {
	mu       sync.Mutex
	hists    []*hdrhistogram.Histogram // per op, whole run
	window   *hdrhistogram.Histogram   // primary op, current second
	errors   map[string]int64
	rejects  map[string]int64
	requests int64
	units    int64
}

// recorder gathers what all workers measure.
type recorder struct {
	ops     []string
	primary int
	shards  [numShards]*shard
}

func newRecorder(ops []string, primary int) *recorder {
	r := &recorder{ops: ops, primary: primary}
	for i := range r.shards {
		s := &shard{window: newHist(), errors: map[string]int64{}, rejects: map[string]int64{}}
		for range ops {
			s.hists = append(s.hists, newHist())
		}
		r.shards[i] = s
	}
	return r
}

// tick is what the recorder saw since the last tick.
type tick struct {
	requests, units, errors int64
	windowP99               time.Duration
	primaryP99              time.Duration
}

// take reads the counters and the primary op's window histogram, and
// starts a new window.
func (r *recorder) take() tick {
	var t tick
	win := newHist()
	all := newHist()
	for _, s := range r.shards {
		s.mu.Lock()
		t.requests += s.requests
		t.units += s.units
		for _, n := range s.errors {
			t.errors += n
		}
		win.Merge(s.window)
		s.window.Reset()
		all.Merge(s.hists[r.primary])
		s.mu.Unlock()
	}
	if win.TotalCount() > 0 {
		t.windowP99 = time.Duration(win.ValueAtQuantile(99)) * time.Microsecond
	}
	if all.TotalCount() > 0 {
		t.primaryP99 = time.Duration(all.ValueAtQuantile(99)) * time.Microsecond
	}
	return t
}

// merged returns one histogram per op and the summed counters.
func (r *recorder) merged() (hists []*hdrhistogram.Histogram, errs, rejects map[string]int64, requests, units int64) {
	hists = make([]*hdrhistogram.Histogram, len(r.ops))
	for i := range hists {
		hists[i] = newHist()
	}
	errs, rejects = map[string]int64{}, map[string]int64{}
	for _, s := range r.shards {
		s.mu.Lock()
		for i, h := range s.hists {
			hists[i].Merge(h)
		}
		for k, n := range s.errors {
			errs[k] += n
		}
		for k, n := range s.rejects {
			rejects[k] += n
		}
		requests += s.requests
		units += s.units
		s.mu.Unlock()
	}
	return hists, errs, rejects, requests, units
}

// Quantiles are the points of each op's latency curve in a Result.
var Quantiles = []float64{0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// OpStats summarises one operation's latencies, in milliseconds.
type OpStats struct {
	Name  string  `json:"name"`
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
	// Curve holds the latency at each of Quantiles.
	Curve []CurvePoint `json:"curve"`
}

// CurvePoint is one point of a latency curve: percentile and milliseconds.
type CurvePoint struct {
	Percentile float64 `json:"percentile"`
	Ms         float64 `json:"ms"`
}

func ms(us int64) float64 { return float64(us) / 1000 }

// Stats summarises h under name.
func Stats(name string, h *hdrhistogram.Histogram) OpStats {
	o := OpStats{Name: name, Count: h.TotalCount()}
	if o.Count == 0 {
		return o
	}
	o.Mean = h.Mean() / 1000
	o.P50 = ms(h.ValueAtQuantile(50))
	o.P90 = ms(h.ValueAtQuantile(90))
	o.P99 = ms(h.ValueAtQuantile(99))
	o.P999 = ms(h.ValueAtQuantile(99.9))
	o.Max = ms(h.Max())
	for _, q := range Quantiles {
		o.Curve = append(o.Curve, CurvePoint{Percentile: q, Ms: ms(h.ValueAtQuantile(q))})
	}
	return o
}

// SortedCodes returns the codes of m, most frequent first.
func SortedCodes(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}
