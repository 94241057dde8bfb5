-- reg_checkout: attach a new checkout session to a registration awaiting
-- payment, in one step with what goes with it: the session the caller saw
-- attached last is closed when it is a built-in processor's (its hash is
-- in this slot), a built-in processor's new session is opened, and the
-- registration records the new one as its last (as AttachSession always did: it
-- keeps every session, for the sweeper to close; its window becomes the
-- checkout window). Two calls for one registration are ordered by this
-- script: when the last session is not the one the caller saw (another
-- call attached one since), nothing is written and the script answers it,
-- so the caller closes it (a paid one stops the call) and runs again.
--
-- KEYS[1] -> registration hash {pN}:ord:<id>
-- KEYS[2] -> expiry zset       {pN}:regexp
-- KEYS[3] -> the new session's hash {pN}:pay:<sessionId> when ARGV[6] is
--            '1' (a built-in processor's); else any key of the slot, unused
-- KEYS[4] -> the hash of the session the caller saw last, when ARGV[5]
--            names a built-in processor's; else any key of the slot, unused
--
-- ARGV[1] -> processor name
-- ARGV[2] -> session id (no spaces)
-- ARGV[3] -> most sessions a registration may have
-- ARGV[4] -> registration id
-- ARGV[5] -> the last session the caller saw, "<processor>:<id>", '' for
--            none, or '*': whatever is last (AttachSession appends)
-- ARGV[6] -> '1': open the new session (KEYS[3]) with ARGV[9..]
-- ARGV[7] -> '1': KEYS[4] is the seen session's hash, to close
-- ARGV[8] -> the new session's expiry, unix ms, then its retention, ms,
--            as "<exp> <retention>" ('' unless ARGV[6] is '1')
-- ARGV[9..] -> field, value pairs of the new session (ARGV[6] = '1')
--
-- Output:
--   {R.OK, expiresAtMs}         attached (or attached before)
--   {R.NOT_PENDING, st}         not awaiting payment: 'paid' (the seen
--                               session was paid, or the registration),
--                               'expired', 'refund', or '' when unknown
--   {R.TOO_MANY_SESSIONS}       it has the most sessions already
--   {R.EXISTS}                  the new session's id exists already
--                               (nothing written)
--   {R.SESSIONS_CHANGED, last}  the last session is not ARGV[5] but last
--                               ("<processor>:<id>"), attached by another
--                               call since the caller's read: nothing
--                               written
--@include reply
local o = redis.call('HMGET', KEYS[1], 'st', 'exp', 'sess', 'ch', 'cexp')
if string.sub(o[4] or '', 1, 3) ~= 'sf:' then
  return {R.NOT_PENDING, ''}
end
if o[1] ~= 'held' then
  return {R.NOT_PENDING, o[1]}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(o[2])
if now >= exp then
  return {R.NOT_PENDING, 'expired'}
end
local entry = ARGV[1] .. ':' .. ARGV[2]
local n, last = 0, ''
for e in string.gmatch(o[3] or '', '%S+') do
  if e == entry then
    return {R.OK, exp}
  end
  n = n + 1
  last = e
end
if n >= tonumber(ARGV[3]) then
  return {R.TOO_MANY_SESSIONS}
end
if ARGV[5] ~= '*' and last ~= ARGV[5] then
  return {R.SESSIONS_CHANGED, last}
end
local closeSeen = ARGV[7] == '1' and last ~= ''
if closeSeen and redis.call('HGET', KEYS[4], 'st') == 'paid' then
  return {R.NOT_PENDING, 'paid'}
end
if ARGV[6] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then
  return {R.EXISTS}
end

-- writes: the expiry zset first, as no check reads it (when it is not a
-- zset this first write fails and nothing is written)
local cexp = tonumber(o[5]) or 0
local exps = o[2] -- the window's end as stored
if cexp > exp then
  exp, exps = cexp, o[5]
  redis.call('ZADD', KEYS[2], exps, ARGV[4])
end
if closeSeen and redis.call('HGET', KEYS[4], 'st') == 'open' then
  redis.call('HSET', KEYS[4], 'st', 'expired')
end
if ARGV[6] == '1' then
  local sexp, keep = string.match(ARGV[8], '^(%d+) (%d+)$')
  local fields = {}
  for i = 9, #ARGV do
    fields[#fields + 1] = ARGV[i]
  end
  redis.call('HSET', KEYS[3], 'st', 'open', 'exp', sexp, unpack(fields))
  redis.call('PEXPIREAT', KEYS[3], string.format('%d', tonumber(sexp) + tonumber(keep)))
end
local list = entry
if o[3] and o[3] ~= '' then
  list = o[3] .. ' ' .. entry
end
redis.call('HSET', KEYS[1], 'sess', list, 'exp', exps)
return {R.OK, exp}
