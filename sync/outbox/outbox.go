// Package outbox names the kinds of rows in the outbox table (the CHECK of
// migration 003) and the address a buyer's mail limit counts by, once for
// the writers (sync/worker, sync/refunddb) and the reader (sync/mailer). It
// imports only inventory/orders, so any sync package may import it.
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
