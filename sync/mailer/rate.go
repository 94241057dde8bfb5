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

// parkedWake is when a parked row is due if nothing makes it the head
// first: a safety net (an operator's edit), never the queue's pace. A woken row joins the queue
// again at the cost of a claim.
const parkedWake = 24 * time.Hour

// The queue of an address whose hour is full (migration 006). Its rows
// carry the address (rate_key). A row that finds the hour full is handed
// back unattempted and parked (rate_parked); the oldest parked row is the
// head, due when the next slot frees, the others are due only after
// parkedWake. Whatever changes when the next slot frees or which row is
// oldest sets the head's due time again, in the transaction that made the
// change and under the address's lock (takeSlot, requeue): a slot taken
// (the head then is the next row), a row parked, a failed send giving its
// slot back (the head is due at once, while the failed row waits out its
// backoff), a row given up after its mailer died on its last attempt. So
// each slot costs one claim, the rows of a full address are never claimed
// in a crowd ahead of other buyers' mail, and no waiting row keeps a free
// slot idle: rows not parked (new rows, a retry waiting out its backoff)
// are not the queue's head, and a retry with a long backoff holds nothing
// back.
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

	// headSQL makes the address's oldest parked row due at $2, when the
	// next slot frees; it returns the row's id.
	headSQL = `UPDATE outbox SET next_attempt_at = $2
		WHERE id = (SELECT id FROM outbox WHERE rate_key = $1 AND rate_parked AND sent_at IS NULL AND failed_at IS NULL
			ORDER BY id LIMIT 1)
		RETURNING id`

	// waitSQL hands the row back unattempted and parked; setHead then
	// makes it the head if it is the oldest. Only the lease's holder
	// writes.
	waitSQL = `UPDATE outbox SET rate_key = $2, rate_at = NULL, rate_parked = true,
		next_attempt_at = now() + make_interval(secs => $4), locked_until = NULL, attempts = attempts - 1
		WHERE id = $1 AND locked_by = $3 AND sent_at IS NULL`

	// parkSQL parks the address's other rows that are due and not leased
	// (new rows, a woken one): they would otherwise each be claimed.
	parkSQL = `UPDATE outbox SET rate_parked = true, next_attempt_at = now() + make_interval(secs => $3)
		WHERE rate_key = $1 AND NOT rate_parked AND rate_at IS NULL AND sent_at IS NULL AND failed_at IS NULL
		AND id <> $2 AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until <= now())`
)

// lockAddress serialises the mailers on one address for the rest of tx.
func lockAddress(ctx context.Context, tx pgx.Tx, key string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "ticketd mail rate "+key)
	return err
}

// hour is the address's sends in the last hour, as recentSQL counts them
// leaving out the row self (0: none).
type hour struct {
	n      int
	oldest *time.Time
	now    time.Time
}

func recent(ctx context.Context, tx pgx.Tx, key string, self int64, perHour int) (hour, error) {
	var h hour
	err := tx.QueryRow(ctx, recentSQL, key, self, perHour).Scan(&h.n, &h.oldest, &h.now)
	return h, err
}

// nextSlot is when the address's next slot frees: now if the hour has one
// left, else when the oldest of its last perHour sends is an hour old.
func (h hour) nextSlot(perHour int) time.Time {
	if h.n < perHour || h.oldest == nil {
		return h.now
	}
	return h.oldest.Add(time.Hour)
}

// took is h with a slot taken now.
func (h hour) took() hour {
	h.n++
	if h.oldest == nil {
		h.oldest = &h.now
	}
	return h
}

// setHead makes the address's oldest parked row due when its next slot
// frees, and returns its id (0: no row parked).
func setHead(ctx context.Context, tx pgx.Tx, key string, h hour, perHour int) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, headSQL, key, h.nextSlot(perHour)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// requeue runs change (under the address's lock, in one transaction with
// it) and then sets the head of key's queue again: for a change to the
// address's sends outside takeSlot, a slot given back or a row given up.
func (m *Mailer) requeue(ctx context.Context, key string, change func(pgx.Tx) error) error {
	perHour := orDefault(m.PerHour, DefaultPerHour)
	return pgx.BeginFunc(ctx, m.Pool, func(tx pgx.Tx) error {
		if err := lockAddress(ctx, tx, key); err != nil {
			return err
		}
		if err := change(tx); err != nil {
			return err
		}
		h, err := recent(ctx, tx, key, 0, perHour)
		if err != nil {
			return err
		}
		_, err = setHead(ctx, tx, key, h, perHour)
		return err
	})
}

// takeSlot takes one of the hour's slots of r's recipient before r is
// sent, and reports whether r may be sent. When the last PerHour sends to
// it were all within the hour, r joins the address's queue unattempted
// (the head, due when a slot frees, or parked behind older rows): the
// message waits, it is not dropped. A row whose lease this mailer lost is
// not sent: another mailer has it. Mailers serialise on the recipient (an
// advisory lock), so several sending at once never pass the limit
// together.
func (m *Mailer) takeSlot(ctx context.Context, r row) (bool, error) {
	key := rateKey(r.recipient)
	perHour := orDefault(m.PerHour, DefaultPerHour)
	var taken, waits bool
	var head, parked int64
	var until time.Time
	err := pgx.BeginFunc(ctx, m.Pool, func(tx pgx.Tx) error {
		taken, waits, head, parked, until = false, false, 0, 0, time.Time{}
		if err := lockAddress(ctx, tx, key); err != nil {
			return err
		}
		h, err := recent(ctx, tx, key, r.id, perHour)
		if err != nil {
			return err
		}
		if h.n < perHour {
			tag, err := tx.Exec(ctx, takeSQL, r.id, key, m.name())
			if err != nil || tag.RowsAffected() != 1 {
				return err // the lease ran out: not sent, no slot taken
			}
			taken = true
			// The next row of the queue is due now if a slot is left, else
			// when the oldest of the hour's sends (this one, if the only
			// one) is an hour old.
			_, err = setHead(ctx, tx, key, h.took(), perHour)
			return err
		}
		tag, err := tx.Exec(ctx, waitSQL, r.id, key, m.name(), parkedWake.Seconds())
		if err != nil || tag.RowsAffected() != 1 {
			return err // the lease ran out and another mailer has the row
		}
		waits = true
		tag, err = tx.Exec(ctx, parkSQL, key, r.id, parkedWake.Seconds())
		if err != nil {
			return err
		}
		parked = tag.RowsAffected()
		until = h.nextSlot(perHour)
		head, err = setHead(ctx, tx, key, h, perHour)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("mailer: hourly limit of %d: %w", r.id, err)
	}
	switch {
	case !waits:
	case head != r.id:
		m.logger().Info("mailer: the recipient had its messages for this hour; this one waits behind its earlier ones",
			"order", r.orderID, "kind", r.kind, "per_hour", perHour, "also_parked", parked)
	default:
		m.logger().Info("mailer: the recipient had its messages for this hour; this one waits", "order", r.orderID, "kind", r.kind,
			"per_hour", perHour, "until", until.UTC().Format(time.RFC3339), "also_parked", parked)
	}
	return taken, nil
}
