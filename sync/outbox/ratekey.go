package outbox

import (
	"net/mail"
	"strings"

	"github.com/ticketd/ticketd/inventory/orders"
)

// RateKey is the address a buyer's hourly mail limit counts by (the
// outbox's rate_key): recipient normalised as the buyer limits normalise
// it (orders.NormalizeEmail: lower-cased, without a +tag, without the dots
// of a gmail.com or googlemail.com local part), so that spellings of one
// mailbox share one limit. sync/worker stores it with each buyer row, so
// that the mailer queues an address's rows without claiming each one;
// sync/mailer computes it again for rows written before it was stored.
func RateKey(recipient string) string {
	addr := strings.TrimSpace(recipient)
	if a, err := mail.ParseAddress(addr); err == nil {
		addr = a.Address
	}
	return orders.NormalizeEmail(addr)
}
