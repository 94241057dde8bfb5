// Package unsynced bounds what a sale risks while Postgres is away
// (TICKETD_MAX_UNSYNCED). A paid order waiting on the Redis streams for the
// sync worker has no other copy, so once too many wait, or the oldest has
// waited too long, the node stops selling until the worker has caught up.
// Limit is the setting; Gate is the node's sales gate it keeps, fed by the
// one reader of the backlog (readiness.Backlog), never by a request.
package unsynced

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/sync/worker"
)

// Default is TICKETD_MAX_UNSYNCED's default: Postgres away for a minute
// in a sale is an incident to stop at, and 100,000 paid orders (over ten
// seconds of the bench's flash sale) is what one Redis machine may hold as
// their only copy meanwhile.
const Default = "60s,100000"

// MinAge is the shortest age limit: the worker writes an order within
// about a second when Postgres is well, so a shorter one would stop
// healthy sales.
const MinAge = time.Second

// Reason is the envelope's reason of the gate's 503.
const Reason = "unsynced"

// Limit is how much may wait for Postgres: more than Entries paid orders,
// or an oldest one older than Age, stops sales. A zero field bounds
// nothing; the zero Limit is off.
type Limit struct {
	Age     time.Duration
	Entries int64
}

// Off says the limit bounds nothing.
func (l Limit) Off() bool { return l.Age <= 0 && l.Entries <= 0 }

// String is the limit as TICKETD_MAX_UNSYNCED writes it.
func (l Limit) String() string {
	var parts []string
	switch {
	case l.Age <= 0:
	case l.Age%time.Hour == 0:
		parts = append(parts, strconv.FormatInt(int64(l.Age/time.Hour), 10)+"h")
	case l.Age%time.Minute == 0:
		parts = append(parts, strconv.FormatInt(int64(l.Age/time.Minute), 10)+"m")
	case l.Age%time.Second == 0:
		parts = append(parts, strconv.FormatInt(int64(l.Age/time.Second), 10)+"s")
	default:
		parts = append(parts, l.Age.String())
	}
	if l.Entries > 0 {
		parts = append(parts, strconv.FormatInt(l.Entries, 10))
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
}

// Parse reads TICKETD_MAX_UNSYNCED: "off", or a duration (at least
// MinAge), a count of paid orders (at least 1) or both, comma-separated in
// either order ("60s,100000", "2m", "50000").
func Parse(s string) (Limit, error) {
	if strings.TrimSpace(s) == "off" {
		return Limit{}, nil
	}
	var l Limit
	for _, part := range strings.Split(s, ",") {
		p := strings.TrimSpace(part)
		switch {
		case p == "":
			return Limit{}, fmt.Errorf("want a duration, a count of paid orders or both, comma-separated (such as %s), or off", Default)
		case strings.Trim(p, "0123456789") == "":
			n, err := strconv.ParseInt(p, 10, 64)
			switch {
			case err != nil || n < 1:
				return Limit{}, fmt.Errorf("the count %q must be a whole number from 1 up (off turns the limit off)", p)
			case l.Entries > 0:
				return Limit{}, fmt.Errorf("two counts (%d and %s): give at most one duration and one count", l.Entries, p)
			}
			l.Entries = n
		default:
			d, err := time.ParseDuration(p)
			switch {
			case err != nil:
				return Limit{}, fmt.Errorf("%q is neither a duration (such as 60s) nor a count of paid orders", p)
			case d < MinAge:
				return Limit{}, fmt.Errorf("the duration %s must be at least %s (off turns the limit off)", p, MinAge)
			case l.Age > 0:
				return Limit{}, fmt.Errorf("two durations (%s and %s): give at most one duration and one count", Limit{Age: l.Age}, p)
			}
			l.Age = d
		}
	}
	return l, nil
}

// Stopped sales resume once the backlog is back under reopenNum/reopenDen
// (90%) of both bounds, so a backlog hovering at the limit does not stop
// and resume sales at every read.
const reopenNum, reopenDen = 9, 10

// Gate stops sales while the backlog is over Limit and reopens them once
// it is back under 90% of it (of both figures). Observe must be called from
// one goroutine at a time (the backlog's reader); Refusal and the gate After
// returns from any. A nil *Gate never refuses.
type Gate struct {
	Limit  Limit
	Logger *slog.Logger
	// OnChange, when set, is called with true when sales stop and false
	// when they resume, before the gate answers so.
	OnChange func(stopped bool)

	refusal atomic.Pointer[apierr.Error] // nil while sales may run

	since time.Time // when sales stopped (Observe's own)
}

// Observe takes a read of the backlog made at now, and stops or resumes
// sales as it says.
func (g *Gate) Observe(b worker.BacklogStats, now time.Time) {
	if g == nil || g.Limit.Off() {
		return
	}
	age := b.Age(now)
	stopped := g.refusal.Load() != nil
	switch {
	case !stopped && g.over(b.Entries, age) != "":
		g.since = now
		if g.OnChange != nil {
			g.OnChange(true)
		}
		g.refusal.Store(g.answer(b.Entries, age))
		g.logger().Warn("sales stop: the paid orders waiting for Postgres passed TICKETD_MAX_UNSYNCED; they resume once it catches up",
			"over", g.over(b.Entries, age), "entries", b.Entries, "oldest", age.Round(time.Millisecond), "limit", g.Limit.String())
	case stopped && g.under(b.Entries, age):
		if g.OnChange != nil {
			g.OnChange(false)
		}
		g.refusal.Store(nil)
		g.logger().Info("sales resume: Postgres caught up with the paid orders (TICKETD_MAX_UNSYNCED)",
			"entries", b.Entries, "oldest", age.Round(time.Millisecond), "stopped_for", now.Sub(g.since).Round(time.Millisecond))
	case stopped:
		// The answer says the figures of the latest read.
		g.refusal.Store(g.answer(b.Entries, age))
	}
}

// Refusal is the 503 to answer while sales are stopped, else nil.
func (g *Gate) Refusal() *apierr.Error {
	if g == nil {
		return nil
	}
	return g.refusal.Load()
}

// After is the sales gate of the surfaces: first's refusal (the Redis
// state monitor's: its reason wins when both refuse), else this gate's.
func (g *Gate) After(first func() *apierr.Error) func() *apierr.Error {
	if g == nil {
		return first
	}
	return func() *apierr.Error {
		if e := first(); e != nil {
			return e
		}
		return g.refusal.Load()
	}
}

// over says which bound entries and age pass ("" when neither).
func (g *Gate) over(entries int64, age time.Duration) string {
	l := g.Limit
	count := l.Entries > 0 && entries > l.Entries
	old := l.Age > 0 && age > l.Age
	switch {
	case count && old:
		return fmt.Sprintf("more than %s orders, the oldest older than %s", thousands(l.Entries), Limit{Age: l.Age})
	case count:
		return fmt.Sprintf("more than %s orders", thousands(l.Entries))
	case old:
		return fmt.Sprintf("the oldest older than %s", Limit{Age: l.Age})
	}
	return ""
}

// under says entries and age are both back under the reopening share of
// their bounds.
func (g *Gate) under(entries int64, age time.Duration) bool {
	e, a := g.reopenAt()
	return (g.Limit.Entries <= 0 || entries <= e) && (g.Limit.Age <= 0 || age <= a)
}

func (g *Gate) reopenAt() (int64, time.Duration) {
	return g.Limit.Entries * reopenNum / reopenDen, g.Limit.Age * reopenNum / reopenDen
}

// answer is the gate's 503 for the figures of a read.
func (g *Gate) answer(entries int64, age time.Duration) *apierr.Error {
	figures := fmt.Sprintf("%s paid orders (the oldest %.1fs old) wait for Postgres", thousands(entries), age.Seconds())
	var msg string
	if why := g.over(entries, age); why != "" {
		msg = fmt.Sprintf("sales are stopped: %s, over TICKETD_MAX_UNSYNCED=%s (%s); they resume by themselves once it catches up",
			figures, g.Limit, why)
	} else {
		e, a := g.reopenAt()
		var at []string
		if g.Limit.Entries > 0 {
			at = append(at, thousands(e)+" orders")
		}
		if g.Limit.Age > 0 {
			at = append(at, a.String()+" old")
		}
		msg = fmt.Sprintf("sales are stopped: %s; TICKETD_MAX_UNSYNCED=%s stopped them, and they resume by themselves once the backlog is under %s",
			figures, g.Limit, strings.Join(at, " and "))
	}
	return apierr.Unavailable("%s", msg).WithReason(Reason)
}

func (g *Gate) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// thousands writes n (not negative) with a comma between each three
// digits: 100,412.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
