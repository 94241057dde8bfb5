-- paydue_retry: a webhook delivery failed; count the attempt and schedule
-- the next one with exponential backoff (base * 2^(attempts-1), capped).
--
-- KEYS[1] -> session hash {pN}:pay:<sessionId>
-- KEYS[2] -> due set {pN}:paydue:<processor>
--
-- ARGV[1] -> session id
-- ARGV[2] -> base delay, ms
-- ARGV[3] -> maximum delay, ms
--
-- Output:
--   {R.OK, attempts, nextAttemptMs}  scheduled
--   {R.NOT_FOUND}                    the session is gone: dropped from the set
--@include reply
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {R.NOT_FOUND}
end
-- The attempt is read, not yet counted: the due set is written first, as
-- no check reads it (when it is not a zset this first write fails and
-- nothing is written).
local att = (tonumber(redis.call('HGET', KEYS[1], 'att')) or 0) + 1
local delay = tonumber(ARGV[2]) * math.pow(2, math.min(att - 1, 30))
delay = math.min(delay, tonumber(ARGV[3]))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = now + delay
redis.call('ZADD', KEYS[2], 'XX', next, ARGV[1])
redis.call('HSET', KEYS[1], 'att', att)
return {R.OK, att, next}
