package durable

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/redismem"
)

// Replication is how far a primary's replicas stayed behind it over a
// run, from its INFO replication read while the run went on.
type Replication struct {
	// Samples is how many times INFO replication was read.
	Samples int
	// FewestOnline is the fewest replicas online in any sample.
	FewestOnline int
	// MaxLag is the longest time since a replica's last acknowledgement
	// in any sample, in whole seconds as Redis counts it (a replica
	// acknowledges every second, and at once when a WAIT asks).
	MaxLag time.Duration
	// MaxBehind is the most bytes of the primary's replication stream a
	// replica had not acknowledged in any sample.
	MaxBehind int64
	// Err is the last failed read, if any.
	Err error
}

// add takes one sample: INFO replication's fields.
func (r *Replication) add(fields map[string]string) {
	primary, _ := strconv.ParseInt(fields["master_repl_offset"], 10, 64)
	online := 0
	for k, v := range fields {
		// slave0:ip=127.0.0.1,port=6380,state=online,offset=123,lag=0
		if n, ok := strings.CutPrefix(k, "slave"); !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if name, val, ok := strings.Cut(kv, "="); ok {
				f[name] = val
			}
		}
		if f["state"] != "online" {
			continue
		}
		online++
		if lag, err := strconv.Atoi(f["lag"]); err == nil {
			r.MaxLag = max(r.MaxLag, time.Duration(lag)*time.Second)
		}
		if off, err := strconv.ParseInt(f["offset"], 10, 64); err == nil {
			r.MaxBehind = max(r.MaxBehind, primary-off)
		}
	}
	if r.Samples == 0 || online < r.FewestOnline {
		r.FewestOnline = online
	}
	r.Samples++
}

// WatchReplication reads rc's INFO replication every interval until the
// returned stop is called, which returns what the reads saw.
func WatchReplication(ctx context.Context, rc rueidis.Client, every time.Duration) (stop func() Replication) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg  sync.WaitGroup
		out Replication
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			fields, err := redismem.Info(ctx, rc, "replication")
			if err == nil {
				out.add(fields)
			} else if ctx.Err() == nil {
				out.Err = err
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() Replication {
		cancel()
		wg.Wait()
		return out
	}
}
