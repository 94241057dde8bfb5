-- paysession_pay: pay a test processor's checkout session, open -> paid, and
-- owe its webhook in the same step: the session joins its partition's due
-- set, which the delivery loop works through until ticketd answers 2xx.
--
-- KEYS[1] -> session hash {pN}:pay:<sessionId>
-- KEYS[2] -> due set {pN}:paydue:<processor> (member: session id, score: next attempt, ms)
--
-- ARGV[1] -> session id
-- ARGV[2] -> webhook event id, minted by the caller (kept if already paid)
-- ARGV[3] -> retention of a paid session, ms (the deliveries' lifetime)
-- ARGV[4] -> delay before the loop may try the first delivery, ms (the
--            caller delivers at once itself)
--
-- Output:
--   {R.OK, eventId}        paid now
--   {R.EXISTS, eventId}    was paid already: nothing changed
--   {R.UNPAYABLE, status}  not payable: 'missing', 'expired' or 'cancelled'
--@include reply
local s = KEYS[1]
local h = redis.call('HMGET', s, 'st', 'exp', 'evt')
local st = h[1]
if not st then
  return {R.UNPAYABLE, 'missing'}
end
if st == 'paid' then
  return {R.EXISTS, h[3]}
end
if st ~= 'open' then
  return {R.UNPAYABLE, st}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now >= tonumber(h[2]) then
  redis.call('HSET', s, 'st', 'expired')
  return {R.UNPAYABLE, 'expired'}
end

-- the due set first, as no check reads it (when it is not a zset this
-- first write fails and nothing is written)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', s, 'st', 'paid', 'evt', ARGV[2], 'paidAt', now, 'att', 0)
redis.call('PEXPIRE', s, tonumber(ARGV[3]))
return {R.OK, ARGV[2]}
