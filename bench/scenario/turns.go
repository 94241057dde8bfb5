package scenario

import (
	"context"
	"fmt"
)

// InTurns is a scenario that measures one deployment against another
// under the flash closed loop, in turns (alternate), so that their ratio
// is the deployments' difference and not the shared machine's minute. It
// needs both deployments, so it runs through Pair; the bench starts them.
type InTurns struct {
	name string
	// Base names the side the measured one is compared with.
	Base string
}

// The scenarios measured in turns:
//
//   - FlashDurable is the cost of durability: flash on a ticketd whose
//     Redis persists every write before it answers (the shipped
//     deploy/redis.conf) against the bench's ticketd, whose Redis does not
//     persist (FlashNonDurable).
//   - FlashReplicated is the cost of waiting for a replica: flash on a
//     ticketd that WAITs for one replica after every payment
//     (TICKETD_REDIS_WAIT_REPLICAS=1), its Redis a durable primary with one
//     replica, against FlashDurable's deployment: the same durable Redis
//     without a replica, no WAIT (FlashUnreplicated).
var (
	FlashDurable    = &InTurns{name: "flash-durable", Base: FlashNonDurable}
	FlashReplicated = &InTurns{name: "flash-replicated", Base: FlashUnreplicated}
)

// The sides the scenarios in turns are compared with.
const (
	FlashNonDurable   = "flash-nondurable"
	FlashUnreplicated = "flash-unreplicated"
)

// turnSlices is how many turns each side gets.
const turnSlices = 4

func (s *InTurns) Name() string { return s.name }

func (s *InTurns) Run(context.Context, *Env, Options) (*Outcome, error) {
	return nil, fmt.Errorf("%s needs two deployments: run it with Pair", s.name)
}

// Pair measures the two sides in turns, each for o.Duration in all
// (flash's 20 s by default), and returns each side's outcome.
func (s *InTurns) Pair(ctx context.Context, measured, base *Env, o Options) (measuredOut, baseOut *Outcome, err error) {
	outs, err := alternate(ctx, [2]*Env{measured, base}, [2]string{s.name, s.Base}, o, turnSlices)
	if err != nil {
		return nil, nil, err
	}
	return outs[0], outs[1], nil
}
