// Package outbox names the kinds of rows in the outbox table (the CHECK of
// migration 003), once for the writers (sync/worker, sync/refunddb) and the
// reader (sync/mailer). It imports nothing, so any package may import it.
package outbox

// Kinds of outbox rows.
const (
	// BuyerTickets is the buyer's e-mail with the tickets of a paid order
	// (written by sync/worker).
	BuyerTickets = "buyer_tickets"
	// HostNotify is the host's notice of a new storefront registration
	// (written by sync/worker).
	HostNotify = "host_notify"
	// HostRefund is the host's notice of a payment to refund (written by
	// sync/refunddb).
	HostRefund = "host_refund"
)
