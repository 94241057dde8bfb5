package payments

import (
	"context"
	"fmt"
)

// Set is the processors ticketd runs, by name. Its Expire is the
// registrations.Expirer the sweeper calls before it gives a hold back.
type Set map[string]Processor

// NewSet indexes processors by their Name.
func NewSet(ps ...Processor) Set {
	s := make(Set, len(ps))
	for _, p := range ps {
		s[p.Name()] = p
	}
	return s
}

// Expire expires the named processor's session; paid reports it had been
// paid. An unknown processor is an error: the hold must not be given back
// while a session nobody can close might still be paid.
func (s Set) Expire(ctx context.Context, processor, sessionID string) (paid bool, err error) {
	p, ok := s[processor]
	if !ok {
		return false, fmt.Errorf("payments: no processor %q", processor)
	}
	return p.Expire(ctx, sessionID)
}
