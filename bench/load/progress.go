package load

import (
	"fmt"
	"time"
)

// startTicker samples the recorder once a second into series and writes
// the progress line. The returned stop takes the run's elapsed time, adds
// the last partial second and ends the line.
func startTicker(rc *recorder, p Plan, start time.Time, series *[]Second) (stop func(elapsed time.Duration)) {
	done := make(chan struct{})
	finished := make(chan struct{})
	var last tick
	lastT := 0.0
	sample := func(t float64) {
		cur := rc.take()
		span := t - lastT
		if span <= 0 {
			return
		}
		*series = append(*series, Second{
			T:        t,
			Units:    float64(cur.units-last.units) / span,
			Requests: float64(cur.requests-last.requests) / span,
			P99:      float64(cur.windowP99) / float64(time.Millisecond),
			Errors:   cur.errors,
		})
		last, lastT = cur, t
		if pr := p.Progress; pr != nil {
			pr.line(p, t, (*series)[len(*series)-1], cur)
		}
	}
	go func() {
		defer close(finished)
		time.Sleep(time.Until(start))
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tk.C:
				sample(now.Sub(start).Seconds())
			}
		}
	}()
	return func(elapsed time.Duration) {
		close(done)
		<-finished
		if t := elapsed.Seconds(); t-lastT > 0.2 {
			sample(t)
		}
		if pr := p.Progress; pr != nil && pr.Carriage {
			fmt.Fprintln(pr.W)
		}
	}
}

// line writes one progress line: scenario, elapsed, current rate, p99 so
// far and errors.
func (pr *Progress) line(p Plan, t float64, s Second, cur tick) {
	every := pr.Every
	if every <= 0 {
		every = 5
	}
	if !pr.Carriage && int(t+0.5)%every != 0 {
		return
	}
	total := p.Duration.Seconds()
	var of string
	if total > 0 {
		of = fmt.Sprintf("/%.0fs", total)
	}
	msg := fmt.Sprintf("  %-14s %5.1fs%s  %8.0f %s/s  %8.0f req/s  p99 %s so far (last 1s %s)  errors %d",
		p.Name, t, of, s.Units, p.Unit, s.Requests, fmtMs(cur.primaryP99), fmtMs(cur.windowP99), cur.errors)
	if pr.Carriage {
		fmt.Fprintf(pr.W, "\r%-120s", msg)
		return
	}
	fmt.Fprintln(pr.W, msg)
}

func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
