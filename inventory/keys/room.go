package keys

import "strings"

// Keys of a waiting room (inventory/room). All of them sit in the event's
// slot, so the scripts that admit, burn and expire passes read the room
// and the event's capacity and sold counts in one step.
//
// A room is named by its room id (RoomID): an event's id, or, on a
// multi-showing event, a line per showing, "<event>@<showing>". A showing's
// room has keys of its own but for the room hash: the event's one hash
// holds every showing's figures, each field suffixed (RoomFields), so
// reg_pay, which knows only a registration's event before it runs, names
// it.

// RoomID is the id of the waiting room of showingID ("": the whole
// event's) of the event. '@' is in no catalog id (ValidID).
func RoomID(eventID, showingID string) string {
	if showingID == "" {
		return eventID
	}
	return eventID + "@" + showingID
}

// SplitRoom is a room id's event and showing ("" for an event's room).
func SplitRoom(roomID string) (eventID, showingID string) {
	ev, sh, _ := strings.Cut(roomID, "@")
	return ev, sh
}

// RoomFields is the suffix of a room's fields in the room hash: "" for an
// event's room, ":<showing>" for a showing's (lua/lib/room.lua room_f).
func RoomFields(roomID string) string {
	if _, sh := SplitRoom(roomID); sh != "" {
		return ":" + sh
	}
	return ""
}

// roomKey is a key of the room: the event's, with "@<showing>" after its
// kind for a showing's room.
func (s Space) roomKey(roomID, kind string) string {
	ev, sh := SplitRoom(roomID)
	if sh != "" {
		sh = "@" + sh
	}
	return s.eventKey(ev, kind, sh)
}

// Room is the hash of an event's waiting rooms (roomID names the event,
// or one of its showings' rooms, which share it): seq (arrivals so far),
// resv (units reserved by live passes), wn and wq (waiters and the units
// they asked for), admitted, used and lapsed (passes so far), first (Redis
// ms of the first pass), each suffixed by RoomFields.
func (s Space) Room(roomID string) string {
	ev, _ := SplitRoom(roomID)
	return s.eventKey(ev, "room", "")
}

// RoomWho is the hash of the room's devices: "d:<device>" -> the place
// (queue id) it joined for, so a second join from it answers that place
// (an e-mail needs no entry: its place's id is derived from it).
func (s Space) RoomWho(roomID string) string { return s.roomKey(roomID, "room:who") }

// RoomLine is the sorted set of the room's waiters: queue id -> rank (a
// fair room's pre-queue ranks in [0, 1) by the shuffle, later arrivals
// from 1 in order of arrival). Admission takes it from the head.
func (s Space) RoomLine(roomID string) string { return s.roomKey(roomID, "room:line") }

// RoomPlaces is the hash of the room's places: queue id -> its state
// (lua/lib/room.lua room_place).
func (s Space) RoomPlaces(roomID string) string { return s.roomKey(roomID, "room:places") }

// RoomPasses is the sorted set of the room's live passes: queue id -> the
// pass's expiry (Redis ms).
func (s Space) RoomPasses(roomID string) string { return s.roomKey(roomID, "room:passes") }

// RoomAudit is the stream of the room's audit: each pass given (in the
// order of admission, with the place's rank), used, lapsed or given back
// by its holder leaving, and the shuffle key once shown (lua/lib/room.lua
// room_audit). It keeps about the last million entries.
func (s Space) RoomAudit(roomID string) string { return s.roomKey(roomID, "room:audit") }
