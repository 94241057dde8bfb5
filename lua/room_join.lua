-- room_join: a buyer's place in an event's waiting room (lib/room). One
-- place per identity: the buyer's e-mail (the place's id is derived from
-- its buyer key) and the device each name the place they joined with, and
-- a second join by either answers that place while it is live. A place
-- that left or whose pass lapsed joins again at the back of the line; a
-- waiting, admitted or used one stays as it is.
--
-- KEYS[1] -> room hash          {pN}:ev:<id>:room
-- KEYS[2] -> devices hash       {pN}:ev:<id>:room:who
-- KEYS[3] -> line zset          {pN}:ev:<id>:room:line
-- KEYS[4] -> places hash        {pN}:ev:<id>:room:places
-- KEYS[5] -> partition marker   {pN}:live (the room stops while it is missing)
-- KEYS[6] -> sold hash          {pN}:ev:<id>:sold
-- KEYS[7] -> passes zset        {pN}:ev:<id>:room:passes
-- KEYS[8] -> audit stream       {pN}:ev:<id>:room:audit
--
-- ARGV[1] -> the e-mail's queue id (room.Service placeID: an HMAC of the
--            buyer key, so the e-mail needs no entry of its own)
-- ARGV[2] -> buyer key (orders.BuyerKey of the e-mail)
-- ARGV[3] -> device id ("" when none)
-- ARGV[4] -> units asked for
-- ARGV[5] -> the place's rank in the shuffle, in [0, 1) ("": a fifo room)
-- ARGV[6] -> T0, Redis ms: a fair room ranks by the shuffle before it and
--            by arrival (1 + seq) from it
-- ARGV[7] -> pass TTL ms, ARGV[8] -> the most places one call admits,
-- ARGV[9] -> the room's stock (catalog Room.Spec, lib/room room_free)
--
-- A join runs lib/room's admission step when the answer depends on it: a
-- new place that nobody waits before (from T0, so it may be admitted at
-- once), and a second join (as a status call would). A new place behind a
-- line only takes its place: the ticks and the polls near the head move
-- the line, and a join in the rush costs no step.
--
-- Output:
--   {R.OK, queueId, reading...}      a new place (or one that joined again)
--                                    (lib/room room_reading)
--   {R.EXISTS, queueId, reading...}  the identity's place, unchanged but
--                                    for the step
--   {R.SHORT}                   nothing is left to wait for: every unit of
--                               the event is sold or held by a registration
--                               awaiting payment, and no pass is live (no
--                               place is made; holds that lapse give units
--                               back, and a later join is let in)
--   {R.STOPPED}                 the partition's marker is missing
--@include reply
--@include room
if redis.call('EXISTS', KEYS[5]) == 0 then
  return {R.STOPPED}
end
local k = {room = KEYS[1], who = KEYS[2], line = KEYS[3], places = KEYS[4], passes = KEYS[7], soldkey = KEYS[6],
  audit = KEYS[8]}
local bk, dev, qty = ARGV[2], ARGV[3], tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, t0, limit, spec = tonumber(ARGV[7]), tonumber(ARGV[6]), tonumber(ARGV[8]), ARGV[9]
-- One place per identity. The e-mail's place has the id ARGV[1] (derived
-- from its buyer key) and is answered while it is live (waiting, admitted
-- or used). A device names the place it joined for: while that place is
-- live, a join from the device with another e-mail is answered with it
-- (whose pass is its own e-mail's); once it left or lapsed, the device is
-- free for the new e-mail's place. A place that left or lapsed joins again
-- with its own id; no place ever changes e-mail.
local function live(s)
  return s and s ~= 'l' and s ~= 'x'
end
local id = ARGV[1]
local st = room_place(redis.call('HGET', k.places, id))
local other = nil
if not live(st) and dev ~= '' then
  other = redis.call('HGET', k.who, 'd:' .. dev)
  if other == id or not live(room_place(redis.call('HGET', k.places, other or ''))) then
    other = nil
  end
end
local r = room_read(k)
if live(st) or other then
  local found = other or id
  local left, _ = room_admit(k, now, ttl, t0, limit, spec, r)
  local fst, fqty, fexp, fbk = room_place(redis.call('HGET', k.places, found))
  return room_answer(R.EXISTS, {found}, room_reading(k, found, now, left, r, fst, fqty, fexp, fbk))
end

local free = room_free(k.soldkey, spec)
if free <= 0 and r.resv <= 0 then
  return {R.SHORT}
end

-- The new place is admitted by this call only when nobody waits before
-- it; while a line waits, the nodes' ticks and the polls near the head
-- move it (room_status), and the join writes only its place.
local admitting = now >= t0 and r.wn == 0
if admitting then
  room_check(k)
  k.checked = true
end
-- writes: the line first, the one key written unread, so a key of another
-- type fails the script before anything is written (the others were read)
r.seq = r.seq + 1
local rank = string.format('%d', 1 + r.seq) -- a string: the reply keeps a shuffle rank's fraction
if ARGV[5] ~= '' and now < t0 and not st then
  rank = ARGV[5]
end
redis.call('ZADD', k.line, rank, id)
if dev ~= '' then
  redis.call('HSET', k.who, 'd:' .. dev, id)
end
room_put(k.places, id, 'w', qty, 0, bk)
r.wn = r.wn + 1
r.wq = r.wq + qty
redis.call('HSET', k.room, 'seq', r.seq, 'wn', r.wn, 'wq', r.wq)
local left = free - r.resv
local pst, pqty, pexp = 'w', qty, 0
if admitting then
  local changed
  left, changed = room_admit(k, now, ttl, t0, limit, spec, r)
  if changed then
    pst, pqty, pexp = room_place(redis.call('HGET', k.places, id))
  end
end
return room_answer(R.OK, {id}, room_reading(k, id, now, left, r, pst, pqty, pexp, bk, rank))
