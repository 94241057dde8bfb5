package mailer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/sync/outbox"
)

// DefaultPerHour is how many messages one buyer address gets an hour
// (TICKETD_MAIL_PER_HOUR).
const DefaultPerHour = 5

// limited reports whether r's recipient has an hourly limit: the buyer's
// address, which whoever registers chooses. The host's notices go to the
// tenant's notifyEmail from the catalog, the operator's choice, and a sale
// of a thousand tickets must not take two hundred hours to tell the host.
func limited(r row) bool { return r.kind == outbox.BuyerTickets }

// rateKey is the address the hourly limit counts by (outbox.RateKey).
func rateKey(recipient string) string { return outbox.RateKey(recipient) }

// parkedWake is when a parked row is due if nothing unparks it first: a
// safety net (a head lost to a crash loop, an operator's edit), never the
// queue's pace. A woken row joins the queue again at the cost of a claim.
const parkedWake = 24 * time.Hour

// The queue of an address whose hour is full (migration 006). Its rows
// carry the address (rate_key). One row not parked is its head, due when
// the oldest of the hour's sends is an hour old; the others are parked.
// A row that takes a slot unparks the oldest parked row, due at once if
// the hour has another free slot, else when the next one frees. So each
// slot costs one claim, and the rows of a full address are never claimed
// in a crowd ahead of other buyers' mail.
const (
	// recentSQL: how many of the last perHour sends to the address fell
	// within the hour (other than the row's own: a row whose mailer died
	// after taking a slot takes it again, not a second one), the oldest of
	// them, and the database's now.
	recentSQL = `SELECT count(*), min(rate_at), now() FROM (SELECT rate_at FROM outbox
		WHERE rate_key = $1 AND rate_at > now() - interval '1 hour' AND id <> $2
		ORDER BY rate_at DESC LIMIT $3) recent`

	// takeSQL takes a slot for the row, if this mailer still holds it.
	takeSQL = `UPDATE outbox SET rate_key = $2, rate_at = now(), rate_parked = false
		WHERE id = $1 AND locked_by = $3 AND locked_until > now() AND sent_at IS NULL`

	// unparkSQL makes the oldest parked row the head, due at $3, unless
	// another row of the address is waiting unparked (it will take the
	// next slot, or become the head).
	unparkSQL = `UPDATE outbox SET rate_parked = false, next_attempt_at = $3
		WHERE id = (SELECT id FROM outbox WHERE rate_key = $1 AND rate_parked AND sent_at IS NULL AND failed_at IS NULL
			ORDER BY id LIMIT 1)
		AND NOT EXISTS (SELECT 1 FROM outbox WHERE rate_key = $1 AND NOT rate_parked AND rate_at IS NULL
			AND sent_at IS NULL AND failed_at IS NULL AND id <> $2)`

	// headSQL: whether another row of the address is its head already (due
	// later) or is being sent by a mailer now.
	headSQL = `SELECT EXISTS (SELECT 1 FROM outbox WHERE rate_key = $1 AND NOT rate_parked AND rate_at IS NULL
		AND sent_at IS NULL AND failed_at IS NULL AND id <> $2 AND (next_attempt_at > now() OR locked_until > now()))`

	// waitSQL hands the row back unattempted: the head ($4 false), due at
	// $5, or parked. Only the lease's holder writes.
	waitSQL = `UPDATE outbox SET rate_key = $2, rate_at = NULL, rate_parked = $4,
		next_attempt_at = CASE WHEN $4 THEN now() + make_interval(secs => $6) ELSE $5 END,
		locked_until = NULL, attempts = attempts - 1
		WHERE id = $1 AND locked_by = $3 AND sent_at IS NULL`

	// parkSQL parks the address's other rows that are due and not leased
	// (new rows, a woken one): they would otherwise each be claimed.
	parkSQL = `UPDATE outbox SET rate_parked = true, next_attempt_at = now() + make_interval(secs => $3)
		WHERE rate_key = $1 AND NOT rate_parked AND rate_at IS NULL AND sent_at IS NULL AND failed_at IS NULL
		AND id <> $2 AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until <= now())`
)

// takeSlot takes one of the hour's slots of r's recipient before r is
// sent, and reports whether r may be sent. When the last PerHour sends to
// it were all within the hour, r joins the address's queue unattempted
// (the head, due when a slot frees, or parked behind it): the message
// waits, it is not dropped. A row whose lease this mailer lost is not
// sent: another mailer has it. Mailers serialise on the recipient (an
// advisory lock), so several sending at once never pass the limit
// together.
func (m *Mailer) takeSlot(ctx context.Context, r row) (bool, error) {
	key := rateKey(r.recipient)
	perHour := orDefault(m.PerHour, DefaultPerHour)
	var taken, behind bool
	var until time.Time
	var parked int64
	err := pgx.BeginFunc(ctx, m.Pool, func(tx pgx.Tx) error {
		taken, behind, until, parked = false, false, time.Time{}, 0
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "ticketd mail rate "+key); err != nil {
			return err
		}
		var n int
		var oldest *time.Time
		var now time.Time
		if err := tx.QueryRow(ctx, recentSQL, key, r.id, perHour).Scan(&n, &oldest, &now); err != nil {
			return err
		}
		if n < perHour {
			tag, err := tx.Exec(ctx, takeSQL, r.id, key, m.name())
			if err != nil || tag.RowsAffected() != 1 {
				return err // the lease ran out: not sent, no slot taken
			}
			taken = true
			// The next waiting row is due now if a slot is left, else
			// when the oldest of the hour's sends (this one, if the only
			// one) is an hour old.
			next := now
			if n+1 >= perHour {
				if oldest == nil {
					oldest = &now
				}
				next = oldest.Add(time.Hour)
			}
			_, err = tx.Exec(ctx, unparkSQL, key, r.id, next)
			return err
		}
		// r is parked behind another row, or is the head itself.
		if err := tx.QueryRow(ctx, headSQL, key, r.id).Scan(&behind); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, waitSQL+` RETURNING next_attempt_at`, r.id, key, m.name(), behind, oldest.Add(time.Hour),
			parkedWake.Seconds()).Scan(&until)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the lease ran out and another mailer has the row
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, parkSQL, key, r.id, parkedWake.Seconds())
		parked = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("mailer: hourly limit of %d: %w", r.id, err)
	}
	switch {
	case taken || until.IsZero():
	case behind:
		m.logger().Info("mailer: the recipient had its messages for this hour; this one waits behind its earlier ones",
			"order", r.orderID, "kind", r.kind, "per_hour", perHour, "also_parked", parked)
	default:
		m.logger().Info("mailer: the recipient had its messages for this hour; this one waits", "order", r.orderID, "kind", r.kind,
			"per_hour", perHour, "until", until.UTC().Format(time.RFC3339), "also_parked", parked)
	}
	return taken, nil
}
