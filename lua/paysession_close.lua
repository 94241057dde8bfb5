-- paysession_close: close an open test processor's session so it can no
-- longer be paid: 'expired' (the registration's hold ended) or 'cancelled'
-- (the buyer left the page). A paid session stays paid.
--
-- KEYS[1] -> session hash {pN}:pay:<sessionId>
--
-- ARGV[1] -> the status to close with: 'expired' or 'cancelled'
--
-- Output:
--   {0, status}  the session's status after the call ('paid' when it had
--                been paid, the old status when it was closed already)
--   {1}          no such session
local s = KEYS[1]
local st = redis.call('HGET', s, 'st')
if not st then
  return {1}
end
if st == 'open' then
  redis.call('HSET', s, 'st', ARGV[1])
  return {0, ARGV[1]}
end
return {0, st}
