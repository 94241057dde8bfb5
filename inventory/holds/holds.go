// Package holds bounds what one client may hold without paying
// (docs/decisions.md, Storefront surface): at most a number of
// registrations awaiting payment and seat hold tokens per client IP per
// event (TICKETD_HOLDS_PER_IP). A client is known by its Key, a hash of
// its address (an IPv6 client by its /64, as the rate limits count it,
// handlers/clientip.Subscriber) under a key of the deployment, so Redis
// keeps no address.
//
// The counting is done by the scripts that create and end holds, in the
// event's hash slot (lua/lib/holds.lua): registrations in
// keys.Space.IPRegistrations, given back by every script that moves one
// out of "held" (paid, refunded, expired, replaced); hold tokens in
// keys.Space.IPTokens, scored by their expiry, so a token stops counting
// when it times out without any script running.
package holds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// Client is who a hold is counted for. The zero value counts nothing: a
// partner (bounded by its keys' rate limits instead) or a deployment with
// the limit off.
type Client struct {
	// Key is the client's hashed address.
	Key string
	// Limit is the most registrations awaiting payment and live hold
	// tokens the client may have per event.
	Limit int64
}

// Policy is how a surface counts holds: per client IP up to Limit (0
// counts none: TICKETD_HOLDS_PER_IP off), the client named under Key.
type Policy struct {
	Key   []byte
	Limit int64
}

// Client is the client of a subscriber under the policy (For).
func (p Policy) Client(subscriber string) Client { return For(p.Key, subscriber, p.Limit) }

// For is the client of a subscriber (handlers/clientip.Subscriber: an
// address, or an IPv6 /64) under limit; a limit of 0 or less (the limit
// off) counts nothing. Its Key is an HMAC of the subscriber under key (a
// key derived from TICKETD_SECRETS_KEY, the same on every node): a plain
// hash of an IPv4 address is undone by trying all 2^32, so Redis would
// hold the addresses in all but name.
func For(key []byte, subscriber string, limit int64) Client {
	if limit <= 0 || subscriber == "" {
		return Client{}
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(subscriber))
	return Client{Key: hex.EncodeToString(m.Sum(nil)[:8]), Limit: limit}
}

// Counted reports whether holds are counted for c.
func (c Client) Counted() bool { return c.Key != "" }

// LimitArg is the limit as a script argument ("0" when not counted).
func (c Client) LimitArg() string {
	if !c.Counted() {
		return "0"
	}
	return strconv.FormatInt(c.Limit, 10)
}

// LimitError is the 409 of a registration or hold token beyond the
// client's limit. It says what to do: finish or let go of a hold.
func LimitError(limit int64) *apierr.Error {
	return apierr.Of("HOLD_LIMIT_REACHED",
		"this address already holds %d unpaid registrations or seat holds for this event (a free registration "+
			"counts as one for a few minutes): finish paying for one, or wait until one of them ends, then try again", limit).
		WithData(map[string]any{"limit": limit})
}
