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
-- KEYS[6]  -> discount holds zset   {pN}:ev:<id>:dcholds ("<code>\n<orderId>" -> expiry ms, lib/cart)
-- KEYS[7]  -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[8]  -> partition marker      {pN}:live (sales stop while it is missing)
-- KEYS[9]  -> buyers hash           {pN}:ev:<id>:buyers (buyer key -> admissions)
-- KEYS[10] -> seat holds hash       {pN}:ev:<id>:seats (label -> h:<token> and expiry, lib/seatholds)
-- KEYS[11] -> order seats hash      {pN}:ev:<id>:ordseats (label -> o:<orderId> and expiry)
-- KEYS[12] -> registration seats hash {pN}:ev:<id>:regseats (label -> o:<regId>)
-- KEYS[13] -> discount held hash    {pN}:ev:<id>:dcheld (code -> its members in KEYS[6])
--
-- The keys from the ninth on are left out for a cart without seats,
-- discount code or buyer limit (the flash sale's): nothing reads them
-- then, and every KEYS and ARGV element costs Redis a string and a table
-- slot on each call.
--
-- ARGV[1] -> order id
-- ARGV[2] -> order TTL ms (pending expiry)
-- ARGV[3] -> retention ms (how long the order hash outlives its expiry)
-- ARGV[4] -> hold token ("" when no seats)
-- ARGV[5] -> discount code ("" when none)
-- ARGV[6] -> discount max uses (0 = unlimited)
-- ARGV[7] -> max admissions per buyer (0 = no limit)
-- ARGV[8] -> buyer key (orders.BuyerKey)
-- ARGV[9] -> admissions of the order
-- ARGV[10] -> number of claims C
-- ARGV[11 .. 10+2C] -> claim field, quantity, ...
-- ARGV[11+2C] -> number of seats S
-- next S  -> seat labels
-- next 6  -> the order hash's total, ch, by, claims, tix and rec (lib/cart
--            cart_sale_fields names them, and adds seats and dc when not
--            empty; st and exp are added here, and bk, adm, lim when
--            ARGV[7] > 0: the buyer key, the order's admissions and the
--            limit, for confirm's check)
--
-- Output:
--   {R.OK, expiresAtMs}                created
--   {R.EXISTS, total cents}            the order already exists (a replay)
--   {R.SHORT, field, remaining}        a capacity field has fewer than requested left
--   {R.HOLD_GONE}                      the hold token is gone (hold_expired)
--   {R.SEAT_TAKEN, {labels}}           seats booked or held by someone else
--   {R.SEAT_NOT_HELD, {labels}}        seats not held by this token
--   {R.DISCOUNT_USED_UP}               the discount code has no uses left
--   {R.STOPPED}                        the partition's marker is missing: Redis
--                                      lost its state or is being rebuilt
--   {R.BUYER_LIMIT, limit, remaining}  the buyer would pass the event's
--                                      maxTicketsPerBuyer (checked here, counted
--                                      at confirm; the order keeps bk, adm, lim)
--@include capacity
--@include cart
--@include reply
if redis.call('EXISTS', KEYS[8]) == 0 then
  return {R.STOPPED}
end
local order = KEYS[1]
if redis.call('EXISTS', order) == 1 then
  return {R.EXISTS, tonumber(redis.call('HGET', order, 'total')) or 0}
end

local fields, qtys, labels, rest = cart_args(10)
local nseats = #labels

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local exp = now + ttl

-- checks: capacity, seats held by this token, discount uses and the
-- buyer's admissions (paid partner orders and storefront registrations; a
-- pending order counts nothing until it is confirmed)
local code, maxuses = ARGV[5], tonumber(ARGV[6])
local limit, adm = tonumber(ARGV[7]), tonumber(ARGV[9])
local refusal, dstale, dk = cart_sale_refusal(fields, qtys, labels, now)
if refusal then
  return refusal
end

-- writes
local oid = ARGV[1]
seatholds_drop(KEYS[10], labels)
local exps = string.format('%d', exp)
seatholds_put(KEYS[11], labels, 'o:' .. oid, exps)
for s = 1, nseats do
  redis.call('HDEL', KEYS[5], 's:' .. labels[s])
end
if code ~= '' and maxuses > 0 then
  cart_hold_discount(dk, code, oid, exp, now, dstale)
end
local kv = cart_sale_fields(rest, labels, code, 'st', 'pending', 'exp', exps)
cart_buyer_fields(kv, limit, ARGV[8], adm)
redis.call('HSET', order, unpack(kv))
redis.call('PEXPIREAT', order, string.format('%d', exp + tonumber(ARGV[3])))
return {R.OK, exp}
