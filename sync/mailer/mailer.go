package mailer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/orderdb"
)

// Defaults of the Mailer's zero fields.
const (
	DefaultBatch        = 20
	DefaultPollInterval = time.Second
	// DefaultLease must outlast rendering and sending a batch: a row whose
	// lease ran out is taken by another mailer.
	DefaultLease       = 5 * time.Minute
	DefaultBackoff     = 30 * time.Second
	DefaultMaxBackoff  = time.Hour
	DefaultMaxAttempts = 20 // about 15 hours of retries at the defaults
)

// Mailer sends due outbox rows. Pool, Sender and Keys are required; zero
// fields take the defaults above, Name "<hostname>-<pid>-<random>". The fields must
// not change once the mailer is in use.
type Mailer struct {
	Pool   *pgxpool.Pool
	Sender Sender
	// Keys sign the tickets' QR codes and the ticket page links.
	Keys *tickets.Keys
	// AppURL is the public base URL (TICKETD_APP_URL) of the ticket page links.
	AppURL string
	// From is the sender, "Name <address>" or an address.
	From string
	// Name identifies this mailer in the rows it leases (locked_by).
	Name         string
	Batch        int
	PollInterval time.Duration
	Lease        time.Duration
	// Backoff is the wait after a first failure; it doubles with each
	// further one up to MaxBackoff. After MaxAttempts the row is given up.
	Backoff, MaxBackoff time.Duration
	MaxAttempts         int
	// PerHour is how many messages one buyer address gets in an hour
	// (rate.go); more wait. InlineTickets and MaxBytes bound a message's
	// size (render.go).
	PerHour, InlineTickets, MaxBytes int
	// TestMode marks every message TEST MODE (testmode.go).
	TestMode bool
	Logger   *slog.Logger

	nameOnce sync.Once
	nameVal  string
}

// New returns the mailer cfg describes, or nil when cfg.Off.
func New(cfg Config, pool *pgxpool.Pool, keys *tickets.Keys, appURL string, logger *slog.Logger) (*Mailer, error) {
	if cfg.Off {
		return nil, nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	s, err := cfg.Sender(logger)
	if err != nil {
		return nil, err
	}
	return &Mailer{Pool: pool, Sender: s, Keys: keys, AppURL: appURL, From: cfg.From, PerHour: cfg.PerHour,
		TestMode: cfg.TestMode, Logger: logger}, nil
}

func (m *Mailer) logger() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

func (m *Mailer) name() string {
	m.nameOnce.Do(func() {
		m.nameVal = m.Name
		if m.nameVal == "" {
			// Containers all run as pid 1, and a hostname may repeat: the
			// random part keeps two processes from sharing one lease.
			host, _ := os.Hostname()
			b := make([]byte, 4)
			_, _ = rand.Read(b)
			m.nameVal = host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b)
		}
	})
	return m.nameVal
}

func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Run sends due rows until ctx ends; a nil Mailer (mail off) returns at
// once. A round that fails (Postgres unreachable) is logged and retried
// after PollInterval; a full batch is followed by the next at once. After
// a failure of the mail server (ErrServer) Run waits Backoff, doubling
// while the server keeps failing, so a misconfiguration spends one
// attempt of one row per wait, not one of every row in the backlog.
func (m *Mailer) Run(ctx context.Context) error {
	if m == nil {
		return nil
	}
	poll := orDefault(m.PollInterval, DefaultPollInterval)
	down := 0 // rounds in a row the server failed
	for {
		n, err := m.RunOnce(ctx)
		wait := poll
		switch {
		case errors.Is(err, ErrServer):
			down++
			wait = Backoff(down, orDefault(m.Backoff, DefaultBackoff), orDefault(m.MaxBackoff, DefaultMaxBackoff))
			m.logger().Warn("mailer: the mail server failed; pausing", "retry_in", wait.String(), "err", logText(err))
		case err != nil && ctx.Err() == nil:
			m.logger().Warn("mailer: round failed", "err", err)
		case err == nil:
			down = 0
			if n >= orDefault(m.Batch, DefaultBatch) {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// row is a claimed outbox row.
type row struct {
	id                       int64
	orderID, kind, recipient string
	ref                      string // host_refund: the payment id
	payload                  []byte
	attempts                 int
}

// ErrServer wraps the failure RunOnce returns when the mail server (or the
// configuration: credentials, TLS, the sender) failed rather than one
// message: it would fail every row alike.
var ErrServer = errors.New("mailer: the mail server failed")

// RunOnce claims up to Batch due rows, sends each and records the outcome.
// It returns how many rows it claimed. A failure of one message is
// recorded on its row, not returned. A failure of the server is recorded
// on the row begun (retried after its backoff, as a 5xx there is no
// verdict on the message), the rows not begun are handed back unattempted,
// and the failure is returned wrapping ErrServer.
func (m *Mailer) RunOnce(ctx context.Context) (int, error) {
	rows, err := m.claim(ctx)
	if err != nil {
		return 0, err
	}
	// An order's buyer_tickets and host_notify rows are written together
	// and so mostly claimed in one batch: its order is read once.
	paid := map[string]orderdb.PaidOrder{}
	for i, r := range rows {
		if ctx.Err() != nil {
			// Shutting down: hand the rows not begun back at once rather
			// than when their leases run out.
			return len(rows), m.release(context.WithoutCancel(ctx), rows[i:])
		}
		// A send begun is finished and recorded even when ctx ends: the
		// lease would otherwise send it again.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orDefault(m.Lease, DefaultLease)/2)
		held, err := m.renew(rctx, r)
		if err != nil || !held {
			cancel()
			if err != nil {
				return len(rows), err
			}
			continue // the batch outlasted the lease and another mailer took the row
		}
		if limited(r) {
			ok, err := m.takeSlot(rctx, r)
			if err != nil || !ok {
				cancel()
				if err != nil {
					return len(rows), err
				}
				continue // the recipient's hour is full: the row waits
			}
		}
		sendErr := m.send(rctx, r, paid)
		cancel()
		// The outcome is recorded with contexts of its own: the send's may
		// have run out just as the server accepted the message.
		if sendErr == nil {
			err = m.markSent(ctx, r)
		} else {
			err = m.markFailed(ctx, r, sendErr)
		}
		if err != nil {
			return len(rows), err
		}
		if errors.Is(sendErr, ErrServer) {
			if err := m.release(context.WithoutCancel(ctx), rows[i+1:]); err != nil {
				return len(rows), err
			}
			return len(rows), sendErr
		}
	}
	return len(rows), nil
}

const claimSQL = `UPDATE outbox o SET attempts = o.attempts + 1, locked_by = $1,
	locked_until = now() + make_interval(secs => $2)
FROM (SELECT id FROM outbox
	WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now() AND attempts < $4
	AND (locked_until IS NULL OR locked_until <= now())
	ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) due
WHERE o.id = due.id
RETURNING o.id, o.order_id, o.kind, o.ref, o.recipient, o.payload, o.attempts`

// exhaustedWhere selects the rows whose attempts ($1) ran out with no
// outcome recorded: their mailer died or hung on each (a crash the row
// causes).
const exhaustedWhere = `sent_at IS NULL AND failed_at IS NULL AND attempts >= $1
	AND (locked_until IS NULL OR locked_until <= now())`

// exhaustedSQL gives up the exhausted rows of the address $2 (NULL: of
// none, the host's notices and rows written before the address was).
const exhaustedSQL = `UPDATE outbox SET failed_at = now(), locked_until = NULL,
	last_error = coalesce(last_error || '; ', '') || 'no outcome recorded after ' || attempts || ' attempts (the mailer died or hung sending it)'
WHERE ` + exhaustedWhere + ` AND rate_key IS NOT DISTINCT FROM $2::text`

// giveUpExhausted gives up the exhausted rows, an address's in one
// transaction with setting its queue's head again (requeue): the row may
// have been the head, claimed at its slot by the mailer that died, and the
// rows behind it would otherwise wait for parkedWake.
func (m *Mailer) giveUpExhausted(ctx context.Context, maxAttempts int) error {
	rs, err := m.Pool.Query(ctx, `SELECT DISTINCT rate_key FROM outbox WHERE `+exhaustedWhere, maxAttempts)
	if err != nil {
		return err
	}
	addrs, err := pgx.CollectRows(rs, pgx.RowTo[*string])
	if err != nil {
		return err
	}
	for _, key := range addrs {
		if key == nil {
			_, err = m.Pool.Exec(ctx, exhaustedSQL, maxAttempts, nil)
		} else {
			err = m.requeue(ctx, *key, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, exhaustedSQL, maxAttempts, *key)
				return err
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// claim leases due rows to this mailer. SKIP LOCKED lets concurrent
// mailers claim disjoint rows; the lease keeps them off a claimed row
// after this transaction commits. A row whose claims reached MaxAttempts
// is not claimed again but given up, so one that kills or hangs its
// mailer every time is not taken forever.
func (m *Mailer) claim(ctx context.Context) ([]row, error) {
	maxAttempts := orDefault(m.MaxAttempts, DefaultMaxAttempts)
	if err := m.giveUpExhausted(ctx, maxAttempts); err != nil {
		return nil, fmt.Errorf("mailer: give up exhausted rows: %w", err)
	}
	rs, err := m.Pool.Query(ctx, claimSQL, m.name(), orDefault(m.Lease, DefaultLease).Seconds(), orDefault(m.Batch, DefaultBatch), maxAttempts)
	if err != nil {
		return nil, fmt.Errorf("mailer: claim: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.orderID, &x.kind, &x.ref, &x.recipient, &x.payload, &x.attempts)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("mailer: claim: %w", err)
	}
	return out, nil
}

// release gives claimed rows back unsent, their claim not counted as an
// attempt.
func (m *Mailer) release(ctx context.Context, rows []row) error {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	_, err := m.Pool.Exec(ctx, `UPDATE outbox SET locked_until = NULL, attempts = attempts - 1
		WHERE id = ANY($1) AND locked_by = $2 AND sent_at IS NULL`, ids, m.name())
	if err != nil {
		return fmt.Errorf("mailer: release rows: %w", err)
	}
	return nil
}

// renew extends the lease of a row about to be sent, reporting whether
// this mailer still holds it: the rows of a batch are sent one after
// another, and a slow server may let the last ones' leases run out.
func (m *Mailer) renew(ctx context.Context, r row) (bool, error) {
	tag, err := m.Pool.Exec(ctx, `UPDATE outbox SET locked_until = now() + make_interval(secs => $3)
		WHERE id = $1 AND locked_by = $2 AND locked_until > now() AND sent_at IS NULL`,
		r.id, m.name(), orDefault(m.Lease, DefaultLease).Seconds())
	if err != nil {
		return false, fmt.Errorf("mailer: renew lease of %d: %w", r.id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// send renders and sends r. A panic while rendering or sending is
// recorded on the row (its attempts bound the retries) rather than killing
// the process, which would take the row again after the lease. A Sender's
// failure that is not about the message wraps ErrServer.
func (m *Mailer) send(ctx context.Context, r row, paid map[string]orderdb.PaidOrder) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("mailer: panic sending %s of %s: %v", r.kind, r.orderID, p)
		}
	}()
	msg, err := m.render(ctx, r, paid)
	if err != nil {
		return err
	}
	if err := m.Sender.Send(ctx, msg); err != nil {
		if errors.Is(err, ErrMessage) || errors.Is(err, ErrPermanent) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
	m.logger().Debug("mailer: sent", "order", r.orderID, "kind", r.kind)
	return nil
}

// markTries is how often an outcome's write is tried: a message the
// server accepted but that is not marked sent goes out again after the
// lease.
const markTries = 4

// mark runs an outcome's write, each try with a context of its own, so a
// send that used up its time still gets its outcome written. ctx ending
// stops further tries, not the one begun.
func (m *Mailer) mark(ctx context.Context, what string, write func(context.Context) error) error {
	var err error
	for try := range markTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(try) * 200 * time.Millisecond):
			}
		}
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = write(tctx)
		cancel()
		if err == nil {
			return nil
		}
		err = fmt.Errorf("mailer: %s: %w", what, err)
	}
	return err
}

// exec is a write of one statement.
func (m *Mailer) exec(sql string, args ...any) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := m.Pool.Exec(ctx, sql, args...)
		return err
	}
}

func (m *Mailer) markSent(ctx context.Context, r row) error {
	return m.mark(ctx, fmt.Sprintf("mark %d sent", r.id), m.exec(`UPDATE outbox SET sent_at = now(), locked_until = NULL, last_error = NULL
		WHERE id = $1 AND sent_at IS NULL`, r.id))
}

// markFailed records a failed send: due again after the backoff, or given
// up when it can never succeed or was the last attempt; the recipient's
// slot of the hour (takeSlot) is given back (the row keeps its rate_key: it
// is one of the address's messages still), and the address's queue gets
// its head again in the same transaction (requeue): the slot is free now,
// and the row's backoff may keep it away longer. Only the lease's holder writes, so a mailer that overran its lease cannot undo another's
// send. The log names the stage and reply code; the reply's text (it may
// quote the buyer's address) is kept in last_error only.
func (m *Mailer) markFailed(ctx context.Context, r row, cause error) error {
	giveUp := errors.Is(cause, ErrPermanent) || r.attempts >= orDefault(m.MaxAttempts, DefaultMaxAttempts)
	wait := Backoff(r.attempts, orDefault(m.Backoff, DefaultBackoff), orDefault(m.MaxBackoff, DefaultMaxBackoff))
	msg := cause.Error()
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	const failSQL = `UPDATE outbox SET next_attempt_at = now() + make_interval(secs => $2),
		last_error = $3, locked_until = NULL, failed_at = CASE WHEN $4 THEN now() END, rate_at = NULL
		WHERE id = $1 AND locked_by = $5 AND sent_at IS NULL`
	args := []any{r.id, wait.Seconds(), storable(msg), giveUp, m.name()}
	write := m.exec(failSQL, args...)
	if limited(r) {
		write = func(ctx context.Context) error {
			return m.requeue(ctx, rateKey(r.recipient), func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, failSQL, args...)
				return err
			})
		}
	}
	err := m.mark(ctx, fmt.Sprintf("record failure of %d", r.id), write)
	if err != nil {
		return err
	}
	if giveUp {
		m.logger().Error("mailer: gave up a message", "order", r.orderID, "kind", r.kind, "attempts", r.attempts, "err", logText(cause))
	} else {
		m.logger().Warn("mailer: send failed, will retry", "order", r.orderID, "kind", r.kind, "attempts", r.attempts,
			"retry_in", wait.String(), "err", logText(cause))
	}
	return nil
}

// logText is what a log says of a failed send: an SMTP failure's stage and
// reply code, not the reply's text.
func logText(err error) string {
	var se *SMTPError
	if errors.As(err, &se) {
		return se.Summary()
	}
	return err.Error()
}

// Backoff is the wait after the n-th failed attempt (n from 1): base
// doubled n-1 times, at most max.
func Backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
