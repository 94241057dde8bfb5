package mailer

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/inventory/orders"
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

// rateKey is the address the hourly limit counts by: the address of
// recipient normalised as the buyer limits normalise it
// (orders.NormalizeEmail: lower-cased, without a +tag, without the dots of
// a gmail.com or googlemail.com local part), so that spellings of one
// mailbox share one limit.
func rateKey(recipient string) string {
	addr := strings.TrimSpace(recipient)
	if a, err := mail.ParseAddress(addr); err == nil {
		addr = a.Address
	}
	return orders.NormalizeEmail(addr)
}

// takeSlot takes one of the hour's slots of r's recipient before r is
// sent, or, when the last PerHour sends to it were all within the hour,
// hands r back unattempted, due when the oldest of them is an hour old:
// the message waits, it is not dropped. It reports whether r may be sent.
// Mailers serialise on the recipient (an advisory lock), so several
// sending at once never pass the limit together.
func (m *Mailer) takeSlot(ctx context.Context, r row) (bool, error) {
	key := rateKey(r.recipient)
	perHour := orDefault(m.PerHour, DefaultPerHour)
	var taken bool
	var until time.Time
	err := pgx.BeginFunc(ctx, m.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "ticketd mail rate "+key); err != nil {
			return err
		}
		// The row itself may hold a slot from an attempt whose mailer died:
		// it takes it again, not a second one.
		var n int
		var oldest *time.Time
		if err := tx.QueryRow(ctx, `SELECT count(*), min(rate_at) FROM (SELECT rate_at FROM outbox
			WHERE rate_key = $1 AND rate_at > now() - interval '1 hour' AND id <> $2
			ORDER BY rate_at DESC LIMIT $3) recent`, key, r.id, perHour).Scan(&n, &oldest); err != nil {
			return err
		}
		if n < perHour {
			taken = true
			_, err := tx.Exec(ctx, `UPDATE outbox SET rate_key = $2, rate_at = now() WHERE id = $1 AND locked_by = $3`, r.id, key, m.name())
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE outbox SET next_attempt_at = $2::timestamptz + interval '1 hour', locked_until = NULL,
			attempts = attempts - 1, rate_key = NULL, rate_at = NULL
			WHERE id = $1 AND locked_by = $3 AND sent_at IS NULL RETURNING next_attempt_at`, r.id, oldest, m.name()).Scan(&until)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the lease ran out and another mailer has the row
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("mailer: hourly limit of %d: %w", r.id, err)
	}
	if !taken && !until.IsZero() {
		m.logger().Info("mailer: the recipient had its messages for this hour; this one waits", "order", r.orderID, "kind", r.kind,
			"per_hour", perHour, "until", until.UTC().Format(time.RFC3339))
	}
	return taken, nil
}
