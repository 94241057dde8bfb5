// Package redisstate knows whether the Redis state ticketd sells from is
// current: the generation markers that a rebuild from Postgres publishes,
// the monitor that checks them on every node a few times a second (loss,
// rollback to an older snapshot, unreachable, loading), the gate that stops
// sales meanwhile, and what a Redis crash would lose (its persistence
// settings).
//
// The model (keys.Space.State and keys.Space.Live):
//   - a generation is one continuous life of the Redis state, begun by a
//     rebuild from Postgres (or by the first start of a deployment); its id
//     is random and Postgres records it (Record);
//   - every partition holds a marker with the generation id; the scripts
//     that sell check it, so a Redis that lost its data sells nothing, at
//     once, on every node;
//   - the state hash holds the id, a sequence number every node advances
//     while the state is live, and the status; a node that reads a lower
//     number than it saw before, or than Postgres recorded, is looking at an
//     older snapshot, and marks the state stale for every node.
package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
)

// Statuses of the state hash.
const (
	statusLive       = "live"
	statusStale      = "stale" // a node found the live generation stale
	statusRebuilding = "rebuilding"
)

// NewGeneration returns a fresh generation id.
func NewGeneration() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// MarkRebuilding stops every sale before a rebuild: the state hash says
// "rebuilding" (nodes close their gates at their next check) and every
// partition's marker is deleted (scripts refuse at once).
func MarkRebuilding(ctx context.Context, rc rueidis.Client, space keys.Space) error {
	cmds := make(rueidis.Commands, 0, 1+keys.Partitions)
	cmds = append(cmds, rc.B().Hset().Key(space.State()).FieldValue().FieldValue("status", statusRebuilding).Build())
	for p := range keys.Partitions {
		cmds = append(cmds, rc.B().Del().Key(space.Live(p)).Build())
	}
	for _, r := range rc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("redisstate: mark rebuilding: %w", err)
		}
	}
	return nil
}

// Publish makes gen the live generation: every partition's marker first
// (scripts sell again), then the state hash with its sequence reset (nodes
// adopt it at their next check). A state hash without all its markers
// reads as a loss, so the markers go first.
func Publish(ctx context.Context, rc rueidis.Client, space keys.Space, gen string) error {
	cmds := make(rueidis.Commands, 0, keys.Partitions)
	for p := range keys.Partitions {
		cmds = append(cmds, rc.B().Set().Key(space.Live(p)).Value(gen).Build())
	}
	for _, r := range rc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("redisstate: publish generation: %w", err)
		}
	}
	err := rc.Do(ctx, rc.B().Hset().Key(space.State()).FieldValue().
		FieldValue("gen", gen).FieldValue("seq", "0").FieldValue("status", statusLive).Build()).Error()
	if err != nil {
		return fmt.Errorf("redisstate: publish generation: %w", err)
	}
	return nil
}

// Published returns the generation the state hash says is live when every
// partition's marker holds it, and "" when there is none (the state is
// lost, stale or being rebuilt, or a marker could not be read or is not
// that generation's).
func Published(ctx context.Context, rc rueidis.Client, space keys.Space) (string, error) {
	st, err := rc.Do(ctx, rc.B().Hmget().Key(space.State()).Field("status", "gen").Build()).ToArray()
	if err != nil {
		return "", fmt.Errorf("redisstate: read state: %w", err)
	}
	status, _ := st[0].ToString()
	gen, _ := st[1].ToString()
	if status != statusLive || gen == "" {
		return "", nil
	}
	cmds := make(rueidis.Commands, keys.Partitions)
	for p := range cmds {
		cmds[p] = rc.B().Get().Key(space.Live(p)).Build()
	}
	for _, res := range rc.DoMulti(ctx, cmds...) {
		if v, err := res.ToString(); err != nil || v != gen {
			return "", nil
		}
	}
	return gen, nil
}
