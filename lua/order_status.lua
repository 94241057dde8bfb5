-- order_status: read an order's state with Redis time, so every node agrees
-- on whether a pending order has expired.
--
-- KEYS[1] -> order hash ({pN}:ord:<orderId>)
-- ARGV: none
--
-- Output: {R.NOT_FOUND} when the order is unknown, else
--         {R.OK, st, total cents, channel id, expiry ms, now ms, caller}
--         st is "pending", "paid" or "failed" as stored; the caller treats a
--         pending order past its expiry as failed.
--@no-writes
--@include reply
local o = redis.call('HMGET', KEYS[1], 'st', 'total', 'ch', 'exp', 'by')
if not o[1] then
  return {R.NOT_FOUND}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {R.OK, o[1], tonumber(o[2]), o[3] or '', tonumber(o[4]) or 0, now, o[5] or ''}
