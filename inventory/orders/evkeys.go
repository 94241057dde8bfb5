package orders

import (
	"sync"
	"sync/atomic"

	"github.com/ticketd/ticketd/inventory/keys"
)

// eventKeys are the KEYS of an event's order scripts, built once an event:
// each request otherwise concatenated a dozen names of the same event.
// The first key, the order's, is each call's own; so is reserve's hold key
// (its fifth) when the cart has a hold token.
type eventKeys struct {
	sale    []string // a new sale's: order_reserve.lua's, and reg_register.lua's first
	confirm []string // order_confirm.lua
}

// maxCachedEvents bounds the cache: beyond it an event's keys are built
// for each request, as they were before it.
const maxCachedEvents = 4096

// keyCache holds the eventKeys of events reserved on this node. Only
// reserve adds (its event is the catalog's); confirm, whose event comes
// from the caller's order id, only reads.
type keyCache struct {
	m sync.Map // event id -> *eventKeys
	n atomic.Int64
}

// keysOf returns ev's keys, from the cache or built; remember adds built
// ones to it while it has room.
func (s *Service) keysOf(ev string, remember bool) *eventKeys {
	if k, ok := s.evKeys.m.Load(ev); ok {
		return k.(*eventKeys)
	}
	sp, p := s.Space, keys.Partition(ev)
	k := &eventKeys{
		sale: []string{"", sp.Caps(ev), sp.Sold(ev), sp.Booked(ev), sp.Hold(ev, "-"),
			sp.DiscountHolds(ev), sp.DiscountUsed(ev), sp.Live(p),
			sp.Buyers(ev), sp.SeatHolds(ev), sp.OrderSeats(ev), sp.RegSeats(ev), sp.DiscountHeld(ev)},
		confirm: []string{"", sp.Caps(ev), sp.Sold(ev), sp.Booked(ev), sp.DiscountHolds(ev),
			sp.DiscountUsed(ev), sp.Paid(p), sp.Live(p), sp.Buyers(ev), sp.OrderSeats(ev),
			sp.DiscountHeld(ev)},
	}
	if remember && s.evKeys.n.Load() < maxCachedEvents {
		if _, had := s.evKeys.m.LoadOrStore(ev, k); !had {
			s.evKeys.n.Add(1)
		}
	}
	return k
}

// withOrder is a copy of list with the order's key first, and room for
// extra more keys.
func withOrder(list []string, okey string, extra int) []string {
	ks := append(make([]string, 0, len(list)+extra), list...)
	ks[0] = okey
	return ks
}

// plainSaleKeys is how many of SaleKeys order_reserve.lua reads for a cart
// without seats, discount code or buyer limit: up to the partition's
// marker; reserve sends no more then (each key costs Redis a string).
const plainSaleKeys = 8

// SaleKeys are the KEYS a new sale's script starts with, the same for a
// partner order (order_reserve.lua) and a storefront registration
// (reg_register.lua: lib/cart.lua's cart_sale_refusal reads them): the
// sale's hash okey, the event's counters and holds, and the hold token's
// hash (token "" for none). extra is room for the caller's own keys.
func (s *Service) SaleKeys(ev, okey, token string, extra int) []string {
	ks := withOrder(s.keysOf(ev, true).sale, okey, extra)
	if token != "" {
		ks[4] = s.Space.Hold(ev, token)
	}
	return ks
}
