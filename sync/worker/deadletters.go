package worker

import (
	"context"
	"fmt"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/keys"
)

// DeadLetter is a paid-stream entry the worker kept in dead_letters
// instead of writing it as an order: one Postgres refused, one it could
// not read, or a paid order read from a Redis whose state was lost
// (keepLost). Fields are the entry's, its record filled where it had one.
type DeadLetter struct {
	ID        int64             `json:"id"`
	Stream    string            `json:"stream"`
	EntryID   string            `json:"entryId"`
	OrderID   string            `json:"orderId,omitempty"`
	Error     string            `json:"error"`
	CreatedAt time.Time         `json:"createdAt"`
	Fields    map[string]string `json:"fields"`
}

// DeadLetters lists space's dead letters (those of its paid streams),
// the newest first, at most limit.
func DeadLetters(ctx context.Context, pool *pgxpool.Pool, space keys.Space, limit int) ([]DeadLetter, error) {
	streams := make([]string, keys.Partitions)
	for p := range keys.Partitions {
		streams[p] = space.Paid(p)
	}
	rows, err := pool.Query(ctx, `SELECT id, stream, entry_id, coalesce(fields->>'order', ''), error, created_at, fields
		FROM dead_letters WHERE stream = ANY($1) ORDER BY id DESC LIMIT $2`, streams, limit)
	if err != nil {
		return nil, fmt.Errorf("read dead_letters: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLetter, error) {
		var d DeadLetter
		var raw []byte
		if err := r.Scan(&d.ID, &d.Stream, &d.EntryID, &d.OrderID, &d.Error, &d.CreatedAt, &raw); err != nil {
			return d, err
		}
		return d, json.Unmarshal(raw, &d.Fields)
	})
	if err != nil {
		return nil, fmt.Errorf("read dead_letters: %w", err)
	}
	return out, nil
}
