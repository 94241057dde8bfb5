-- order_reserve: create a pending order (partner reserve). Capacity is
-- checked but not claimed; held seats are handed from the buyer's hold token
-- to the order; one use of a limited discount code is held until the order is
-- paid or expires.
--
-- KEYS[1]  -> order hash            {pN}:ord:<orderId>
-- KEYS[2]  -> capacities hash       {pN}:ev:<id>:cap     (field -> cap)
-- KEYS[3]  -> sold hash             {pN}:ev:<id>:sold    (field -> count)
-- KEYS[4]  -> booked seats hash     {pN}:ev:<id>:booked  (label -> order id)
-- KEYS[5]  -> hold token hash       {pN}:ev:<id>:hold:<token> (any name when no seats)
-- KEYS[6]  -> discount holds zset   {pN}:ev:<id>:dchold:<code> (any name when no limited code)
-- KEYS[7]  -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[8]  -> partition marker      {pN}:live (sales stop while it is missing)
-- KEYS[9..] -> one seat key per seat label, in the order of the labels in ARGV
--
-- ARGV[1] -> order id
-- ARGV[2] -> order TTL ms (pending expiry)
-- ARGV[3] -> retention ms (how long the order hash outlives its expiry)
-- ARGV[4] -> hold token ("" when no seats)
-- ARGV[5] -> discount code ("" when none)
-- ARGV[6] -> discount max uses (0 = unlimited)
-- ARGV[7] -> number of claims C
-- ARGV[8 .. 7+2C] -> claim field, quantity, ...
-- ARGV[8+2C] -> number of seats S
-- next S  -> seat labels
-- rest    -> order hash field, value, ... (st and exp are added here)
--
-- Output:
--   {0, expiresAtMs}                 created
--   {1, total cents}                 the order already exists (a replay)
--   {2, field, remaining}            a capacity field has fewer than requested left
--   {3}                              the hold token is gone (hold_expired)
--   {4, {labels}}                    seats booked or held by someone else
--   {5, {labels}}                    seats not held by this token
--   {6}                              the discount code has no uses left
--   {7}                              the partition's marker is missing: Redis
--                                    lost its state or is being rebuilt
--@include capacity
if redis.call('EXISTS', KEYS[8]) == 0 then
  return {7}
end
local order = KEYS[1]
if redis.call('EXISTS', order) == 1 then
  return {1, tonumber(redis.call('HGET', order, 'total')) or 0}
end

local nclaims = tonumber(ARGV[7])
local i = 8
local fields, qtys = {}, {}
for c = 1, nclaims do
  fields[c] = ARGV[i]
  qtys[c] = tonumber(ARGV[i + 1])
  i = i + 2
end
local nseats = tonumber(ARGV[i])
i = i + 1
local labels = {}
for s = 1, nseats do
  labels[s] = ARGV[i]
  i = i + 1
end
local rest = i

-- checks: capacity
do
  local c, left = capacity_short(KEYS[2], KEYS[3], fields, qtys)
  if c then
    return {2, fields[c], left}
  end
end

-- checks: seats held by this token
local token = ARGV[4]
local holder = 'h:' .. token
if nseats > 0 then
  if redis.call('EXISTS', KEYS[5]) == 0 then
    return {3}
  end
  local conflicts, notheld = {}, {}
  for s = 1, nseats do
    local v = redis.call('GET', KEYS[8 + s])
    if redis.call('HEXISTS', KEYS[4], labels[s]) == 1 or (v and v ~= holder) then
      conflicts[#conflicts + 1] = labels[s]
    elseif not v then
      notheld[#notheld + 1] = labels[s]
    end
  end
  if #conflicts > 0 then
    return {4, conflicts}
  end
  if #notheld > 0 then
    return {5, notheld}
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local exp = now + ttl

-- checks: discount uses (paid uses + uses held by live pending orders)
local code, maxuses = ARGV[5], tonumber(ARGV[6])
if code ~= '' and maxuses > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  local used = tonumber(redis.call('HGET', KEYS[7], code)) or 0
  if used + redis.call('ZCARD', KEYS[6]) >= maxuses then
    return {6}
  end
end

-- writes
local oid = ARGV[1]
for s = 1, nseats do
  redis.call('SET', KEYS[8 + s], 'o:' .. oid, 'PX', ttl)
  redis.call('HDEL', KEYS[5], 's:' .. labels[s])
end
if code ~= '' and maxuses > 0 then
  redis.call('ZADD', KEYS[6], exp, oid)
  -- The holds expire with the last of their orders, so a code nobody
  -- reserves again leaves nothing behind.
  if redis.call('PTTL', KEYS[6]) < ttl then
    redis.call('PEXPIRE', KEYS[6], ttl)
  end
end
local kv = {'st', 'pending', 'exp', exp}
for j = rest, #ARGV do
  kv[#kv + 1] = ARGV[j]
end
redis.call('HSET', order, unpack(kv))
redis.call('PEXPIREAT', order, exp + tonumber(ARGV[3]))
return {0, exp}
