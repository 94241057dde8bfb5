package scenario

import (
	"context"
	"errors"
)

// FlashDurable is the cost of durability: the flash closed loop on a
// ticketd whose Redis persists every write before it answers (the shipped
// deploy/redis.conf), measured in turns with the same loop on a ticketd
// whose Redis does not persist (alternate). It needs both deployments, so
// it runs through Pair; the bench starts the durable one.
var FlashDurable = flashDurable{}

// FlashNonDurable names the side without persistence.
const FlashNonDurable = "flash-nondurable"

// durableSlices is how many turns each side gets.
const durableSlices = 4

type flashDurable struct{}

func (flashDurable) Name() string { return "flash-durable" }

func (flashDurable) Run(context.Context, *Env, Options) (*Outcome, error) {
	return nil, errors.New("flash-durable needs two deployments: run it with FlashDurable.Pair")
}

// Pair measures durable and plain in turns, each for o.Duration in all
// (flash's 20 s by default), and returns each side's outcome.
func (flashDurable) Pair(ctx context.Context, durable, plain *Env, o Options) (durableOut, plainOut *Outcome, err error) {
	outs, err := alternate(ctx, [2]*Env{durable, plain}, [2]string{FlashDurable.Name(), FlashNonDurable}, o, durableSlices)
	if err != nil {
		return nil, nil, err
	}
	return outs[0], outs[1], nil
}
