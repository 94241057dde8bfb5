-- paydue_claim: take the webhook deliveries of one partition that are due,
-- and push each one's next attempt a lease ahead, so that another node's
-- loop does not deliver it at the same time (a delivery that dies with its
-- node is tried again when the lease ends).
--
-- KEYS[1] -> due set {pN}:paydue:<processor>
--
-- ARGV[1] -> at most this many
-- ARGV[2] -> lease, ms
--
-- Output:
--   {R.OK, {sessionId...}, deadline}  deadline: the lease's end, ms (the token
--                                     paydue_extend checks)
--@include reply
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), id)
end
return {R.OK, due, now + tonumber(ARGV[2])}
