-- room_leave: a buyer leaves an event's waiting room (lib/room): a
-- waiting place leaves the line, an admitted one gives its pass's units
-- back at once. The identities keep naming the place: a join by either
-- puts it at the back of the line again (room_join).
--
-- KEYS[1] -> room hash          {pN}:ev:<id>:room
-- KEYS[2] -> line zset          {pN}:ev:<id>:room:line
-- KEYS[3] -> places hash        {pN}:ev:<id>:room:places
-- KEYS[4] -> passes zset        {pN}:ev:<id>:room:passes
-- KEYS[5] -> audit stream       {pN}:ev:<id>:room:audit
--
-- ARGV[1] -> queue id
-- ARGV[2] -> the suffix of the room's fields in the room hash
--            (keys.RoomFields: '' or ':<showing>', lib/room room_f)
--
-- Output:
--   {R.OK, state}     it left; state: what it was (lib/room)
--   {R.NOT_PENDING, state}  it was neither waiting nor admitted: unchanged
--   {R.NOT_FOUND}     no such place
--@include reply
--@include room
local k = {room = KEYS[1], line = KEYS[2], places = KEYS[3], passes = KEYS[4], audit = KEYS[5], sfx = ARGV[2]}
room_check(k)
local id = ARGV[1]
local st, qty, exp, bk = room_place(redis.call('HGET', k.places, id))
if not st then
  return {R.NOT_FOUND}
end
if st ~= 'w' and st ~= 'a' then
  return {R.NOT_PENDING, st}
end
room_drop(k, id, st, qty, exp, bk, 'l')
return {R.OK, st}
