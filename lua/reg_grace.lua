-- reg_grace: keep the hold of a registration whose checkout session the
-- processor reports paid when the sweeper came to expire it: the webhook is
-- on its way. Its window is pushed out once, by the grace period, with its
-- seats and discount hold; a second time it is expired as usual (a payment
-- that comes later still claims anew or is refunded).
--
-- KEYS[1]  -> registration hash     {pN}:ord:<id>
-- KEYS[2]  -> expiry zset           {pN}:regexp
-- KEYS[3]  -> discount holds zset   {pN}:ev:<id>:dchold:<code> (any name when none)
-- KEYS[4]  -> booked seats hash     {pN}:ev:<id>:booked
-- KEYS[5..] -> seat keys of the registration's seats, in the order of its 'seats'
--
-- ARGV[1] -> registration id
-- ARGV[2] -> grace ms
-- ARGV[3] -> declared seats
-- ARGV[4] -> declared discount code
--
-- Output:
--   {0, expiresAtMs}           the window now ends then
--   {1}                        not held, or its grace was used already
--   {3, seats, discount code}  declared keys are not the registration's
local reg = KEYS[1]
local o = redis.call('HMGET', reg, 'st', 'grace', 'seats', 'dc')
if o[1] ~= 'held' or o[2] then
  return {1}
end
if (o[3] or '') ~= ARGV[3] or (o[4] or '') ~= ARGV[4] then
  return {3, o[3] or '', o[4] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local grace = tonumber(ARGV[2])
local exp = now + grace

-- writes
local id = ARGV[1]
local holder = 'o:' .. id
local s = 0
for label in string.gmatch(o[3] or '', '%S+') do
  s = s + 1
  local v = redis.call('GET', KEYS[4 + s])
  if v == holder then
    redis.call('PEXPIRE', KEYS[4 + s], grace)
  elseif not v and redis.call('HEXISTS', KEYS[4], label) == 0 then
    redis.call('SET', KEYS[4 + s], holder, 'PX', grace)
  end
end
if (o[4] or '') ~= '' then
  redis.call('ZADD', KEYS[3], exp, id)
  if redis.call('PTTL', KEYS[3]) < grace then
    redis.call('PEXPIRE', KEYS[3], grace)
  end
end
redis.call('HSET', reg, 'exp', exp, 'grace', '1')
redis.call('ZADD', KEYS[2], exp, id)
return {0, exp}
