-- ratelimit: take up to n requests from a GCRA bucket (generic cell rate
-- algorithm). The bucket is a single number, the theoretical arrival time
-- (TAT): the moment the bucket is full again if no more requests come.
-- k requests pass when TAT + k*interval lies no further than burst intervals
-- ahead of now. The clock is Redis TIME, so every API node agrees.
-- Taking n > 1 at once is how a node leases a slice of a large limit and
-- serves it locally (handlers/ratelimit); a plain request takes n = 1.
--
-- KEYS[1] -> bucket rl:{<bucket>}: TAT in microseconds of Redis time
--
-- ARGV[1] -> emission interval in microseconds (one request's share of the period)
-- ARGV[2] -> burst: requests a full bucket allows at once
-- ARGV[3] -> n: how many requests to take at most
--
-- Output:
--   {R.OK, remaining, granted}   1 <= granted <= n taken; remaining requests
--                                allowed right now after them
--   {R.LIMITED, retry after us}  refused; the wait until one request is allowed
--@include reply
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then
  tat = now
end
-- How many fit now: the largest k with tat + k*interval - burst*interval <= now.
local fit = math.floor((now - tat) / interval) + burst
if fit < 1 then
  return {R.LIMITED, tat + interval - interval * burst - now}
end
local granted = math.min(n, fit)
local newTat = tat + granted * interval

-- The key lives exactly as long as the bucket is not full again.
redis.call('SET', KEYS[1], string.format('%d', newTat), 'PX', string.format('%d', math.ceil((newTat - now) / 1000)))
return {R.OK, fit - granted, granted}
