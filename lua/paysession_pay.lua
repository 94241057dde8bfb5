-- paysession_pay: pay a test processor's checkout session, open -> paid, and
-- owe its webhook in the same step: the session joins its partition's due
-- set, which the delivery loop works through until ticketd answers 2xx.
-- Every reply but 'missing' carries the session's fields as read, with its
-- status ('st') as it now is, so the page and the first delivery need no
-- read of their own (a payment's event id is the reply's second element).
--
-- KEYS[1] -> session hash {pN}:pay:<sessionId>
-- KEYS[2] -> due set {pN}:paydue:<processor> (member: session id, score: next attempt, ms)
--
-- ARGV[1] -> session id
-- ARGV[2] -> webhook event id, minted by the caller (kept if already paid)
-- ARGV[3] -> retention of a paid session, ms (the deliveries' lifetime)
-- ARGV[4] -> delay before the loop may try the first delivery, ms (the
--            caller delivers at once itself)
-- ARGV[5] -> the processor's name: a session of another is missing
-- ARGV[6] -> '' when the card may pay, else why not ('invalid', 'declined'):
--            judged by the caller, answered only for an open session, as
--            a paid or closed one is answered so whatever the card
--
-- Output (session: the hash's fields and values, as HGETALL answers):
--   {R.OK, eventId, session}              paid now
--   {R.EXISTS, eventId, session}          was paid already: nothing changed
--   {R.PAYMENT_REFUSED, why, session}     open, and the card may not pay
--                                         (ARGV[6]): nothing changed
--   {R.UNPAYABLE, 'missing'}              no such session of this processor
--   {R.UNPAYABLE, status, session}        not payable: 'expired' or 'cancelled'
--@include reply
local s = KEYS[1]
local h = redis.call('HGETALL', s)
local f = {}
for i = 1, #h, 2 do
  f[h[i]] = i + 1
end
local st = f.st and h[f.st]
if not st or not f.proc or h[f.proc] ~= ARGV[5] then
  return {R.UNPAYABLE, 'missing'}
end
if st == 'paid' then
  return {R.EXISTS, f.evt and h[f.evt] or '', h}
end
if st ~= 'open' then
  return {R.UNPAYABLE, st, h}
end
if ARGV[6] ~= '' then
  return {R.PAYMENT_REFUSED, ARGV[6], h}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now >= tonumber(h[f.exp]) then
  redis.call('HSET', s, 'st', 'expired')
  h[f.st] = 'expired'
  return {R.UNPAYABLE, 'expired', h}
end

-- the due set first, as no check reads it (when it is not a zset this
-- first write fails and nothing is written)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', s, 'st', 'paid', 'evt', ARGV[2], 'paidAt', now, 'att', 0)
redis.call('PEXPIRE', s, tonumber(ARGV[3]))
h[f.st] = 'paid'
return {R.OK, ARGV[2], h}
