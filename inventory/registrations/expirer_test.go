package registrations

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/inventory/payments"
)

type fakeProcessor struct {
	name   string
	paid   bool
	closed []string
}

func (f *fakeProcessor) Name() string { return f.name }
func (f *fakeProcessor) CreateSession(context.Context, payments.CheckoutRequest) (payments.Session, error) {
	return payments.Session{}, nil
}
func (f *fakeProcessor) Expire(_ context.Context, id string) (bool, error) {
	f.closed = append(f.closed, id)
	return f.paid, nil
}

// The sweeper's sessions are closed by the processor that opened them; a
// processor the deployment no longer has is an error (the hold waits a
// grace period, then expires).
func TestProcessorsCloseThroughTheNamedProcessor(t *testing.T) {
	card, wallet := &fakeProcessor{name: "card"}, &fakeProcessor{name: "wallet", paid: true}
	ps := NewProcessors(card, wallet)
	if paid, err := ps.Expire(context.Background(), "wallet", "w1"); err != nil || !paid || len(wallet.closed) != 1 || len(card.closed) != 0 {
		t.Fatalf("wallet session: %v %v, closed %v %v", paid, err, wallet.closed, card.closed)
	}
	if _, err := ps.Expire(context.Background(), "stripe", "cs_1"); err == nil {
		t.Fatal("a session of an unknown processor was taken as closed")
	}
}
