-- seat_token: create a seat hold token, or report the expiry of the live one
-- (a buyer session asks for its token more than once). A token made for a
-- client (a storefront or seat picker buyer, lib/holds) counts for it while
-- it lives, and is refused when the client's registrations awaiting payment
-- and live tokens reach its limit; the token hash keeps the client ('ip')
-- so an extend moves the token's count with its expiry.
--
-- KEYS[1] -> hold token hash      {pN}:ev:<id>:hold:<token>
-- KEYS[2] -> IP registrations hash {pN}:ev:<id>:ipregs
-- KEYS[3] -> IP tokens zset       {pN}:ev:<id>:iptok:<client> (any name when no client)
--
-- ARGV[1] -> hold TTL ms
-- ARGV[2] -> hold token
-- ARGV[3] -> client key ("" counts no client)
-- ARGV[4] -> the client's limit of holds
--
-- Output:
--   {R.OK, expiresAtMs}      created: first = now, exp = now + TTL
--   {R.EXISTS, expiresAtMs}  the token already exists; nothing changed
--   {R.CLIENT_LIMIT, limit}  the client holds its limit already; nothing created
--@include holds
--@include reply
local hold = KEYS[1]
local exp = redis.call('HGET', hold, 'exp')
if exp then
  return {R.EXISTS, tonumber(exp)}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local e = now + tonumber(ARGV[1])
local client = ARGV[3]
if client ~= '' and holds_live(KEYS[2], KEYS[3], client, now) >= tonumber(ARGV[4]) then
  return {R.CLIENT_LIMIT, tonumber(ARGV[4])}
end

-- writes (every key was read above)
if client ~= '' then
  holds_add_token(KEYS[3], ARGV[2], e, now)
  redis.call('HSET', hold, 'first', now, 'exp', e, 'ip', client)
else
  redis.call('HSET', hold, 'first', now, 'exp', e)
end
redis.call('PEXPIREAT', hold, e)
return {R.OK, e}
