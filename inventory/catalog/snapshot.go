package catalog

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/cidr"
)

// Snapshot is the compiled, read-only catalog a node serves from. It is
// replaced whole when the catalog changes, never mutated.
type Snapshot struct {
	Version  int64
	Tenants  map[string]*Tenant
	Events   map[string]*CompiledEvent
	Channels map[string]*CompiledChannel // by channel id
	ByKey    map[string]*CompiledChannel // by channel key
	// ChannelEvents lists, per channel id, the events in its catalog, by id.
	ChannelEvents map[string][]*CompiledEvent
	// PublishableKeys maps a storefront key to its tenant and domains.
	PublishableKeys map[string]*CompiledPublishableKey
}

// CompiledPublishableKey is a storefront key with its tenant.
type CompiledPublishableKey struct {
	PublishableKey
	TenantID string
}

// CompiledChannel is a channel ready for the hot path.
type CompiledChannel struct {
	StoredChannel
	secretHash [32]byte
	// SigningKey is the clear signing key, "" when none is configured.
	SigningKey string
	Scopes     map[string]bool
	Allow      []netip.Prefix
}

// SecretMatches compares a presented secret with the stored hash in
// constant time.
func (c *CompiledChannel) SecretMatches(secret []byte) bool {
	sum := sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(sum[:], c.secretHash[:]) == 1
}

// Allowed reports whether ip is on the channel's allowlist.
func (c *CompiledChannel) Allowed(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range c.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CompiledEvent is an event indexed for pricing and checks.
type CompiledEvent struct {
	*Event
	OnSale     time.Time // zero when no onSaleAt
	Tickets    map[string]*Ticket
	Extras     map[string]*Extra
	Showings   map[string]*Showing
	Discounts  map[string]*DiscountCode // by upper-cased code
	Categories map[string]*Category
	Rows       map[string]*Row
	Areas      map[string]*GAArea
	Tables     map[string]*Table
	Pricing    Pricing
	// MaxPerOrder is the most admissions one order, registration or hold
	// token of the event may hold: the event's maxPerOrder, or without one
	// DefaultMaxPerOrder raised to its largest ticket maxPerOrder and its
	// largest table (a table is sold whole), so that a default never makes
	// what the catalog sets unsellable.
	MaxPerOrder int64
	// Room is the event's waiting room with its defaults filled in, nil
	// when the event has none.
	Room *Room
}

// TicketMaxPerOrder is the most of ticket type t one order may hold: its
// own maxPerOrder, else the event's.
func (e *CompiledEvent) TicketMaxPerOrder(t *Ticket) int64 {
	if t.MaxPerOrder > 0 {
		return min(t.MaxPerOrder, e.MaxPerOrder)
	}
	return e.MaxPerOrder
}

// maxPerOrder is ev's CompiledEvent.MaxPerOrder.
func maxPerOrder(ev *Event) int64 {
	if ev.MaxPerOrder != nil && *ev.MaxPerOrder > 0 {
		return *ev.MaxPerOrder
	}
	n := int64(DefaultMaxPerOrder)
	for _, t := range ev.Tickets {
		n = max(n, t.MaxPerOrder)
	}
	if ev.SeatMap != nil {
		for _, t := range ev.SeatMap.Tables {
			n = max(n, int64(t.Seats))
		}
	}
	return min(n, MaxOrderAdmissions)
}

// Seated reports whether the event has a seat map.
func (e *CompiledEvent) Seated() bool { return e.SeatMap != nil }

// SeatCategory returns the category of a seat label "<row>-<n>", or nil when
// the label names no seat of the map.
func (e *CompiledEvent) SeatCategory(label string) (*Category, bool) {
	i := strings.LastIndexByte(label, '-')
	if i <= 0 {
		return nil, false
	}
	row, ok := e.Rows[label[:i]]
	if !ok {
		return nil, false
	}
	n, err := strconv.Atoi(label[i+1:])
	if err != nil || n < 1 || n > row.Seats || strconv.Itoa(n) != label[i+1:] {
		return nil, false
	}
	return e.Categories[row.Category], true
}

// Caps returns the capacity fields of the event as projected into Redis:
// "ev" (event cap), "t:<ticket>", "sh:<showing>", "x:<extra>", "a:<area>",
// "tb:<table>" (1: a table is sold whole), and with a waiting room the
// sellers' shares: "sf" (the room's stock) and "ch:<channel>" (its
// allocation). Fields without a cap are absent.
func (e *CompiledEvent) Caps() map[string]int64 {
	m := map[string]int64{}
	if e.Capacity != nil {
		m["ev"] = *e.Capacity
	}
	if r := e.Room; r != nil {
		m[capacity.Storefront] = r.Stock
		for ch, n := range r.Allocations {
			m[capacity.ChannelField(ch)] = n
		}
	}
	for _, t := range e.Event.Tickets {
		m[capacity.TicketField(t.ID)] = t.Capacity
	}
	for _, s := range e.Event.Showings {
		if s.Capacity != nil {
			m[capacity.ShowingField(s.ID)] = *s.Capacity
		}
	}
	for _, x := range e.Event.Extras {
		if x.Capacity != nil {
			m[capacity.ExtraField(x.ID)] = *x.Capacity
		}
	}
	if e.SeatMap != nil {
		for _, a := range e.SeatMap.GAAreas {
			m[capacity.AreaField(a.ID)] = a.Capacity
		}
		for _, t := range e.SeatMap.Tables {
			m[capacity.TableField(t.ID)] = 1
		}
	}
	return m
}

// Compile builds a Snapshot. Events and channels are assumed valid (they
// passed Validate when applied); sealer opens the signing keys.
func Compile(version int64, tenants []Tenant, channels []StoredChannel, sealer *Sealer) (*Snapshot, error) {
	s := &Snapshot{
		Version:         version,
		Tenants:         map[string]*Tenant{},
		Events:          map[string]*CompiledEvent{},
		Channels:        map[string]*CompiledChannel{},
		ByKey:           map[string]*CompiledChannel{},
		ChannelEvents:   map[string][]*CompiledEvent{},
		PublishableKeys: map[string]*CompiledPublishableKey{},
	}
	for i := range tenants {
		t := &tenants[i]
		s.Tenants[t.ID] = t
		for _, pk := range t.PublishableKeys {
			s.PublishableKeys[pk.Key] = &CompiledPublishableKey{PublishableKey: pk, TenantID: t.ID}
		}
		for j := range t.Events {
			ev := &t.Events[j]
			ev.TenantID = t.ID
			ce := compileEvent(ev)
			s.Events[ev.ID] = ce
			for _, ch := range ev.Channels {
				s.ChannelEvents[ch] = append(s.ChannelEvents[ch], ce)
			}
		}
	}
	for _, list := range s.ChannelEvents {
		sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	}
	for _, sc := range channels {
		cc := &CompiledChannel{StoredChannel: sc, Scopes: map[string]bool{}}
		if h, err := base64.RawStdEncoding.DecodeString(sc.SecretHash); err == nil && len(h) == 32 {
			copy(cc.secretHash[:], h)
		}
		if sc.SigningKeySealed != "" {
			k, err := sealer.Open(sc.SigningKeySealed)
			if err != nil {
				return nil, err
			}
			cc.SigningKey = k
		}
		for _, sc := range sc.Scopes {
			cc.Scopes[sc] = true
		}
		for _, a := range sc.IPAllowlist {
			if p, err := cidr.Parse(a); err == nil {
				cc.Allow = append(cc.Allow, p)
			}
		}
		s.Channels[sc.ID] = cc
		s.ByKey[sc.Key] = cc
	}
	return s, nil
}

func compileEvent(ev *Event) *CompiledEvent {
	ce := &CompiledEvent{
		Event:      ev,
		Tickets:    map[string]*Ticket{},
		Extras:     map[string]*Extra{},
		Showings:   map[string]*Showing{},
		Discounts:  map[string]*DiscountCode{},
		Categories: map[string]*Category{},
		Rows:       map[string]*Row{},
		Areas:      map[string]*GAArea{},
		Tables:     map[string]*Table{},
	}
	if ev.OnSaleAt != "" {
		ce.OnSale, _ = time.Parse(time.RFC3339, ev.OnSaleAt)
	}
	if ev.Pricing != nil {
		ce.Pricing = *ev.Pricing
	}
	ce.MaxPerOrder = maxPerOrder(ev)
	ce.Room = compileRoom(ev)
	for i := range ev.Tickets {
		ce.Tickets[ev.Tickets[i].ID] = &ev.Tickets[i]
	}
	for i := range ev.Extras {
		ce.Extras[ev.Extras[i].ID] = &ev.Extras[i]
	}
	for i := range ev.Showings {
		ce.Showings[ev.Showings[i].ID] = &ev.Showings[i]
	}
	for i := range ev.DiscountCodes {
		ce.Discounts[strings.ToUpper(ev.DiscountCodes[i].Code)] = &ev.DiscountCodes[i]
	}
	if sm := ev.SeatMap; sm != nil {
		for i := range sm.Categories {
			ce.Categories[sm.Categories[i].ID] = &sm.Categories[i]
		}
		for i := range sm.Rows {
			ce.Rows[sm.Rows[i].Label] = &sm.Rows[i]
		}
		for i := range sm.GAAreas {
			ce.Areas[sm.GAAreas[i].ID] = &sm.GAAreas[i]
		}
		for i := range sm.Tables {
			ce.Tables[sm.Tables[i].ID] = &sm.Tables[i]
		}
	}
	return ce
}
