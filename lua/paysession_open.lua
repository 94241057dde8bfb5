-- paysession_open: open a test processor's checkout session (card or
-- wallet). The session hash lives in its registration's slot; it is kept
-- past its expiry for a while so its page can still say what became of it.
--
-- KEYS[1] -> session hash {pN}:pay:<sessionId>
--
-- ARGV[1] -> expiry, unix ms (the end of the registration's checkout window)
-- ARGV[2] -> retention after the expiry, ms
-- ARGV[3..] -> field, value pairs of the session (reg, amt, cur, ...)
--
-- Output:
--   {R.OK}      opened (st = open)
--   {R.EXISTS}  a session of this id exists already; nothing written
--@include reply
local s = KEYS[1]
if redis.call('EXISTS', s) == 1 then
  return {R.EXISTS}
end
local exp = tonumber(ARGV[1])
local fields = {}
for i = 3, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
redis.call('HSET', s, 'st', 'open', 'exp', ARGV[1], unpack(fields))
redis.call('PEXPIREAT', s, exp + tonumber(ARGV[2]))
return {R.OK}
