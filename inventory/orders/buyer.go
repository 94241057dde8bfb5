package orders

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// BuyerKey is the field a buyer's admissions are counted under for the
// per-buyer limit (decisions.md section 7): a hash of the normalised
// e-mail (trimmed, lower-cased), so the limit's hash holds no address. It
// is the one definition: reserve, register and a rebuild of Redis all
// count with it.
func BuyerKey(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return hex.EncodeToString(sum[:16])
}

// BuyerLimitError is the 409 of a cart that would take a buyer beyond the
// event's maxTicketsPerBuyer.
func BuyerLimitError(limit, remaining int64) *apierr.Error {
	if remaining < 0 {
		remaining = 0
	}
	return apierr.Of("BUYER_LIMIT_REACHED", "this buyer may have at most %d tickets for this event; %d remain", limit, remaining).
		WithData(map[string]any{"limit": limit, "remaining": remaining})
}
