package registrations

import (
	"context"
	"fmt"

	"github.com/ticketd/ticketd/inventory/payments"
)

// Processors is the Expirer of a deployment's payment processors, by
// name (payments.Processor.Name): the sweeper closes each session through
// the processor that opened it.
type Processors map[string]payments.Processor

// NewProcessors indexes ps by name.
func NewProcessors(ps ...payments.Processor) Processors {
	m := make(Processors, len(ps))
	for _, p := range ps {
		m[p.Name()] = p
	}
	return m
}

// Expire closes the session through its processor.
func (m Processors) Expire(ctx context.Context, processor, sessionID string) (bool, error) {
	p, ok := m[processor]
	if !ok {
		return false, fmt.Errorf("no payment processor %q is configured", processor)
	}
	return p.Expire(ctx, sessionID)
}
