-- discount_left: how many uses of a limited discount code are left: its
-- maximum minus the uses consumed by paid orders and those held by pending
-- orders that have not expired. Read-only; quote uses it so that a quote of
-- a used-up code fails as the reserve of the same cart would.
--
-- KEYS[1] -> discount holds zset   {pN}:ev:<id>:dchold:<code> (order id scored by expiry ms)
-- KEYS[2] -> discount used hash    {pN}:ev:<id>:dcused
--
-- ARGV[1] -> code
-- ARGV[2] -> max uses
--
-- Output: {left} (0 or less: used up)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local used = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0
local held = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
return {tonumber(ARGV[2]) - used - held}
