-- reg_session: record a checkout session a processor opened for a
-- registration awaiting payment, so the sweeper closes it before giving the
-- hold back. A registration keeps every session opened for it (a buyer who
-- went back and paid again opens another): each one must be closed.
--
-- KEYS[1] -> registration hash {pN}:ord:<id>
--
-- ARGV[1] -> processor name
-- ARGV[2] -> session id (no spaces)
-- ARGV[3] -> most sessions a registration may have
--
-- Output:
--   {0, expiresAtMs}  recorded (or recorded before)
--   {1, st}           not awaiting payment: 'paid', 'expired', 'refund', or
--                     '' when unknown or not a registration ('expired' too when
--                     its window passed)
--   {2}               it has the most sessions already
local o = redis.call('HMGET', KEYS[1], 'st', 'exp', 'sess', 'ch')
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

-- writes
local list = entry
if o[3] and o[3] ~= '' then
  list = o[3] .. ' ' .. entry
end
redis.call('HSET', KEYS[1], 'sess', list)
return {0, exp}
