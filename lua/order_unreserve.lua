-- order_unreserve: undo an order_reserve whose Idempotency-Key turned out
-- to be another request's. The key's own claim (its own slot, pipelined
-- beside the reserve) found it used for another event, which the event's
-- claim (order_reserve's KEYS[14]) could not see; nobody was given this
-- order's id. The order goes and what it took goes back: its seats to the
-- hold token they came from (free seats when the token is gone), its hold
-- of a discount use, and the event's claim of the key when it is this
-- order's.
--
-- KEYS[1] -> order hash            {pN}:ord:<orderId>
-- KEYS[2] -> hold token hash       {pN}:ev:<id>:hold:<token> (any name when no seats)
-- KEYS[3] -> seat holds hash       {pN}:ev:<id>:seats (lib/seatholds)
-- KEYS[4] -> order seats hash      {pN}:ev:<id>:ordseats
-- KEYS[5] -> discount holds zset   {pN}:ev:<id>:dcholds (lib/cart)
-- KEYS[6] -> discount held hash    {pN}:ev:<id>:dcheld
-- KEYS[7] -> the event's claim of the key {pN}:ev:<id>:idem:<key>
--
-- ARGV[1] -> order id
-- ARGV[2] -> hold token ("" when no seats)
-- ARGV[3] -> the key's record the reserve wrote in KEYS[7]
--
-- Output:
--   {R.OK}          undone
--   {R.NOT_PENDING} no pending order of that id (nothing to undo)
--@include cart
--@include reply
local order = KEYS[1]
if redis.call('HGET', order, 'st') ~= 'pending' then
  return {R.NOT_PENDING}
end
local oid = ARGV[1]
local _, _, labels = cart_of(nil, redis.call('HGET', order, 'seats'))
-- only the entries still this order's (all of them: its id was never given out)
local mine = {}
if #labels > 0 then
  local vals = redis.call('HMGET', KEYS[4], unpack(labels))
  for i = 1, #labels do
    if vals[i] and string.sub(vals[i], 1, #oid + 3) == 'o:' .. oid .. ' ' then
      mine[#mine + 1] = labels[i]
    end
  end
end
local texp = ARGV[2] ~= '' and redis.call('HGET', KEYS[2], 'exp')
local code = redis.call('HGET', order, 'dc') or ''
check_type(KEYS[3], 'hash')
check_type(KEYS[5], 'zset')
check_type(KEYS[6], 'hash')
local ours = redis.call('GET', KEYS[7]) == ARGV[3]

-- writes
seatholds_drop(KEYS[4], mine)
if texp then
  for i = 1, #mine do
    redis.call('HSET', KEYS[2], 's:' .. mine[i], '1')
  end
  seatholds_put(KEYS[3], mine, 'h:' .. ARGV[2], texp)
end
if code ~= '' then
  cart_drop_discount({dcholds = KEYS[5], dcheld = KEYS[6]}, code, oid)
end
if ours then
  redis.call('DEL', KEYS[7])
end
redis.call('DEL', order)
return {R.OK}
