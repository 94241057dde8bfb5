-- reg_register: create a storefront registration (register-guest). Unlike
-- a partner reserve it claims at once: the sold counters of its claims, the
-- seats its hold token holds (handed to the registration), one use of a
-- limited discount code and the buyer's admissions, so a payment never
-- finds its inventory gone and a partner confirm can never oversell against
-- it. A paid registration (total > 0) is held for the checkout window and
-- put in its partition's expiry zset; a free one is paid at once and queued
-- on the paid stream exactly as order_confirm.lua queues an order.
--
-- KEYS[1]  -> registration hash     {pN}:ord:<id>
-- KEYS[2]  -> capacities hash       {pN}:ev:<id>:cap
-- KEYS[3]  -> sold hash             {pN}:ev:<id>:sold
-- KEYS[4]  -> booked seats hash     {pN}:ev:<id>:booked
-- KEYS[5]  -> hold token hash       {pN}:ev:<id>:hold:<token> (any name when no seats)
-- KEYS[6]  -> discount holds zset   {pN}:ev:<id>:dchold:<code> (any name when no limited code)
-- KEYS[7]  -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[8]  -> partition marker      {pN}:live (sales stop while it is missing)
-- KEYS[9]  -> buyers hash           {pN}:ev:<id>:buyers
-- KEYS[10] -> expiry zset           {pN}:regexp
-- KEYS[11] -> paid stream           {pN}:paid
-- KEYS[12..] -> one seat key per seat label, in the order of the labels in ARGV
--
-- ARGV[1]  -> registration id
-- ARGV[2]  -> checkout TTL ms
-- ARGV[3]  -> retention ms (how long a paid hash stays without a worker)
-- ARGV[4]  -> hold token ("" when no seats)
-- ARGV[5]  -> discount code ("" when none)
-- ARGV[6]  -> discount max uses (0 = unlimited)
-- ARGV[7]  -> max admissions per buyer (0 = no limit)
-- ARGV[8]  -> buyer key (orders.BuyerKey)
-- ARGV[9]  -> admissions
-- ARGV[10] -> "1" when free (paid at once), else "0"
-- ARGV[11] -> paid stream cap: 0 (a sync worker drains it) or MAXLEN ~ this
-- ARGV[12] -> number of claims C
-- next 2C  -> claim field, quantity, ...
-- next     -> number of seats S, then S seat labels
-- rest     -> hash field, value, ... (st, exp, gen, bk, adm are added here)
--
-- Output:
--   {0, expiresAtMs}         held, awaiting payment
--   {1, st}                  the registration exists already (nothing done)
--   {2, field, remaining}    a capacity field has fewer than requested left
--   {3}                      the hold token is gone (hold_expired)
--   {4, {labels}}            seats booked or held by someone else
--   {5, {labels}}            seats not held by this token
--   {6}                      the discount code has no uses left
--   {7}                      the partition's marker is missing
--   {8, limit, remaining}    the buyer would pass maxTicketsPerBuyer
--   {9, paidAtMs}            free: paid at once
--@include capacity
local gen = redis.call('GET', KEYS[8])
if not gen then
  return {7}
end
local reg = KEYS[1]
local st = redis.call('HGET', reg, 'st')
if st then
  return {1, st}
end

local nclaims = tonumber(ARGV[12])
local i = 13
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

-- checks: capacity, the seats of the token and the discount uses are
-- order_reserve.lua's checks, with its reply codes (orders.RefusalError
-- maps both)
do
  local c, left = capacity_short(KEYS[2], KEYS[3], fields, qtys)
  if c then
    return {2, fields[c], left}
  end
end

-- checks: seats held by this token
local holder = 'h:' .. ARGV[4]
if nseats > 0 then
  if redis.call('EXISTS', KEYS[5]) == 0 then
    return {3}
  end
  local conflicts, notheld = {}, {}
  for s = 1, nseats do
    local v = redis.call('GET', KEYS[11 + s])
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
local free = ARGV[10] == '1'

-- checks: discount uses (paid uses + uses held by live holds)
local code, maxuses = ARGV[5], tonumber(ARGV[6])
local limited = code ~= '' and maxuses > 0
if limited then
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  local used = tonumber(redis.call('HGET', KEYS[7], code)) or 0
  if used + redis.call('ZCARD', KEYS[6]) >= maxuses then
    return {6}
  end
end

-- checks: the buyer's admissions
local limit, adm = tonumber(ARGV[7]), tonumber(ARGV[9])
if limit > 0 then
  local have = tonumber(redis.call('HGET', KEYS[9], ARGV[8])) or 0
  if have + adm > limit then
    return {8, limit, limit - have}
  end
end

-- writes: the claim
local id = ARGV[1]
for c = 1, nclaims do
  redis.call('HINCRBY', KEYS[3], fields[c], qtys[c])
end
for s = 1, nseats do
  redis.call('HDEL', KEYS[5], 's:' .. labels[s])
  if free then
    redis.call('HSET', KEYS[4], labels[s], id)
    redis.call('DEL', KEYS[11 + s])
  else
    redis.call('SET', KEYS[11 + s], 'o:' .. id, 'PX', ttl)
  end
end
if limit > 0 then
  redis.call('HINCRBY', KEYS[9], ARGV[8], adm)
end
local kv = {'exp', exp, 'gen', gen}
if limit > 0 then
  kv[#kv + 1] = 'bk'
  kv[#kv + 1] = ARGV[8]
  kv[#kv + 1] = 'adm'
  kv[#kv + 1] = adm
end
for j = rest, #ARGV do
  kv[#kv + 1] = ARGV[j]
end

if not free then
  if limited then
    redis.call('ZADD', KEYS[6], exp, id)
    if redis.call('PTTL', KEYS[6]) < ttl then
      redis.call('PEXPIRE', KEYS[6], ttl)
    end
  end
  kv[#kv + 1] = 'st'
  kv[#kv + 1] = 'held'
  redis.call('HSET', reg, unpack(kv))
  -- No expiry while held: the hash is what gives the claim back.
  redis.call('ZADD', KEYS[10], exp, id)
  return {0, exp}
end

-- free: paid at once, queued as order_confirm.lua queues a paid order
if code ~= '' then
  redis.call('HINCRBY', KEYS[7], code, 1)
end
kv[#kv + 1] = 'st'
kv[#kv + 1] = 'paid'
kv[#kv + 1] = 'ref'
kv[#kv + 1] = ''
kv[#kv + 1] = 'paid'
kv[#kv + 1] = now
redis.call('HSET', reg, unpack(kv))
if ARGV[11] == '0' then
  redis.call('PERSIST', reg)
  redis.call('XADD', KEYS[11], '*', 'order', id, 'ref', '', 'paidAt', now)
else
  redis.call('HDEL', reg, 'rec')
  redis.call('PEXPIRE', reg, tonumber(ARGV[3]))
  redis.call('XADD', KEYS[11], 'MAXLEN', '~', ARGV[11], '*', 'order', id, 'ref', '', 'paidAt', now)
end
return {9, now}
