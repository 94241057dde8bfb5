package orders

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// soldOut remembers, in this process, the capacity counters Redis reported
// used up, so that buyers of a sold-out event are answered without the
// reserve script: after a flash sale sells out, nearly every request is
// one of those. A counter's sold count grows but for a storefront
// checkout hold that expires unpaid (inventory/registrations gives its
// places back) and for a catalog apply that changes the capacity; an
// entry counts only under the catalog version it was learnt under, so a
// node forgets it when it loads the next catalog, and for soldOutFor only,
// which bounds how long places given back stay unseen (and covers an apply
// that failed halfway: it puts back the capacities it replaced without
// moving the version).
type soldOut struct {
	m sync.Map // event id + "\x00" + field -> soldOutEntry
}

// soldOutFor is how long a used-up counter is answered from memory before
// Redis is asked again: once a second per node and counter during a sale.
const soldOutFor = time.Second

type soldOutEntry struct {
	version int64
	until   time.Time
}

func soldOutKey(eventID, field string) string { return eventID + "\x00" + field }

func (s *soldOut) note(eventID, field string, version int64) {
	s.m.Store(soldOutKey(eventID, field), soldOutEntry{version: version, until: time.Now().Add(soldOutFor)})
}

// first returns the claimed field, first in field order (as the script
// checks them), known to be used up under this catalog version.
func (s *soldOut) first(eventID string, claims map[string]int64, version int64) (string, bool) {
	found := ""
	var now time.Time
	for f, q := range claims {
		if q <= 0 || (found != "" && f >= found) {
			continue
		}
		k := soldOutKey(eventID, f)
		v, ok := s.m.Load(k)
		if !ok {
			continue
		}
		if now.IsZero() {
			now = time.Now()
		}
		if e := v.(soldOutEntry); e.version != version || now.After(e.until) {
			s.m.CompareAndDelete(k, v) // another catalog, or time to ask Redis again
			continue
		}
		found = f
	}
	return found, found != ""
}

// answerSoldOut answers a reserve that claims a used-up counter. A key
// used before must still replay its order (or conflict), so the key is
// read first; a new key is not claimed, as no order will be created.
func (s *Service) answerSoldOut(ctx context.Context, req ReserveRequest, idem, field string) (Reservation, error) {
	answers, refused := req.Along.Do(ctx, s.Redis, s.Redis.B().Get().Key(idem).Build())
	if refused != nil {
		return Reservation{}, refused
	}
	prev, err := answers[0].ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return Reservation{}, CapacityError(field, 0)
	case err != nil:
		return Reservation{}, fmt.Errorf("reserve: read idempotency key: %w", err)
	}
	return s.claimedBefore(ctx, req, idem, prev)
}
