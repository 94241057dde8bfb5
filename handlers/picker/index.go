package picker

import (
	"strings"

	"github.com/ticketd/ticketd/handlers/storefront"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// index is what the picker derives from one catalog snapshot: events by
// shortId (unique across tenants, catalog validation) and each tenant's
// site domains. It is built once per snapshot, on the first request that
// sees it (Picker.idx, a catalog.Derived).
type index struct {
	byShortID map[string]*catalog.CompiledEvent
	tenants   map[string]*site
}

// site is a tenant's storefront domains: those of its enabled publishable
// keys.
type site struct {
	// domains are the entries as the page's script compares a host with
	// them (lower-cased, no port or trailing dot), in document order.
	domains []string
	// frameAncestors is the CSP source list of those domains.
	frameAncestors string
}

func buildIndex(snap *catalog.Snapshot) *index {
	ix := &index{byShortID: map[string]*catalog.CompiledEvent{}, tenants: map[string]*site{}}
	for _, ev := range snap.Events {
		ix.byShortID[ev.ShortID] = ev
	}
	for id, t := range snap.Tenants {
		s := &site{}
		seen := map[string]bool{}
		var sources []string
		for _, k := range t.PublishableKeys {
			if !k.Enabled {
				continue
			}
			for _, d := range k.Domains {
				d = storefront.NormalDomain(d)
				if d == "" || seen[d] {
					continue
				}
				seen[d] = true
				s.domains = append(s.domains, d)
				if cspHost(d) {
					sources = append(sources, "http://"+d+":*", "https://"+d+":*")
				}
			}
		}
		s.frameAncestors = strings.Join(sources, " ")
		if s.frameAncestors == "" {
			s.frameAncestors = "'none'"
		}
		ix.tenants[id] = s
	}
	return ix
}

// cspHost reports whether a normalised domain can be written as a CSP
// host source as it is: DNS labels of letters, digits and hyphens (or an
// IPv4 address), optionally under "*.". Anything else (an IPv6 address,
// which CSP cannot name; a stray character that would end the source
// list) is left out of frame-ancestors, so it can only deny.
func cspHost(d string) bool {
	d = strings.TrimPrefix(d, "*.")
	if d == "" {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// hasSite reports whether a tenant has a site the picker can serve: an
// enabled publishable key with a domain. The page and its API both need it.
func (ix *index) hasSite(tenantID string) bool {
	s := ix.tenants[tenantID]
	return s != nil && len(s.domains) > 0
}
