-- room_join: buyers' places in an event's waiting room (lib/room), a
-- batch of joins in one call (inventory/room joins: the joins a node
-- receives while its last call runs go together, so a rush costs Redis a
-- call per batch, not per buyer). One place per identity: the buyer's
-- e-mail (the place's id is derived from its buyer key) and the device
-- each name the place they joined with, and a second join by either
-- answers that place while it is live. A place that left or whose pass
-- lapsed joins again at the back of the line; a waiting, admitted or used
-- one stays as it is. The joins of a batch are taken in order, so two of
-- one identity make one place.
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
-- ARGV[1] -> T0, Redis ms: a fair room ranks by the shuffle before it and
--            by arrival (1 + seq) from it
-- ARGV[2] -> pass TTL ms, ARGV[3] -> the most places one call admits
-- ARGV[4] -> the room's stock (catalog Room.Spec, lib/room room_free)
-- ARGV[5] -> the suffix of the room's fields in the room hash
--            (keys.RoomFields: '' or ':<showing>', lib/room room_f)
-- then five for each join, from ARGV[6]:
--   the e-mail's queue id (room.Service placeID: an HMAC of the buyer
--   key, so the e-mail needs no entry of its own), the buyer key
--   (orders.BuyerKey of the e-mail), the device id ("" when none), the
--   units asked for, the place's rank in the shuffle in [0, 1) ("": a fifo
--   room)
--
-- The call runs lib/room's admission step when an answer depends on it: a
-- new place that nobody waits before (from T0, so it may be admitted at
-- once), and a second join (as a status call would). New places behind a
-- line only take their places: the ticks and the polls move the line, and
-- a join in the rush costs no step.
--
-- Output: {R.STOPPED} (the partition's marker is missing), or {R.OK,
-- figures..., answer...}: the room's figures after the step once, as every
-- join of the batch is told them (lib/room room_figures), then an answer
-- for each join in order:
--   {R.OK, queueId, place...}      a new place (or one that joined again)
--                                  (lib/room room_place_reading)
--   {R.EXISTS, queueId, place...}  the identity's place, unchanged but for
--                                  the step
--   {R.SHORT}                      nothing is left to wait for: every unit
--                                  of the event is sold or held by a
--                                  registration awaiting payment, and no
--                                  pass is live (no place is made; holds
--                                  that lapse give units back, and a later
--                                  join is let in)
--@include reply
--@include room
if redis.call('EXISTS', KEYS[5]) == 0 then
  return {R.STOPPED}
end
local k = {room = KEYS[1], who = KEYS[2], line = KEYS[3], places = KEYS[4], passes = KEYS[7], soldkey = KEYS[6],
  audit = KEYS[8]}
k.sfx = ARGV[5]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local t0, ttl, limit, spec = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
-- One place per identity. The e-mail's place has the id of its join
-- (derived from its buyer key) and is answered while it is live (waiting,
-- admitted or used). A device names the place it joined for: while that
-- place is live, a join from the device with another e-mail is answered
-- with it (whose pass is its own e-mail's); once it left or lapsed, the
-- device is free for the new e-mail's place. A place that left or lapsed
-- joins again with its own id; no place ever changes e-mail.
local function live(s)
  return s and s ~= 'l' and s ~= 'x'
end
local r = room_read(k)
local free = room_free(k.soldkey, spec)
local waited = r.wn -- places in the line before the batch
local short = free <= 0 and r.resv <= 0
local found, made = {}, {} -- by join: the identity's place; a new place's rank
local again = false
-- reads first: the identities of every join, before the batch writes
for j = 0, (#ARGV - 5) / 5 - 1 do
  local a = 6 + 5 * j
  local id, dev = ARGV[a], ARGV[a + 2]
  local st = room_place(redis.call('HGET', k.places, id))
  local other = nil
  if not live(st) and dev ~= '' then
    other = redis.call('HGET', k.who, 'd:' .. dev)
    if other == id or (other and not live(room_place(redis.call('HGET', k.places, other)))) then
      other = nil
    end
  end
  if live(st) or other then
    found[j] = other or id
    again = true
  elseif not short then
    -- a place that left or lapsed joins at the back; a new one of a fair
    -- room before T0 by its rank in the shuffle
    local rank = 'seq'
    if ARGV[a + 4] ~= '' and now < t0 and not st then
      rank = ARGV[a + 4]
    end
    made[j] = rank
  end
end

-- A step may admit: it type-checks every key first (lib/room
-- room_check). Otherwise the line is the one key written unread, and its
-- ZADD the first write, so a key of another type fails the call before
-- anything is written (the others were read).
local admitting = again or (now >= t0 and waited == 0 and next(made) ~= nil)
if admitting then
  room_check(k)
  k.checked = true
end
local n = 0
local placed, devices = {}, {} -- the batch's new places: by id; by device
local behind = {} -- by join: the places before a new place put at the back of the line
for j = 0, (#ARGV - 5) / 5 - 1 do
  local a = 6 + 5 * j
  local id, bk, dev, qty = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  -- a second join of an identity the batch placed already is answered
  -- with that place: its e-mail's first (over a device's live place
  -- found before the batch, as a join after the batch would be)
  if placed[id] then
    found[j], made[j] = id, nil
  elseif made[j] and dev ~= '' and devices[dev] then
    found[j], made[j] = devices[dev], nil
  end
  if made[j] then
    r.seq = r.seq + 1
    if made[j] == 'seq' then
      made[j] = string.format('%d', 1 + r.seq) -- a string: the reply keeps a shuffle rank's fraction
      behind[j] = r.wn -- a seq rank is past every shuffle rank and earlier seq: the back
    end
    redis.call('ZADD', k.line, made[j], id)
    if dev ~= '' then
      redis.call('HSET', k.who, 'd:' .. dev, id)
      devices[dev] = id
    end
    room_put(k.places, id, 'w', qty, 0, bk)
    placed[id] = true
    r.wn = r.wn + 1
    r.wq = r.wq + qty
    n = n + 1
  end
end
if n > 0 then
  redis.call('HSET', k.room, room_f(k, 'seq'), r.seq, room_f(k, 'wn'), r.wn, room_f(k, 'wq'), r.wq)
end
local left = free - r.resv
local changed = false
if admitting then
  left, changed = room_admit(k, now, ttl, t0, limit, spec, r)
end

-- the room's figures once, the same for every join of the batch
local out = room_figures(now, left, r)
table.insert(out, 1, R.OK)
for j = 0, (#ARGV - 5) / 5 - 1 do
  local a = 6 + 5 * j
  local id = found[j] or ARGV[a]
  if found[j] or made[j] then
    local st, qty, exp, bk, rank, ahead = 'w', tonumber(ARGV[a + 3]), 0, ARGV[a + 1], made[j], behind[j]
    if found[j] or changed then
      st, qty, exp, bk = room_place(redis.call('HGET', k.places, id))
      rank, ahead = nil, nil
    end
    local code = R.OK
    if found[j] then
      code = R.EXISTS
    end
    out[#out + 1] = room_answer(code, {id}, room_place_reading(k, id, st, qty, exp, bk, rank, ahead))
  else
    out[#out + 1] = {R.SHORT}
  end
end
return out
