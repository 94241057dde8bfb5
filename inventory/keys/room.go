package keys

// Keys of an event's waiting room (inventory/room). All of them sit in the
// event's slot, so the scripts that admit, burn and expire passes read the
// room and the event's capacity and sold counts in one step.

// Room is the hash of an event's waiting room: seq (arrivals so far),
// resv (units reserved by live passes), wn and wq (waiters and the units
// they asked for), admitted, used and lapsed (passes so far), first (Redis
// ms of the first pass).
func (s Space) Room(eventID string) string { return s.eventKey(eventID, "room", "") }

// RoomWho is the hash of the room's devices: "d:<device>" -> the place
// (queue id) it joined for, so a second join from it answers that place
// (an e-mail needs no entry: its place's id is derived from it).
func (s Space) RoomWho(eventID string) string { return s.eventKey(eventID, "room:who", "") }

// RoomLine is the sorted set of the room's waiters: queue id -> rank (a
// fair room's pre-queue ranks in [0, 1) by the shuffle, later arrivals
// from 1 in order of arrival). Admission takes it from the head.
func (s Space) RoomLine(eventID string) string { return s.eventKey(eventID, "room:line", "") }

// RoomPlaces is the hash of the room's places: queue id -> its state
// (lua/lib/room.lua room_place).
func (s Space) RoomPlaces(eventID string) string { return s.eventKey(eventID, "room:places", "") }

// RoomPasses is the sorted set of the room's live passes: queue id -> the
// pass's expiry (Redis ms).
func (s Space) RoomPasses(eventID string) string { return s.eventKey(eventID, "room:passes", "") }

// RoomAudit is the stream of the room's audit: each pass given (in the
// order of admission, with the place's rank), used, lapsed or given back
// by its holder leaving, and the shuffle key once shown (lua/lib/room.lua
// room_audit). It keeps about the last million entries.
func (s Space) RoomAudit(eventID string) string { return s.eventKey(eventID, "room:audit", "") }
