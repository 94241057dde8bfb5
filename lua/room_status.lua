-- room_status: a place of an event's waiting room, after the admission
-- step (lib/room room_admit): whoever polls moves the line, so passes are
-- given and lapsed ones return as long as anyone waits. A step with
-- nothing to do writes nothing and type-checks nothing (lib/room
-- room_writing).
--
-- KEYS[1] -> room hash          {pN}:ev:<id>:room
-- KEYS[2] -> line zset          {pN}:ev:<id>:room:line
-- KEYS[3] -> places hash        {pN}:ev:<id>:room:places
-- KEYS[4] -> passes zset        {pN}:ev:<id>:room:passes
-- KEYS[5] -> sold hash          {pN}:ev:<id>:sold
-- KEYS[6] -> partition marker   {pN}:live (the room stops while it is missing)
-- KEYS[7] -> audit stream       {pN}:ev:<id>:room:audit
--
-- ARGV[1] -> queue id ("": the admission step alone, for the nodes' tick)
-- ARGV[2] -> pass TTL ms
-- ARGV[3] -> T0, Redis ms (nobody is admitted before)
-- ARGV[4] -> the most places one call admits
-- ARGV[5] -> the room's stock (catalog Room.Spec, lib/room room_free)
-- ARGV[6] -> the shuffle key, hex, once T0 passed ("" otherwise): written
--            to the audit once (the room hash's 'shown' marks it done)
-- ARGV[7] -> without a queue id: the most line scores the answer samples
--            (lib/room room_frontier)
-- ARGV[8] -> without a queue id: the places at the head of the line whose
--            ids the answer lists in order (lib/room room_frontier)
-- ARGV[9] -> without a queue id: the head the node read last, "<n> <first
--            id> <last id> <lv>" ("": none); when it is unchanged, the
--            answer lists no id (lib/room room_frontier)
-- ARGV[10] -> the suffix of the room's fields in the room hash
--            (keys.RoomFields: '' or ':<showing>', lib/room room_f)
--
-- Output:
--   {R.OK, place..., figures...}  the place after the step, then the room
--                        (lib/room room_place_reading, room_figures)
--   {R.OK, frontier...}  the step alone (no queue id), and the room's
--                        frontier (lib/room room_frontier)
--   {R.NOT_FOUND}   no such place
--   {R.STOPPED}     the partition's marker is missing
--@include reply
--@include room
if redis.call('EXISTS', KEYS[6]) == 0 then
  return {R.STOPPED}
end
local k = {room = KEYS[1], line = KEYS[2], places = KEYS[3], passes = KEYS[4], soldkey = KEYS[5], audit = KEYS[7],
  sfx = ARGV[10]}
local id = ARGV[1]
local st, qty, exp, bk
if id ~= '' then
  st, qty, exp, bk = room_place(redis.call('HGET', k.places, id))
  if not st then
    return {R.NOT_FOUND}
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = room_read(k)
local left, changed = room_admit(k, now, tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], r)
if ARGV[6] ~= '' and not r.shown then
  room_writing(k)
  redis.call('HSET', k.room, room_f(k, 'shown'), now)
  room_audit(k, 'key', '', 'key', ARGV[6])
end
if id == '' then
  return room_answer(R.OK, {}, room_frontier(k, now, left, r, tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9] or ''))
end
if changed then -- the step may have admitted it, or lapsed its pass
  st, qty, exp, bk = room_place(redis.call('HGET', k.places, id))
end
return room_answer(R.OK, room_place_reading(k, id, st, qty, exp, bk), room_figures(now, left, r))
