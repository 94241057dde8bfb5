-- event_restore: replace an event's capacity, sold, booked-seat and
-- discount-use hashes with what a rebuild counted from Postgres (and the
-- paid orders still on the streams). It runs only while sales are stopped
-- (the partition's marker is gone), so nothing races it: a rebuild that
-- lost its lock to another that has published since must not put older
-- counts under sales that run again. It is one script so an event is
-- never seen half restored.
--
-- KEYS[1] -> capacities hash     {pN}:ev:<id>:cap    (field -> capacity)
-- KEYS[2] -> sold hash           {pN}:ev:<id>:sold   (field -> count)
-- KEYS[3] -> booked seats hash   {pN}:ev:<id>:booked (label -> order id)
-- KEYS[4] -> discount used hash  {pN}:ev:<id>:dcused (code -> uses)
-- KEYS[5] -> partition marker    {pN}:live
-- KEYS[6] -> buyers hash         {pN}:ev:<id>:buyers (buyer key -> admissions)
--
-- ARGV: five lists, one per hash (KEYS 1-4, then 6) in that order, each a
-- count N followed by N field, value pairs.
--
-- Output: {R.OK, caps, sold, booked, discount, buyers} the number of fields
-- written to each hash; {R.LIVE} the partition's marker is there: sales run
-- (nothing written)
--@include reply
--@allow-oom
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {R.LIVE}
end
local lists = {}
local i = 1
for k = 1, 5 do
  local n = tonumber(ARGV[i])
  lists[k] = {from = i + 1, to = i + 2 * n}
  i = i + 1 + 2 * n
end
if i - 1 ~= #ARGV then
  return redis.error_reply('event_restore: argument count does not match the lists')
end

-- writes: HSET in chunks, as unpack has a stack limit
local written = {}
local hashes = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]}
for k = 1, 5 do
  redis.call('DEL', hashes[k])
  local from, to = lists[k].from, lists[k].to
  local s = from
  while s <= to do
    local e = math.min(s + 999, to)
    redis.call('HSET', hashes[k], unpack(ARGV, s, e))
    s = e + 1
  end
  written[k] = (to - from + 1) / 2
end
return {R.OK, written[1], written[2], written[3], written[4], written[5]}
