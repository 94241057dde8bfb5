// Package keys names every Redis key ticketd uses. All names come from here so
// that the hash-tag rules stay in one place:
//
//   - everything about one event (counters, seats, holds, discount uses, its
//     pending and paid orders, its partition's paid stream) carries the tag
//     {p<N>} with N = fnv32a(eventID) mod Partitions, so one Lua script can
//     touch all of it inside one Redis Cluster slot;
//   - ids that must find their slot without a lookup (order ids) carry
//     their event's id inside them;
//   - idempotency records, rate-limit windows and the catalog projection sit
//     in slots of their own and are never touched by a script together with
//     event keys.
//
// A Space prefixes every name, so tests and several deployments can share one
// Redis without seeing each other's keys.
package keys

import (
	"errors"
	"strconv"
	"strings"
)

// Partitions is the fixed number of event partitions. Changing it moves
// events between slots, so it is a constant, not a setting.
const Partitions = 64

// Space is a key namespace. The zero value is the production namespace "".
type Space struct {
	Prefix string
}

// CheckPrefix refuses a key prefix with a brace: Redis Cluster hashes the
// text between a key's first '{' and the next '}', so a brace in the prefix
// would take the hash tag away from the partition's ({pN}) and either put
// every key in one slot (one master serves everything) or, with "{}",
// scatter one script's keys over several slots (the cluster refuses it).
func CheckPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return errors.New("a key prefix may not contain '{' or '}' (they would change the Redis Cluster hash tag)")
	}
	return nil
}

// Partition returns the partition of an event.
func Partition(eventID string) int {
	// FNV-1a, 32 bits, inline: hash/fnv would allocate on every key name.
	h := uint32(2166136261)
	for i := 0; i < len(eventID); i++ {
		h ^= uint32(eventID[i])
		h *= 16777619
	}
	return int(h % Partitions)
}

// tags holds every partition's hash tag, built once.
var tags = func() (t [Partitions]string) {
	for p := range t {
		t[p] = "{p" + strconv.Itoa(p) + "}"
	}
	return t
}()

// Tag returns the hash tag of partition p, e.g. "{p7}".
func Tag(p int) string { return tags[p] }

// Event returns the common prefix of all keys of one event, ending in ':'.
// Scripts receive it as an argument and never invent another tag.
func (s Space) Event(eventID string) string { return s.eventKey(eventID, "", "") }

// eventKey is an event's key with a suffix, built in one allocation (the
// hot path names several per request).
func (s Space) eventKey(eventID, suffix, name string) string {
	return s.Prefix + tags[Partition(eventID)] + ":ev:" + eventID + ":" + suffix + name
}

// Caps is the hash of capacities of an event: field -> capacity.
func (s Space) Caps(eventID string) string { return s.eventKey(eventID, "cap", "") }

// Sold is the hash of sold (claimed) counts of an event: field -> count.
func (s Space) Sold(eventID string) string { return s.eventKey(eventID, "sold", "") }

// Booked is the hash of booked seats of an event: seat label -> order id.
func (s Space) Booked(eventID string) string { return s.eventKey(eventID, "booked", "") }

// SeatHolds is the hash of an event's seats held by hold tokens: seat
// label -> "h:<token>", a space and the hold's expiry (ms, Redis time); it
// expires with its latest entry (lua/lib/seatholds.lua). With OrderSeats
// and RegSeats, three keys for all of an event's holds, so every script
// that changes a hold knows its keys before it runs.
func (s Space) SeatHolds(eventID string) string { return s.eventKey(eventID, "seats", "") }

// OrderSeats is the hash of an event's seats handed to pending partner
// orders: seat label -> "o:<orderId>", a space and the order's expiry (ms);
// it expires with its latest entry.
func (s Space) OrderSeats(eventID string) string { return s.eventKey(eventID, "ordseats", "") }

// RegSeats is the hash of the seats of an event's registrations awaiting
// payment: seat label -> "o:<regId>", held without expiry.
func (s Space) RegSeats(eventID string) string { return s.eventKey(eventID, "regseats", "") }

// Hold is the hash of one hold token of an event.
func (s Space) Hold(eventID, token string) string { return s.eventKey(eventID, "hold:", token) }

// DiscountUsed is the hash of consumed uses of an event's discount codes: code -> uses.
func (s Space) DiscountUsed(eventID string) string { return s.eventKey(eventID, "dcused", "") }

// DiscountHolds is the sorted set of an event's holds of limited discount
// codes: one member "<code>\n<orderId>" per pending order or registration
// holding a use, scored by its expiry (Redis time, ms; +inf for a
// registration's). With DiscountHeld, two keys for all of an event's codes,
// so every script that takes, settles or expires a hold knows its keys
// before it runs (lua/lib/cart.lua).
func (s Space) DiscountHolds(eventID string) string { return s.eventKey(eventID, "dcholds", "") }

// DiscountHeld is the hash of an event's discount holds per code: code ->
// its members in DiscountHolds (expired ones too, until a script drops
// them), so a code's live holds are read without scanning the others'.
func (s Space) DiscountHeld(eventID string) string { return s.eventKey(eventID, "dcheld", "") }

// Order is the hash of one order, in its event's slot (the order id names
// the event).
func (s Space) Order(orderID string) (string, bool) {
	ev, ok := OrderEvent(orderID)
	if !ok {
		return "", false
	}
	return s.Prefix + Tag(Partition(ev)) + ":ord:" + orderID, true
}

// Paid is the stream of paid orders of partition p, read by the sync worker.
func (s Space) Paid(p int) string { return s.Prefix + Tag(p) + ":paid" }

// Live is partition p's generation marker: it holds the generation id of
// the Redis state while that state is current (rebuilt from, or consistent
// with, Postgres). Every script that sells checks it first, so a Redis that
// lost its data (the marker with it) or is being rebuilt (the marker
// deleted) sells nothing, at once and on every node.
func (s Space) Live(p int) string { return s.Prefix + Tag(p) + ":live" }

// State is the hash that says which generation of the Redis state is in
// force: gen (its id), seq (a counter every node advances while the state
// is current, so a Redis restored from an older snapshot shows a lower
// one) and status ("live", "stale" once a node found it so, or "rebuilding").
func (s Space) State() string { return s.Prefix + "{catalog}:state" }

// WorkerAlive is a sync worker's liveness key, set with a short expiry and
// kept fresh while the worker runs: a consumer of the paid streams without
// one has stopped, and its pending entries are taken over at once.
func (s Space) WorkerAlive(consumer string) string { return s.Prefix + "{worker}:alive:" + consumer }

// Idempotency is the record of one Idempotency-Key. Keys are spread over
// their own partitions, apart from events, because one key may be (wrongly)
// reused against any event by any caller and must still be found.
func (s Space) Idempotency(key string) string {
	return s.Prefix + "{i" + strconv.Itoa(Partition(key)) + "}:idem:" + key
}

// RateLimit is the window of one limiter bucket (credential and endpoint class).
func (s Space) RateLimit(bucket string) string { return s.Prefix + "rl:{" + bucket + "}" }

// CatalogVersion is bumped on every catalog apply; nodes reload when it moves.
func (s Space) CatalogVersion() string { return s.Prefix + "{catalog}:version" }

// CatalogLock is the lease (inventory/lease) held by whoever writes the
// catalog: an apply, or a rebuild of Redis from Postgres.
func (s Space) CatalogLock() string { return s.Prefix + "{catalog}:version:lock" }

// SalesHeld is the hash of the events whose sales are held after a loss
// ticketd could not repair (event id -> lost units): a rebuild writes it
// before it publishes, ticketctl release and reconcile remove an event, and
// every node reads it on each state check (inventory/salesholds).
func (s Space) SalesHeld() string { return s.Prefix + "{catalog}:held" }

// CatalogDoc is the projected catalog: one JSON document of the tenants
// (with their events) and the stored channels, as applied.
func (s Space) CatalogDoc() string { return s.Prefix + "{catalog}:doc" }

// OrderID builds an order id for an event: "o" + random + "." + event id.
// Carrying the event lets confirm name every key of its script without
// reading the order first (one Redis round trip), and puts the order in its
// event's slot. random is lowercase letters and digits.
func OrderID(eventID, random string) string {
	b := make([]byte, 0, 2+len(random)+len(eventID))
	b = append(b, 'o')
	b = append(b, random...)
	b = append(b, '.')
	return string(append(b, eventID...))
}

// maxOrderRandom bounds the random part of an order id.
const maxOrderRandom = 40

// OrderEvent returns the event an order id names; ok is false for anything
// that is not an order id (so no key is ever built from client junk).
func OrderEvent(orderID string) (eventID string, ok bool) {
	if len(orderID) < 3 || orderID[0] != 'o' {
		return "", false
	}
	dot := strings.IndexByte(orderID, '.')
	if dot < 2 || dot > 1+maxOrderRandom {
		return "", false
	}
	for i := 1; i < dot; i++ {
		c := orderID[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return "", false
		}
	}
	ev := orderID[dot+1:]
	if !ValidID(ev) {
		return "", false
	}
	return ev, true
}

// MaxOrderID is the longest order id OrderID makes from a valid event id.
const MaxOrderID = 2 + maxOrderRandom + maxID

// maxID is the longest catalog id.
const maxID = 64

// ValidID reports whether s has the shape of a catalog id: 1 to 64 of
// A-Z a-z 0-9 _ . - (no ':' or braces, so it is safe inside key names).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > maxID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
