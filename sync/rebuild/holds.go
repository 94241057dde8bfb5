package rebuild

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/lease"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/soldmarks"
)

// A loss ticketd cannot repair never oversells (docs/decisions.md,
// Durability and recovery). Nodes keep each event's sold mark, the highest
// count of units ever paid a paying script answered them
// (inventory/soldmarks), in Postgres (Marks). A rebuild counts the units
// ever paid it finds (Postgres and the paid streams, plus the lost units of
// every earlier hold, so the count stays comparable with the marks); an
// event whose mark is above it lost that many acknowledged sales: the
// rebuild records a hold (table event_sales_holds), keeps the lost units
// counted as sold, and the event's sales answer SALES_HELD until an
// operator releases or reconciles it (Resolve).

// Marks is Postgres' record of the sold marks of one key prefix (table
// event_sold_marks). It is a soldmarks.Store.
type Marks struct {
	Pool   *pgxpool.Pool
	Prefix string // TICKETD_KEY_PREFIX
}

var _ soldmarks.Store = (*Marks)(nil)

// Raise records marks in one statement, each raised, never lowered.
func (m *Marks) Raise(ctx context.Context, marks map[string]int64) error {
	evs, ns := columns(marks)
	_, err := m.Pool.Exec(ctx, `INSERT INTO event_sold_marks (key_prefix, event_id, paid)
		SELECT $1, e, p FROM unnest($2::text[], $3::int8[]) AS u(e, p)
		ON CONFLICT (key_prefix, event_id) DO UPDATE SET paid = excluded.paid, updated_at = now()
		WHERE event_sold_marks.paid < excluded.paid`, m.Prefix, evs, ns)
	if err != nil {
		return fmt.Errorf("sold marks: %w", err)
	}
	return nil
}

// columns is m as two arrays by event id, for a statement that unnests them.
func columns(m map[string]int64) ([]string, []int64) {
	evs := slices.Sorted(maps.Keys(m))
	ns := make([]int64, len(evs))
	for i, ev := range evs {
		ns[i] = m[ev]
	}
	return evs, ns
}

// Hold is an event's sales held after a loss (a row of event_sales_holds).
type Hold struct {
	EventID string `json:"eventId"`
	// Lost is the units paid and acknowledged that neither Redis nor
	// Postgres held any more when the hold was found.
	Lost       int64      `json:"lost"`
	DetectedAt time.Time  `json:"detectedAt"`
	ReleasedAt *time.Time `json:"releasedAt,omitempty"`
	// Resolution is "release" or "reconcile" once resolved.
	Resolution string `json:"resolution,omitempty"`
}

// Resolutions of a hold.
const (
	// Release: the operator refunded or settled the lost buyers; the event
	// resumes with its counts as rebuilt.
	Release = "release"
	// Reconcile: the lost units stay counted as sold against the event's
	// capacity; the event resumes.
	Reconcile = "reconcile"
)

// ErrNotHeld is Resolve's answer for an event without an open hold.
var ErrNotHeld = errors.New("the event's sales are not held")

// Holds lists the holds of prefix, open ones first, newest first; all of
// them when all is set, else the open ones only.
func Holds(ctx context.Context, pool *pgxpool.Pool, prefix string, all bool) ([]Hold, error) {
	rows, err := pool.Query(ctx, `SELECT event_id, lost, detected_at, released_at, coalesce(resolution, '')
		FROM event_sales_holds WHERE key_prefix = $1 AND ($2 OR released_at IS NULL)
		ORDER BY released_at IS NOT NULL, detected_at DESC, event_id`, prefix, all)
	if err != nil {
		return nil, fmt.Errorf("sales holds: %w", err)
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Hold, error) {
		var h Hold
		err := row.Scan(&h.EventID, &h.Lost, &h.DetectedAt, &h.ReleasedAt, &h.Resolution)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("sales holds: %w", err)
	}
	return hs, nil
}

// lossState is what the rebuild reads about marks and holds, per event.
type lossState struct {
	marks map[string]int64 // the highest mark: Postgres' or this node's own book
	lost  map[string]int64 // the lost units of every hold: counted as paid
	kept  map[string]int64 // those of open and reconciled holds: counted as sold
	open  map[string]int64 // those of open holds: the event is held
}

// readLoss reads the marks and holds of the rebuild's key prefix in the
// record's snapshot.
func readLoss(ctx context.Context, tx pgx.Tx, prefix string, own map[string]int64) (lossState, error) {
	ls := lossState{marks: map[string]int64{}, lost: map[string]int64{}, kept: map[string]int64{}, open: map[string]int64{}}
	maps.Copy(ls.marks, own)
	rows, err := tx.Query(ctx, `SELECT event_id, paid FROM event_sold_marks WHERE key_prefix = $1`, prefix)
	if err != nil {
		return ls, err
	}
	var ev, res string
	var n int64
	var open bool
	if _, err := pgx.ForEachRow(rows, []any{&ev, &n}, func() error { ls.marks[ev] = max(ls.marks[ev], n); return nil }); err != nil {
		return ls, err
	}
	rows, err = tx.Query(ctx, `SELECT event_id, lost, released_at IS NULL, coalesce(resolution, '') FROM event_sales_holds
		WHERE key_prefix = $1`, prefix)
	if err != nil {
		return ls, err
	}
	_, err = pgx.ForEachRow(rows, []any{&ev, &n, &open, &res}, func() error {
		ls.lost[ev] += n
		if open || res == Reconcile {
			ls.kept[ev] += n
		}
		if open {
			ls.open[ev] += n
		}
		return nil
	})
	return ls, err
}

// readPaidUnits counts each event's units ever paid in the record: the
// admissions of every order Postgres holds (orders.AddClaims' "ev": every
// line but extras), whatever its status.
func readPaidUnits(ctx context.Context, tx pgx.Tx, st *state) error {
	rows, err := tx.Query(ctx, `SELECT o.event_id, sum((l->>'quantity')::int8)::int8
		FROM orders o CROSS JOIN LATERAL jsonb_array_elements(o.lines) l
		WHERE l->>'kind' = ANY($1) GROUP BY o.event_id`,
		[]string{orders.LineTicket, orders.LineArea, orders.LineTable, orders.LineSeat})
	if err != nil {
		return err
	}
	var ev string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&ev, &n}, func() error { st.paid[ev] += n; return nil })
	return err
}

// holdGaps finds the events whose mark is above the units the rebuild
// counted ever paid (the record's, the streams' and every earlier hold's
// lost units), records each gap in Postgres (added to the event's open
// hold, or a new one) and counts it as lost, kept and open. It returns the
// events newly found short, by event.
func (r *Rebuilder) holdGaps(ctx context.Context, st *state) (map[string]int64, error) {
	gaps := map[string]int64{}
	for ev, mark := range st.loss.marks {
		if gap := mark - st.paid[ev] - st.loss.lost[ev]; gap > 0 {
			gaps[ev] = gap
		}
	}
	if len(gaps) == 0 {
		return gaps, nil
	}
	evs, ns := columns(gaps)
	// Recorded before Redis shows the counts: a rebuild that dies after
	// this finds the hold, counts its units, and finds no gap again.
	_, err := r.Pool.Exec(ctx, `INSERT INTO event_sales_holds (key_prefix, event_id, lost)
		SELECT $1, e, n FROM unnest($2::text[], $3::int8[]) AS u(e, n)
		ON CONFLICT (key_prefix, event_id) WHERE released_at IS NULL DO UPDATE SET lost = event_sales_holds.lost + excluded.lost`,
		r.Space.Prefix, evs, ns)
	if err != nil {
		return nil, fmt.Errorf("rebuild: record sales holds: %w", err)
	}
	for ev, gap := range gaps {
		st.loss.lost[ev] += gap
		st.loss.kept[ev] += gap
		st.loss.open[ev] += gap
	}
	return gaps, nil
}

// lossCounts adds to an event's rebuilt sold counts what its holds keep:
// "ev" counts the lost units of its open and reconciled holds, "paid" its
// units ever paid with every hold's lost units, and "held" the lost units
// of its open hold (sales_resume.lua reads it).
func lossCounts(sold map[string]int64, ev string, st *state) map[string]int64 {
	out := maps.Clone(sold)
	if out == nil {
		out = map[string]int64{}
	}
	if n := st.loss.kept[ev]; n > 0 {
		out["ev"] += n
	}
	if n := st.paid[ev] + st.loss.lost[ev]; n > 0 {
		out["paid"] = n
	}
	if n := st.loss.open[ev]; n > 0 {
		out["held"] = n
	}
	return out
}

// writeHeld replaces the hash of held events nodes read (keys.SalesHeld)
// with the open holds, before the new generation is published: no node's
// gate opens on it without them.
func (r *Rebuilder) writeHeld(ctx context.Context, st *state, rep *Report) error {
	cmds := rueidis.Commands{r.Redis.B().Del().Key(r.Space.SalesHeld()).Build()}
	if len(st.loss.open) > 0 {
		h := r.Redis.B().Hset().Key(r.Space.SalesHeld()).FieldValue()
		for _, ev := range slices.Sorted(maps.Keys(st.loss.open)) {
			h = h.FieldValue(ev, strconv.FormatInt(st.loss.open[ev], 10))
			rep.Held = append(rep.Held, HeldEvent{EventID: ev, Lost: st.loss.open[ev], Found: st.gaps[ev]})
		}
		cmds = append(cmds, h.Build())
	}
	for _, res := range r.Redis.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return fmt.Errorf("rebuild: write the held events: %w", err)
		}
	}
	return nil
}

// HeldEvent is an event a rebuild left held: Lost units of it were paid and
// acknowledged and are known nowhere; Found of them this rebuild found.
type HeldEvent struct {
	EventID string `json:"eventId"`
	Lost    int64  `json:"lost"`
	Found   int64  `json:"found"`
}

var resumeScript = eval.Load("sales_resume")

// Resolve resumes the sales of an event a rebuild held (ticketctl release
// or reconcile), under the catalog lock: Redis first (sales_resume.lua:
// release takes the lost units out of the event's sold count, reconcile
// keeps them; then every node drops the event from its held set within a
// state check), then the record (released_at, resolution). Run again after
// a failure, it finishes: a failure in between leaves the hold open in
// Postgres, which a later rebuild only holds again. ErrNotHeld when the
// event has no open hold.
func Resolve(ctx context.Context, rc rueidis.Client, space keys.Space, pool *pgxpool.Pool, lockTTL time.Duration,
	eventID, resolution string) (Hold, error) {
	if resolution != Release && resolution != Reconcile {
		return Hold{}, fmt.Errorf("resolve: %q is not release or reconcile", resolution)
	}
	l, err := lease.AcquireWait(ctx, rc, space.CatalogLock(), orDefault(lockTTL, catalogstore.DefaultLockTTL))
	if err != nil {
		return Hold{}, fmt.Errorf("resolve: take the catalog lock: %w", err)
	}
	defer l.Release(context.WithoutCancel(ctx))
	var h Hold
	err = pool.QueryRow(ctx, `SELECT event_id, lost, detected_at FROM event_sales_holds
		WHERE key_prefix = $1 AND event_id = $2 AND released_at IS NULL`, space.Prefix, eventID).Scan(&h.EventID, &h.Lost, &h.DetectedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Hold{}, ErrNotHeld
	}
	if err != nil {
		return Hold{}, fmt.Errorf("resolve: %w", err)
	}
	p := keys.Partition(eventID)
	arr, err := eval.Array(ctx, rc, resumeScript, []string{space.Sold(eventID), space.Live(p)}, []string{resolution})
	if err != nil {
		return Hold{}, fmt.Errorf("resolve: %w", err)
	}
	// NotPending: Redis holds it no more (a run that failed after this);
	// Stopped: sales are stopped, and the rebuild that restores them
	// applies the resolution recorded below.
	if c, err := reply.Of(arr); err != nil || (c != reply.OK && c != reply.NotPending && c != reply.Stopped) {
		return Hold{}, fmt.Errorf("resolve: %w", eval.ErrReply)
	}
	if err := rc.Do(ctx, rc.B().Hdel().Key(space.SalesHeld()).Field(eventID).Build()).Error(); err != nil {
		return Hold{}, fmt.Errorf("resolve: %w", err)
	}
	if err := l.Extend(ctx); err != nil {
		return Hold{}, fmt.Errorf("resolve: %w", err)
	}
	var at time.Time
	err = pool.QueryRow(ctx, `UPDATE event_sales_holds SET released_at = now(), resolution = $3
		WHERE key_prefix = $1 AND event_id = $2 AND released_at IS NULL RETURNING released_at`,
		space.Prefix, eventID, resolution).Scan(&at)
	if err != nil {
		return Hold{}, fmt.Errorf("resolve: record: %w", err)
	}
	h.ReleasedAt, h.Resolution = &at, resolution
	return h, nil
}
