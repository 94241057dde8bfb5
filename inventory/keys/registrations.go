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

// Unpaid is the hash of an event's buyers with a registration awaiting
// payment: buyer key (orders.BuyerKey) -> that registration's id. One a
// buyer: a new registration of the buyer releases the one named here
// first. A registration leaves it when it leaves "held" (paid, refunded,
// expired, replaced), so it holds exactly the registrations awaiting
// payment and an event without any has none.
func (s Space) Unpaid(eventID string) string { return s.eventKey(eventID, "unpaid", "") }

// IPRegistrations is the hash of an event's registrations awaiting payment
// per client: client key (holds.Client) -> how many. Every script that
// moves a registration out of "held" gives its count back, so the hash
// holds exactly the live counts (a field at 0 is deleted, an empty hash
// is gone). A key of the event alone, because the scripts that end a hold
// (a processor's webhook, the sweeper) do not know the client.
func (s Space) IPRegistrations(eventID string) string { return s.eventKey(eventID, "ipregs", "") }

// IPTokens is the sorted set of one client's seat hold tokens of an event,
// scored by each token's expiry (Redis time, ms): a token counts while its
// score is ahead, so one that timed out stops counting by itself; the set
// expires with its last token. client "" names a placeholder in the event's
// slot for a call that counts no client (nothing is written to it).
func (s Space) IPTokens(eventID, client string) string {
	if client == "" {
		client = "-"
	}
	return s.eventKey(eventID, "iptok:", client)
}
