package keys

// Keys of storefront registrations (inventory/registrations) and of the
// per-buyer limit both surfaces share.

// Expiry is partition p's sorted set of registrations awaiting payment,
// scored by the end of their checkout window (Redis time, ms). The sweeper
// reads it; only the expire and pay scripts remove members, so a sweep
// never misses one.
func (s Space) Expiry(p int) string { return s.Prefix + Tag(p) + ":regexp" }

// Buyers is the hash of an event's admissions per buyer: buyer key (see
// orders.BuyerKey) -> admissions held or sold. Kept for events with a
// maxTicketsPerBuyer only.
func (s Space) Buyers(eventID string) string { return s.eventKey(eventID, "buyers", "") }

// DiscountHoldsOrNone is DiscountHolds of code, or, for a script that
// takes no code, a placeholder name in the event's slot (nothing is
// written to it).
func (s Space) DiscountHoldsOrNone(eventID, code string) string {
	if code == "" {
		code = "-"
	}
	return s.DiscountHolds(eventID, code)
}
