-- reg_status: read a registration with Redis time, so every node agrees on
-- whether one awaiting payment has passed its window.
--
-- KEYS[1] -> registration hash {pN}:ord:<id>
-- ARGV: none
--
-- Output: {R.NOT_FOUND} when unknown, else
--   {R.OK, now ms, st, total, ch, exp, tix, why, ref, rec, amt, sess, paid, cexp, claims}
--   (absent fields as ''; claims, the sale's "field qty ...", name its
--   showing after the sync worker dropped rec)
--@no-writes
--@include reply
local f = {'st', 'total', 'ch', 'exp', 'tix', 'why', 'ref', 'rec', 'amt', 'sess', 'paid', 'cexp', 'claims'}
local o = redis.call('HMGET', KEYS[1], unpack(f))
if not o[1] then
  return {R.NOT_FOUND}
end
local t = redis.call('TIME')
local out = {R.OK, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
for i = 1, #f do
  out[#out + 1] = o[i] or ''
end
return out
