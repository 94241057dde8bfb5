-- catalog_caps: replace an event's capacities atomically, refusing any cap
-- below what is already sold. Sold counts and booked seats are never touched,
-- so re-applying a catalog never resets a sale.
--
-- KEYS[1] -> capacities hash {pN}:ev:<id>:cap
-- KEYS[2] -> sold hash       {pN}:ev:<id>:sold
--
-- ARGV[1] -> number of fields N
-- ARGV[2 .. 1+2N] -> field, capacity, ...
--
-- Output: {0} replaced; {1, field, sold} a capacity is below its sold count
local n = tonumber(ARGV[1])
for i = 0, n - 1 do
  local f, cap = ARGV[2 + 2 * i], tonumber(ARGV[3 + 2 * i])
  local sold = tonumber(redis.call('HGET', KEYS[2], f)) or 0
  if sold > cap then
    return {1, f, sold}
  end
end
redis.call('DEL', KEYS[1])
if n > 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 2, 1 + 2 * n))
end
return {0}
