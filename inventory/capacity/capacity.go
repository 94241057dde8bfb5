// Package capacity is the one definition of "capacity left": a capacity
// field's cap minus what is sold. Sold counts every claim, a partner's
// confirmed order and a storefront registration held or paid alike, so the
// two surfaces can never together sell beyond a cap. A field without a cap
// is uncapped. The scripts that sell use the same definition from
// lua/lib/capacity.lua.
//
// Fields are the catalog's (catalog.CompiledEvent.Caps): "ev" (the event),
// "t:<ticket>", "sh:<showing>", "x:<extra>", "a:<area>", "tb:<table>",
// and the sellers' shares: "sf" (the storefront) and "ch:<channel>" (a
// partner channel), capped only on an event with a waiting room.
package capacity

// Event is the field of the event's own cap.
const Event = "ev"

// Storefront is the field of the storefront's share of an event: every
// storefront sale claims its admissions there, as every partner sale
// claims them in its channel's field (ChannelField), whatever the event,
// so the counts are there the day a waiting room caps them (catalog
// Room: the room's stock is the storefront's share, and each channel's
// allocation its own).
const Storefront = "sf"

// Kind is what a field caps: its name's prefix.
type Kind string

// The kinds of field; the event's own is Event alone, without an id.
const (
	KindEvent   Kind = Event
	KindTicket  Kind = "t"
	KindShowing Kind = "sh"
	KindExtra   Kind = "x"
	KindArea    Kind = "a"
	KindTable   Kind = "tb"
	// The sellers' shares: the storefront's (Storefront alone, without
	// an id) and a partner channel's.
	KindStorefront Kind = Storefront
	KindChannel    Kind = "ch"
)

// The fields of an event's parts are built here alone, so the prefixes
// are spelled once in Go (the scripts take the fields as Go names them).
func TicketField(id string) string  { return string(KindTicket) + ":" + id }
func ShowingField(id string) string { return string(KindShowing) + ":" + id }
func ExtraField(id string) string   { return string(KindExtra) + ":" + id }
func AreaField(id string) string    { return string(KindArea) + ":" + id }
func TableField(id string) string   { return string(KindTable) + ":" + id }
func ChannelField(id string) string { return string(KindChannel) + ":" + id }

// SellerField is the share a sale claims: its partner channel's, or the
// storefront's when channelID is "".
func SellerField(channelID string) string {
	if channelID == "" {
		return Storefront
	}
	return ChannelField(channelID)
}

// ForSeller bounds the event's remaining admissions by seller's share
// (SellerField) when that is capped, so what a seller is shown is what it
// can sell; remaining is changed in place and returned.
func ForSeller(remaining map[string]int64, seller string) map[string]int64 {
	share, ok := remaining[seller]
	if !ok {
		return remaining
	}
	if ev, capped := remaining[Event]; !capped || share < ev {
		remaining[Event] = share
	}
	return remaining
}

// Split is a field's kind and the id of what it caps ("" for the event).
func Split(field string) (Kind, string) {
	for i := 0; i < len(field); i++ {
		if field[i] == ':' {
			return Kind(field[:i]), field[i+1:]
		}
	}
	return Kind(field), ""
}

// Left is what is left to sell of a field capped at cap with sold sold:
// never below zero (a cap is never applied below its sold count, and a
// frozen field's cap is its sold count).
func Left(cap, sold int64) int64 {
	return max(cap-sold, 0)
}

// Remaining maps every capped field of caps to what is left of it, given
// the sold counts; uncapped fields are absent.
func Remaining(caps, sold map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(caps))
	for f, c := range caps {
		out[f] = Left(c, sold[f])
	}
	return out
}

// Ticket is what a buyer can get of a capped ticket type id: what is left
// of the ticket's cap, bounded by what is left of the event's. ok is false
// for a ticket without a cap (the event's remaining is shown on its own).
func Ticket(remaining map[string]int64, id string) (left int64, ok bool) {
	left, ok = remaining[TicketField(id)]
	if ev, capped := remaining[Event]; ok && capped && ev < left {
		left = ev
	}
	return left, ok
}
