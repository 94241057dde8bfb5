package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxAttempts bounds retries of a transaction Postgres aborted to resolve a
// conflict. Confirms lock in a fixed order, so deadlocks need an outside
// party (a catalog apply); READ COMMITTED raises no serialization failures
// on the conditional updates, but a shop runs this loop anyway.
const maxAttempts = 5

// withRetry runs fn again when it failed with a serialization failure
// (40001) or a deadlock (40P01), backing off a little each time.
func withRetry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := range maxAttempts {
		if err = fn(); err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 2 * time.Millisecond):
		}
	}
	return err
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}
