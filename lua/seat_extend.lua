-- seat_extend: push a hold token's expiry to now + TTL, never beyond
-- first + max TTL, on the token hash, on every seat it holds and, for a
-- token counted for a client (seat_token), on its score in the client's
-- IP tokens zset, so the token counts exactly as long as it lives. The
-- caller reads the token first and declares its seats' keys and its
-- client's zset; if they changed meanwhile the script answers {2} and the
-- caller reads again.
--
-- KEYS[1]  -> hold token hash {pN}:ev:<id>:hold:<token>
-- KEYS[2]  -> IP tokens zset  {pN}:ev:<id>:iptok:<client> (any name when no client)
-- KEYS[3..] -> one seat key per label, in the order of the labels in ARGV
--
-- ARGV[1] -> hold token
-- ARGV[2] -> hold TTL ms
-- ARGV[3] -> max TTL ms, counted from the token's creation
-- ARGV[4] -> the token's client ('ip' field as the caller read it; "" none)
-- ARGV[5..] -> labels of every seat the token holds
--
-- Output:
--   {0, expiresAtMs}  extended
--   {1}               the token is gone (expired or never created)
--   {2}               the token's seats or client are not those given; retry
--@include holds
local hold = KEYS[1]
local h = redis.call('HMGET', hold, 'first', 'exp', 'ip')
if not h[2] then
  return {1}
end
local client = h[3] or ''
if client ~= ARGV[4] then
  return {2}
end

local n = #KEYS - 2
local count = 0
for _, f in ipairs(redis.call('HKEYS', hold)) do
  if string.sub(f, 1, 2) == 's:' then
    count = count + 1
  end
end
if count ~= n then
  return {2}
end
for i = 1, n do
  if redis.call('HEXISTS', hold, 's:' .. ARGV[4 + i]) == 0 then
    return {2}
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local first = tonumber(h[1]) or now
local e = math.min(now + tonumber(ARGV[2]), first + tonumber(ARGV[3]))

-- the seats the token still holds, read before the first write: a GET
-- that failed on a key of the wrong type after it would leave the token
-- extended without its seats; the client's zset too
local holder = 'h:' .. ARGV[1]
local mine = {}
for i = 1, n do
  mine[i] = redis.call('GET', KEYS[2 + i]) == holder
end
if client ~= '' then
  redis.call('ZSCORE', KEYS[2], ARGV[1])
end

-- writes
redis.call('HSET', hold, 'exp', e)
redis.call('PEXPIREAT', hold, e)
for i = 1, n do
  if mine[i] then
    redis.call('PEXPIREAT', KEYS[2 + i], e)
  end
end
if client ~= '' then
  holds_add_token(KEYS[2], ARGV[1], e, now)
end
return {0, e}
