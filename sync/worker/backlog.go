package worker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
)

// BacklogStats is the sync backlog: the paid orders on the streams that are
// not in Postgres yet (read or not: an entry leaves its stream only once it
// is written and acknowledged).
type BacklogStats struct {
	Entries int64
	// Oldest is when the oldest of them was paid: its stream id's time, by
	// Redis' clock. Zero when Entries is 0.
	Oldest time.Time
}

// Age is how long the oldest entry has waited at now; 0 when there is none.
func (b BacklogStats) Age(now time.Time) time.Duration {
	if b.Oldest.IsZero() {
		return 0
	}
	return max(now.Sub(b.Oldest), 0)
}

// Backlog measures the sync backlog of space in one round trip: XLEN and
// the first entry (XRANGE - + COUNT 1) of every paid stream, pipelined (the
// streams sit in different cluster slots).
func Backlog(ctx context.Context, rc rueidis.Client, space keys.Space) (BacklogStats, error) {
	cmds := make(rueidis.Commands, 0, 2*keys.Partitions)
	for p := range keys.Partitions {
		key := space.Paid(p)
		cmds = append(cmds, rc.B().Xlen().Key(key).Build(), rc.B().Xrange().Key(key).Start("-").End("+").Count(1).Build())
	}
	var b BacklogStats
	oldest := int64(-1)
	res := rc.DoMulti(ctx, cmds...)
	for p := range keys.Partitions {
		n, err := res[2*p].AsInt64()
		if err != nil {
			return BacklogStats{}, fmt.Errorf("worker: backlog: length of %s: %w", space.Paid(p), err)
		}
		first, err := res[2*p+1].AsXRange()
		if err != nil {
			return BacklogStats{}, fmt.Errorf("worker: backlog: first entry of %s: %w", space.Paid(p), err)
		}
		b.Entries += n
		if len(first) == 0 {
			continue
		}
		ms, err := idTime(first[0].ID)
		if err != nil {
			return BacklogStats{}, fmt.Errorf("worker: backlog: first entry of %s: %w", space.Paid(p), err)
		}
		if oldest < 0 || ms < oldest {
			oldest = ms
		}
	}
	if b.Entries > 0 && oldest >= 0 {
		b.Oldest = time.UnixMilli(oldest)
	}
	return b, nil
}

// idTime is the milliseconds part of a stream id ("<ms>-<seq>"): when
// Redis added the entry.
func idTime(id string) (int64, error) {
	ms, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stream id %q: %w", id, err)
	}
	return v, nil
}
