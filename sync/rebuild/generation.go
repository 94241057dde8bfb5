package rebuild

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/redisstate"
)

// Generations is Postgres' record of the Redis state's generation, one row
// per key prefix (table redis_generations). It implements
// redisstate.Record.
type Generations struct {
	Pool   *pgxpool.Pool
	Prefix string // TICKETD_KEY_PREFIX
}

var _ redisstate.Record = (*Generations)(nil)

// Load returns the recorded generation; ok is false when none is.
func (g *Generations) Load(ctx context.Context) (redisstate.Mark, bool, error) {
	var m redisstate.Mark
	err := g.Pool.QueryRow(ctx, `SELECT gen, seq FROM redis_generations WHERE key_prefix = $1`, g.Prefix).Scan(&m.Gen, &m.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("rebuild: load generation: %w", err)
	}
	return m, true, nil
}

// Save records how far m's sequence got: inserted when no generation is
// recorded, raised (never lowered) for the same generation, and nothing
// when another generation is recorded (a rebuild replaced m's).
func (g *Generations) Save(ctx context.Context, m redisstate.Mark) error {
	_, err := g.Pool.Exec(ctx, `INSERT INTO redis_generations (key_prefix, gen, seq) VALUES ($1, $2, $3)
		ON CONFLICT (key_prefix) DO UPDATE SET seq = greatest(redis_generations.seq, excluded.seq)
		WHERE redis_generations.gen = excluded.gen`, g.Prefix, m.Gen, m.Seq)
	if err != nil {
		return fmt.Errorf("rebuild: save generation: %w", err)
	}
	return nil
}

// publish records gen as the generation in force, its sequence at 0. A
// rebuild does this before Redis shows gen, so a node that reads gen from
// Redis finds it recorded.
func (g *Generations) publish(ctx context.Context, gen string) error {
	_, err := g.Pool.Exec(ctx, `INSERT INTO redis_generations (key_prefix, gen, seq, rebuilt_at) VALUES ($1, $2, 0, now())
		ON CONFLICT (key_prefix) DO UPDATE SET gen = excluded.gen, seq = 0, rebuilt_at = now()`, g.Prefix, gen)
	if err != nil {
		return fmt.Errorf("rebuild: record generation: %w", err)
	}
	return nil
}
