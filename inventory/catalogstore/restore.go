package catalogstore

import (
	"context"
	"fmt"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// EventCaps returns the capacity of every capped object of ev (field ->
// capacity, fields named as the order scripts name them) and the fields of
// its objects that have no capacity.
func EventCaps(ev *catalog.Event) (caps map[string]int64, uncapped []string) {
	return compileOne(ev).Caps(), uncappedFields(ev)
}

// Restore writes a catalog read from the record as the projection, under a
// version no node has served (the larger of the current one plus one and
// the time in ms): nodes reload it, and forget what they learnt under the
// versions before. Capacities are not written here: the rebuild writes
// them with the sold counts. The caller holds the catalog lock.
func (s *Store) Restore(ctx context.Context, tenants []catalog.Tenant, channels []catalog.StoredChannel) (int64, error) {
	if tenants == nil {
		tenants = []catalog.Tenant{}
	}
	if channels == nil {
		channels = []catalog.StoredChannel{}
	}
	b, err := json.Marshal(projected{Tenants: tenants, Channels: channels})
	if err != nil {
		return 0, fmt.Errorf("catalog: encode projection: %w", err)
	}
	cur, err := s.version(ctx)
	if err != nil {
		return 0, err
	}
	v := max(cur+1, time.Now().UnixMilli())
	res := s.Redis.DoMulti(ctx,
		s.Redis.B().Set().Key(s.Space.CatalogDoc()).Value(string(b)).Build(),
		s.Redis.B().Set().Key(s.Space.CatalogVersion()).Value(fmt.Sprint(v)).Build())
	for _, r := range res {
		if err := r.Error(); err != nil {
			return 0, fmt.Errorf("catalog: restore projection: %w", err)
		}
	}
	return v, nil
}
