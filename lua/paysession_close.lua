-- paysession_close: close an open test processor's session so it can no
-- longer be paid: 'expired' (the registration's hold ended) or 'cancelled'
-- (the buyer left the page). A paid session stays paid.
--
-- KEYS[1] -> session hash {pN}:pay:<sessionId>
--
-- ARGV[1] -> the status to close with: 'expired' or 'cancelled'
--
-- Output:
--   {R.OK, status}  the session's status after the call ('paid' when it had
--                   been paid, the old status when it was closed already)
--   {R.NOT_FOUND}   no such session
--@include reply
local s = KEYS[1]
local st = redis.call('HGET', s, 'st')
if not st then
  return {R.NOT_FOUND}
end
if st == 'open' then
  redis.call('HSET', s, 'st', ARGV[1])
  return {R.OK, ARGV[1]}
end
return {R.OK, st}
