-- seat_token: create a seat hold token, or report the expiry of the live one
-- (a buyer session asks for its token more than once).
--
-- KEYS[1] -> hold token hash {pN}:ev:<id>:hold:<token>
--
-- ARGV[1] -> hold TTL ms
--
-- Output:
--   {0, expiresAtMs}  created: first = now, exp = now + TTL
--   {1, expiresAtMs}  the token already exists; nothing changed
local hold = KEYS[1]
local exp = redis.call('HGET', hold, 'exp')
if exp then
  return {1, tonumber(exp)}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local e = now + tonumber(ARGV[1])
redis.call('HSET', hold, 'first', now, 'exp', e)
redis.call('PEXPIREAT', hold, e)
return {0, e}
