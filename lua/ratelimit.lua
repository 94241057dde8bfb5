-- ratelimit: take one request from a GCRA bucket (generic cell rate
-- algorithm). The bucket is a single number, the theoretical arrival time
-- (TAT): the moment the bucket is full again if no more requests come.
-- A request is allowed when TAT + interval lies no further than burst
-- intervals ahead of now. The clock is Redis TIME, so every API node agrees.
--
-- KEYS[1] -> bucket rl:{<bucket>}: TAT in microseconds of Redis time
--
-- ARGV[1] -> emission interval in microseconds (one request's share of the period)
-- ARGV[2] -> burst: requests a full bucket allows at once
--
-- Output:
--   {0, remaining}             allowed; remaining requests allowed right now
--   {1, retry after us}        refused; the wait until one request is allowed
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then
  tat = now
end
local newTat = tat + interval
-- The earliest moment this request may pass: burst intervals before newTat.
local allowAt = newTat - interval * burst
if now < allowAt then
  return {1, allowAt - now}
end

-- The key lives exactly as long as the bucket is not full again.
redis.call('SET', KEYS[1], string.format('%d', newTat), 'PX', math.ceil((newTat - now) / 1000))
return {0, math.floor((now - allowAt) / interval)}
