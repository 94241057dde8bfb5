-- discount_left: how many uses of a limited discount code are left: its
-- maximum minus the uses consumed by paid orders and those held by pending
-- orders that have not expired. Read-only (the expired holds it meets stay
-- for the next script that holds a use, lib/cart); quote uses it so that a
-- quote of a used-up code fails as the reserve of the same cart would.
--
-- KEYS[1] -> discount holds zset   {pN}:ev:<id>:dcholds ("<code>\n<orderId>" -> expiry ms, lib/cart)
-- KEYS[2] -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[3] -> discount held hash    {pN}:ev:<id>:dcheld (code -> its members in KEYS[1])
--
-- ARGV[1] -> code
-- ARGV[2] -> max uses
--
-- Output: {left} (0 or less: used up)
--@no-writes
--@include cart
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local used = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0
local dk = {dcholds = KEYS[1], dcheld = KEYS[3]}
local held = cart_discount_live(dk, ARGV[1], now)
return {tonumber(ARGV[2]) - used - held}
