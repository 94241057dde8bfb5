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
-- KEYS[1]  -> registration hash     {pN}:ord:<id>
-- KEYS[2]  -> sold hash             {pN}:ev:<id>:sold
-- KEYS[3]  -> discount holds zset   {pN}:ev:<id>:dchold:<code> (any name when none)
-- KEYS[4]  -> buyers hash           {pN}:ev:<id>:buyers
-- KEYS[5]  -> expiry zset           {pN}:regexp
-- KEYS[6]  -> partition marker      {pN}:live
-- KEYS[7..] -> seat keys of the registration's seats, in the order of its 'seats'
--
-- ARGV[1] -> registration id
-- ARGV[2] -> declared seats (the 'seats' field as the caller knows it)
-- ARGV[3] -> declared discount code
-- ARGV[4] -> retention ms: how long the expired hash stays for status reads
--
-- Output:
--   {0}                        expired now
--   {1, st}                    not held ('' when unknown): nothing to give back
--   {2, expiresAtMs}           its window has not passed
--   {3, seats, discount code}  declared keys are not the registration's
--@include capacity
--@include cart
--@include check
local reg = KEYS[1]
local id = ARGV[1]
local o = redis.call('HMGET', reg, 'st', 'exp', 'claims', 'seats', 'dc', 'bk', 'adm', 'gen')
if o[1] ~= 'held' then
  redis.call('ZREM', KEYS[5], id)
  return {1, o[1] or ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(o[2]) or 0
if now < exp then
  return {2, exp}
end
if (o[4] or '') ~= ARGV[2] or (o[5] or '') ~= ARGV[3] then
  return {3, o[4] or '', o[5] or ''}
end

-- Every key the writes below touch is read or checked first: a command
-- that failed on a key's type after the first write would leave what was
-- written before it. The seats this registration still holds are read
-- once; the expiry zset is the first write (when it fails nothing is
-- written).
local counted = o[8] == redis.call('GET', KEYS[6])
local holder = 'o:' .. id
local mine, s = {}, 0
for _ in string.gmatch(o[4] or '', '%S+') do
  s = s + 1
  mine[s] = redis.call('GET', KEYS[6 + s]) == holder
end
if counted then
  if (o[3] or '') ~= '' then
    check_type(KEYS[2], 'hash')
  end
  if o[6] then
    check_type(KEYS[4], 'hash')
  end
end
if (o[5] or '') ~= '' then
  check_type(KEYS[3], 'zset')
end

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
for s = 1, #mine do
  if mine[s] then
    redis.call('DEL', KEYS[6 + s])
  end
end
if (o[5] or '') ~= '' then
  cart_drop_discount(KEYS[3], id)
end
redis.call('HSET', reg, 'st', 'expired')
redis.call('PEXPIRE', reg, tonumber(ARGV[4]))
return {0}
