-- reg_expire: give back what a storefront registration awaiting payment
-- claimed once its checkout window has passed (Redis time): the sold
-- counts, its seats still held for it, its discount hold and the buyer's
-- admissions; it becomes expired and leaves the expiry zset. A registration
-- taken under an older generation of the Redis state gives back no counts:
-- the rebuild that began the current one did not count them. Idempotent:
-- anything not held just leaves the zset. It does not need the partition's
-- marker: it sells nothing, and gives counts back only under the generation
-- that took them.
--
-- With ARGV[3] 'release' it releases the registration before its window
-- ends: a newer registration of the same buyer replaces it. Its checkout
-- sessions must be the ones the caller closed (ARGV[4]), else it is told
-- them ({R.SESSIONS_CHANGED}) and closes those too. It becomes expired with
-- 'why' = 'replaced'. Not held, it also clears the buyer's unpaid slot (ARGV[5])
-- when that still names it.
--
-- Either way it leaves its client's count and its buyer's unpaid slot
-- (lib/holds).
--
-- KEYS[1]  -> registration hash     {pN}:ord:<id>
-- KEYS[2]  -> sold hash             {pN}:ev:<id>:sold
-- KEYS[3]  -> discount holds zset   {pN}:ev:<id>:dcholds ("<code>\n<regId>" -> expiry, lib/cart)
-- KEYS[4]  -> buyers hash           {pN}:ev:<id>:buyers
-- KEYS[5]  -> expiry zset           {pN}:regexp
-- KEYS[6]  -> partition marker      {pN}:live
-- KEYS[7]  -> unpaid hash           {pN}:ev:<id>:unpaid
-- KEYS[8]  -> IP registrations hash {pN}:ev:<id>:ipregs
-- KEYS[9]  -> registration seats hash {pN}:ev:<id>:regseats (label -> o:<regId>,
--             lib/seatholds; its seats are read from the registration's hash)
-- KEYS[10] -> discount held hash    {pN}:ev:<id>:dcheld (code -> its members in KEYS[3];
--             its code is read from the registration's hash too)
--
-- ARGV[1] -> registration id
-- ARGV[2] -> retention ms: how long the expired hash stays for status reads
-- ARGV[3] -> '' (the window must have passed) or 'release'
-- ARGV[4] -> release: the sessions the caller closed (its 'sess' field)
-- ARGV[5] -> release: the buyer key whose unpaid slot names it
--
-- Output:
--   {R.OK}                          expired (released) now
--   {R.NOT_PENDING, st}             not held ('' when unknown): nothing to give back
--   {R.NOT_DUE, expiresAtMs}        its window has not passed
--   {R.SESSIONS_CHANGED, sessions}  release: it has other sessions than those closed
--@include capacity
--@include cart
--@include check
--@include holds
--@include reply
--@include seatholds
--@allow-oom
local reg = KEYS[1]
local id = ARGV[1]
local release = ARGV[3] == 'release'
local o = redis.call('HMGET', reg, 'st', 'exp', 'claims', 'seats', 'dc', 'bk', 'adm', 'gen', 'sess', 'iph', 'ub')
if o[1] ~= 'held' then
  local slot = release and holds_read(KEYS[8], KEYS[7], nil, ARGV[5])
  redis.call('ZREM', KEYS[5], id)
  if slot == id then
    redis.call('HDEL', KEYS[7], ARGV[5])
  end
  return {R.NOT_PENDING, o[1] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(o[2]) or 0
if now < exp and not release then
  return {R.NOT_DUE, exp}
end
if release and (o[9] or '') ~= ARGV[4] then
  return {R.SESSIONS_CHANGED, o[9] or ''}
end

-- Every key the writes below touch is read or checked first: a command
-- that failed on a key's type after the first write would leave what was
-- written before it. The seats this registration still holds are read
-- once; the expiry zset is the first write (when it fails nothing is
-- written).
-- (a hash without 'gen' counts nothing: during a rebuild the marker is
-- gone too, and false == false must not give back restored counts)
local counted = o[8] and o[8] == redis.call('GET', KEYS[6])
local holder = 'o:' .. id
local seats = {}
for l in string.gmatch(o[4] or '', '%S+') do
  seats[#seats + 1] = l
end
local gone = {}
if #seats > 0 then
  local cur = redis.call('HMGET', KEYS[9], unpack(seats))
  for i = 1, #seats do
    if cur[i] == holder then
      gone[#gone + 1] = seats[i]
    end
  end
end
local slot = holds_read(KEYS[8], KEYS[7], o[10], o[11])
if counted then
  if (o[3] or '') ~= '' then
    check_type(KEYS[2], 'hash')
  end
  if o[6] then
    check_type(KEYS[4], 'hash')
  end
end
local code = o[5] or ''
local dk = {dcholds = KEYS[3], dcheld = KEYS[10]}
cart_check_discount(dk, code, false)

-- writes
redis.call('ZREM', KEYS[5], id)
if counted then
  for f, q in string.gmatch(o[3] or '', '(%S+)%s+(%S+)') do
    redis.call('HINCRBY', KEYS[2], f, -tonumber(q))
  end
  if o[6] and redis.call('HINCRBY', KEYS[4], o[6], -(tonumber(o[7]) or 0)) <= 0 then
    redis.call('HDEL', KEYS[4], o[6])
  end
end
seatholds_drop(KEYS[9], gone)
if code ~= '' then
  cart_drop_discount(dk, code, id)
end
holds_leave(KEYS[8], KEYS[7], id, o[10], o[11], slot)
if release then
  redis.call('HSET', reg, 'st', 'expired', 'why', 'replaced')
else
  redis.call('HSET', reg, 'st', 'expired')
end
redis.call('PEXPIRE', reg, tonumber(ARGV[2]))
return {R.OK}
