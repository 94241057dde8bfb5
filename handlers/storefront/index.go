package storefront

import "github.com/ticketd/ticketd/inventory/catalog"

// index is what the storefront derives from one catalog snapshot: the
// publishable keys with their domains ready to compare, and each tenant's
// events by id, shortId and slug. It is built once per snapshot, on the
// first request that sees it (API.idx, a catalog.Derived).
type index struct {
	keys map[string]*pubKey
	// anyKey lists the domains of every enabled key: a CORS preflight
	// carries no x-service-key, so it can only be answered for an origin
	// some key allows (the request itself is then checked against its key).
	anyKey  []string
	tenants map[string]*tenantEvents
}

// pubKey is a publishable key as the gate uses it.
type pubKey struct {
	key      string // the publishable key itself, for messages
	tenantID string
	enabled  bool
	domains  []string // NormalDomain'd
}

// tenantEvents finds a tenant's events by the three names interface.md
// allows; an id wins over a shortId, a shortId over a slug.
type tenantEvents struct {
	byID, byShortID, bySlug map[string]*catalog.CompiledEvent
}

func (t *tenantEvents) find(ref string) *catalog.CompiledEvent {
	if t == nil || ref == "" {
		return nil
	}
	if ev := t.byID[ref]; ev != nil {
		return ev
	}
	if ev := t.byShortID[ref]; ev != nil {
		return ev
	}
	return t.bySlug[ref]
}

func buildIndex(snap *catalog.Snapshot) *index {
	ix := &index{keys: map[string]*pubKey{}, tenants: map[string]*tenantEvents{}}
	for k, pk := range snap.PublishableKeys {
		p := &pubKey{key: k, tenantID: pk.TenantID, enabled: pk.Enabled, domains: make([]string, len(pk.Domains))}
		for i, d := range pk.Domains {
			p.domains[i] = NormalDomain(d)
		}
		ix.keys[k] = p
		if p.enabled {
			ix.anyKey = append(ix.anyKey, p.domains...)
		}
	}
	for id, t := range snap.Tenants {
		te := &tenantEvents{byID: map[string]*catalog.CompiledEvent{}, byShortID: map[string]*catalog.CompiledEvent{},
			bySlug: map[string]*catalog.CompiledEvent{}}
		for i := range t.Events {
			ev := snap.Events[t.Events[i].ID]
			if ev == nil {
				continue
			}
			te.byID[ev.ID] = ev
			if ev.ShortID != "" {
				te.byShortID[ev.ShortID] = ev
			}
			// Slugs are unique only per tenant; should two of its events
			// share one, the first in the document wins.
			if _, dup := te.bySlug[ev.Slug]; ev.Slug != "" && !dup {
				te.bySlug[ev.Slug] = ev
			}
		}
		ix.tenants[id] = te
	}
	return ix
}
