package seats

import (
	"errors"
	"testing"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
)

// Without its partition's marker (Redis lost its booked seats, or a
// rebuild runs) nothing is held: a seat sold before the loss must not be
// handed to a new buyer.
func TestHoldRefusesWhileTheMarkerIsMissing(t *testing.T) {
	b := setup(t)
	tok := b.token(t, "ev_seated")
	if err := b.rc.Do(b.ctx, b.rc.B().Del().Key(b.sp.Live(keys.Partition("ev_seated"))).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-1"}); !errors.Is(err, redisstate.ErrSalesStopped) {
		t.Fatalf("hold without the marker: %v, want ErrSalesStopped", err)
	}
	if v := b.seat(t, "ev_seated", "A-1"); v != "" {
		t.Fatalf("seat held as %q", v)
	}
}
