-- reg_grace: keep the hold of a registration whose checkout session the
-- processor reports paid when the sweeper came to expire it: the webhook is
-- on its way. Its window is pushed out once, by the grace period; a second
-- time it is expired as usual (a payment that comes later still claims anew
-- or is refunded). Its seats and discount use need nothing: they are held
-- without expiry until reg_expire or reg_pay gives them back.
--
-- KEYS[1] -> registration hash     {pN}:ord:<id>
-- KEYS[2] -> expiry zset           {pN}:regexp
--
-- ARGV[1] -> registration id
-- ARGV[2] -> grace ms
--
-- Output:
--   {R.OK, expiresAtMs}  the window now ends then
--   {R.NOT_PENDING}      not held, or its grace was used already
--@include reply
local reg = KEYS[1]
local o = redis.call('HMGET', reg, 'st', 'grace')
if o[1] ~= 'held' or o[2] then
  return {R.NOT_PENDING}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = now + tonumber(ARGV[2])

-- writes: the expiry zset first, as no check reads it (when it is not a
-- zset this first write fails and nothing is written)
redis.call('ZADD', KEYS[2], exp, ARGV[1])
redis.call('HSET', reg, 'exp', exp, 'grace', '1')
return {R.OK, exp}
