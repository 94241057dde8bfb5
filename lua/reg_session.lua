-- reg_session: record a checkout session a processor opened for a
-- registration awaiting payment, so the sweeper closes it before giving the
-- hold back. A registration keeps every session opened for it (a buyer who
-- went back and paid again opens another): each one must be closed. A
-- registration holds for the short register hold until a session is opened
-- for it; then its window becomes the checkout window counted from the
-- registration ('cexp', never shortened: a grace period may lie beyond),
-- in the hash and in the expiry zset together.
--
-- KEYS[1] -> registration hash {pN}:ord:<id>
-- KEYS[2] -> expiry zset       {pN}:regexp
--
-- ARGV[1] -> processor name
-- ARGV[2] -> session id (no spaces)
-- ARGV[3] -> most sessions a registration may have
-- ARGV[4] -> registration id
--
-- Output:
--   {0, expiresAtMs}  recorded (or recorded before): the window ends then
--   {1, st}           not awaiting payment: 'paid', 'expired', 'refund', or
--                     '' when unknown or not a registration ('expired' too when
--                     its window passed)
--   {2}               it has the most sessions already
local o = redis.call('HMGET', KEYS[1], 'st', 'exp', 'sess', 'ch', 'cexp')
if string.sub(o[4] or '', 1, 3) ~= 'sf:' then
  return {1, ''}
end
if o[1] ~= 'held' then
  return {1, o[1]}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(o[2])
if now >= exp then
  return {1, 'expired'}
end
local entry = ARGV[1] .. ':' .. ARGV[2]
local n = 0
for e in string.gmatch(o[3] or '', '%S+') do
  if e == entry then
    return {0, exp}
  end
  n = n + 1
end
if n >= tonumber(ARGV[3]) then
  return {2}
end

-- writes: the expiry zset first, as no check reads it (when it is not a
-- zset this first write fails and nothing is written)
local cexp = tonumber(o[5]) or 0
if cexp > exp then
  exp = cexp
  redis.call('ZADD', KEYS[2], exp, ARGV[4])
end
local list = entry
if o[3] and o[3] ~= '' then
  list = o[3] .. ' ' .. entry
end
redis.call('HSET', KEYS[1], 'sess', list, 'exp', exp)
return {0, exp}
