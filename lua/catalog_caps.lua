-- catalog_caps: replace an event's capacities atomically, refusing any cap
-- below what is already sold. Sold counts and booked seats are never touched,
-- so re-applying a catalog never resets a sale.
--
-- A field of the old capacities that the new event neither caps nor lists as
-- uncapped belongs to a removed object (ticket type, extra, showing, GA area,
-- table): it is frozen at its sold count, so pending orders of that object
-- fail at confirm and nothing more of it is sold. A missing field means
-- "uncapped" to reserve and confirm, so simply dropping it would oversell.
--
-- KEYS[1] -> capacities hash {pN}:ev:<id>:cap
-- KEYS[2] -> sold hash       {pN}:ev:<id>:sold
-- KEYS[3] -> partition marker {pN}:live (Redis lost its state or is being
--            rebuilt while it is missing: capacities wait for the rebuild)
--
-- ARGV[1] -> number of capped fields N
-- ARGV[2 .. 1+2N] -> field, capacity, ...
-- ARGV[2+2N] -> number of uncapped fields U: objects still in the event
--               without a capacity ("ev", "sh:<id>", "x:<id>")
-- next U  -> uncapped fields (removed from the hash: uncapped)
--
-- Output: {R.OK, {frozen fields}} replaced; {R.BELOW_SOLD, field, sold} a
-- capacity is below its sold count (nothing written); {R.STOPPED} the
-- partition's marker is missing (nothing written)
--@include reply
--@allow-oom
if redis.call('EXISTS', KEYS[3]) == 0 then
  return {R.STOPPED}
end
local n = tonumber(ARGV[1])
local capped = {}
for i = 0, n - 1 do
  local f, cap = ARGV[2 + 2 * i], tonumber(ARGV[3 + 2 * i])
  local sold = tonumber(redis.call('HGET', KEYS[2], f)) or 0
  if sold > cap then
    return {R.BELOW_SOLD, f, sold}
  end
  capped[f] = true
end
local live = {}
local u = tonumber(ARGV[2 + 2 * n])
for i = 1, u do
  live[ARGV[2 + 2 * n + i]] = true
end
local frozen, at = {}, {}
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if not capped[f] and not live[f] then
    frozen[#frozen + 1] = f
    at[#at + 1] = tonumber(redis.call('HGET', KEYS[2], f)) or 0
  end
end

-- writes
redis.call('DEL', KEYS[1])
if n > 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 2, 1 + 2 * n))
end
for i = 1, #frozen do
  redis.call('HSET', KEYS[1], frozen[i], at[i])
end
return {R.OK, frozen}
