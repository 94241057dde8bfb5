-- paydue_extend: take a claimed webhook delivery's lease again right before
-- it is sent, so that a long batch does not outlive it: the next attempt
-- moves a lease ahead of now, only while the caller still holds the
-- delivery (its score is still the deadline the caller's claim set: not
-- delivered, rescheduled or claimed by another node meanwhile).
--
-- KEYS[1] -> due set {pN}:paydue:<processor>
--
-- ARGV[1] -> session id
-- ARGV[2] -> the deadline the caller's claim set, ms (paydue_claim's reply)
-- ARGV[3] -> lease, ms
--
-- Output:
--   {R.OK, deadline}  held: its lease now ends at deadline
--   {R.NOT_OWNER}     not the caller's any more: nothing written
--@include reply
local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not sc or tonumber(sc) ~= tonumber(ARGV[2]) then
  return {R.NOT_OWNER}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return {R.OK, now + tonumber(ARGV[3])}
