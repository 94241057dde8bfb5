// Package fence orders the sync worker's writes against a rebuild's read of
// Postgres. A rebuild reads the paid streams, then takes its snapshot of
// Postgres; a worker that read entries from the Redis before the rebuild
// (the one whose state was lost) and committed them after that snapshot
// would leave Postgres holding a paid order the rebuilt Redis does not
// count, so its units and seats could sell again. Each write therefore
// carries the epoch the worker knew before it read its entries (Check, the
// transaction's first statement: it takes the prefix's fence lock shared),
// and a rebuild raises the epoch (Raise) under that lock taken exclusively,
// before it reads anything: the writes in flight end first, and a later one
// with the old epoch is refused (Moved), so its worker reads again from the
// Redis the rebuild sees. The SQL is migration 010_rebuild_fence.
package fence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// CheckSQL is a write transaction's first statement: $1 the key prefix, $2
// the epoch its worker knew before it read the entries.
const CheckSQL = `SELECT ticketd_fence($1, $2)`

// movedCode is the SQLSTATE CheckSQL raises when the epoch moved.
const movedCode = "TF001"

// LockTimeout bounds Raise's wait for the writes in flight: longer than a
// worker's round (30 s), so that only a write stuck beyond its own bound
// makes the rebuild fail (and be retried) rather than read past it.
const LockTimeout = 45 * time.Second

// Moved reports whether err is CheckSQL's refusal: a rebuild raised the
// epoch after the write's entries were read.
func Moved(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == movedCode
}

// Epoch is prefix's epoch now (0 before any rebuild raised it).
func Epoch(ctx context.Context, pool *pgxpool.Pool, prefix string) (int64, error) {
	var e int64
	err := pool.QueryRow(ctx, `SELECT coalesce((SELECT epoch FROM rebuild_fences WHERE key_prefix = $1), 0)`, prefix).Scan(&e)
	if err != nil {
		return 0, fmt.Errorf("fence: read the epoch: %w", err)
	}
	return e, nil
}

// Raise raises prefix's epoch once every write transaction in flight has
// ended, and returns it. The fence lock's keys are 1952870499 (a constant
// of ticketd's: "tfpc" in ASCII) and the prefix's hashtext, as in
// ticketd_fence. A rebuild calls it after it stopped sales and
// before it reads the streams and Postgres.
func Raise(ctx context.Context, pool *pgxpool.Pool, prefix string) (int64, error) {
	var e int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", LockTimeout.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(1952870499, hashtext($1))`, prefix); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO rebuild_fences (key_prefix, epoch) VALUES ($1, 1)
			ON CONFLICT (key_prefix) DO UPDATE SET epoch = rebuild_fences.epoch + 1 RETURNING epoch`, prefix).Scan(&e)
	})
	if err != nil {
		return 0, fmt.Errorf("fence: wait for the sync workers' writes in flight and raise the epoch: %w", err)
	}
	return e, nil
}
