package orders

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// BuyerKey is the field a buyer is counted under: admissions for the
// per-buyer limit (decisions.md section 7) and the one registration
// awaiting payment a buyer may have per event. It is a hash of
// NormalizeEmail's address, so Redis holds no address. It is the one
// definition: reserve, register and a rebuild of Redis all count with it.
func BuyerKey(email string) string {
	sum := sha256.Sum256([]byte(NormalizeEmail(email)))
	return hex.EncodeToString(sum[:16])
}

// NormalizeEmail is the one spelling of a buyer's address: trimmed and
// lower-cased, a "+tag" dropped from the local part, and, for gmail.com
// and googlemail.com (one mailbox, which ignores dots in its local part),
// the dots dropped and the domain gmail.com. So "Ann.Lee+vip@GoogleMail.com"
// and "annlee@gmail.com" are one buyer: the spellings that reach one inbox
// pass no limit twice. Anything else (no '@', an empty local part after
// the tag) is returned trimmed and lower-cased.
func NormalizeEmail(email string) string {
	e := strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(e, '@')
	if at <= 0 {
		return e
	}
	local, domain := e[:at], e[at+1:]
	if i := strings.IndexByte(local, '+'); i > 0 {
		local = local[:i]
	}
	if domain == "gmail.com" || domain == "googlemail.com" {
		local, domain = strings.ReplaceAll(local, ".", ""), "gmail.com"
	}
	if local == "" {
		return e
	}
	return local + "@" + domain
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
