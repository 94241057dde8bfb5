-- seat_hold: add seats to a hold token, all or nothing. A seat is free when
-- it has no seat key and is not booked; seats the token already holds are
-- kept. New seat keys expire with the token (PXAT = the hash's exp), so a
-- timed-out hold leaves no key behind. The token's expiry is not changed.
--
-- KEYS[1]  -> hold token hash   {pN}:ev:<id>:hold:<token>
-- KEYS[2]  -> booked seats hash {pN}:ev:<id>:booked (label -> order id)
-- KEYS[3]  -> partition marker  {pN}:live (sales stop while it is missing)
-- KEYS[4..] -> one seat key per label, in the order of the labels in ARGV
--
-- ARGV[1] -> hold token
-- ARGV[2] -> most seats one token may hold
-- ARGV[3..] -> seat labels (distinct)
--
-- Output:
--   {0, expiresAtMs, {labels}}  held; labels = every seat the token now holds
--   {1}                         the token is gone (expired or never created)
--   {2, {labels}}               seats booked or held by another token or order
--   {3, max}                    the token would hold more than max seats
--   {4}                         the partition's marker is missing: Redis lost
--                               its state or is being rebuilt
if redis.call('EXISTS', KEYS[3]) == 0 then
  return {4}
end
local hold = KEYS[1]
local exp = redis.call('HGET', hold, 'exp')
if not exp then
  return {1}
end

local n = #KEYS - 3
local labels = {}
for i = 1, n do
  labels[i] = ARGV[2 + i]
end
local holder = 'h:' .. ARGV[1]
local booked = redis.call('HMGET', KEYS[2], unpack(labels))
local cur = redis.call('MGET', unpack(KEYS, 4, 3 + n))
local conflicts = {}
for i = 1, n do
  if booked[i] or (cur[i] and cur[i] ~= holder) then
    conflicts[#conflicts + 1] = labels[i]
  end
end
if #conflicts > 0 then
  return {2, conflicts}
end

local all, mine = {}, {}
for _, f in ipairs(redis.call('HKEYS', hold)) do
  if string.sub(f, 1, 2) == 's:' then
    local l = string.sub(f, 3)
    all[#all + 1] = l
    mine[l] = true
  end
end
for i = 1, n do
  if not mine[labels[i]] then
    all[#all + 1] = labels[i]
  end
end
if #all > tonumber(ARGV[2]) then
  return {3, tonumber(ARGV[2])}
end

-- writes
for i = 1, n do
  if not cur[i] then
    redis.call('SET', KEYS[3 + i], holder, 'PXAT', exp)
  end
  redis.call('HSET', hold, 's:' .. labels[i], '1')
end
return {0, tonumber(exp), all}
