-- order_confirm: turn a pending order into a paid one. Claims every capacity
-- counter of the order and books its seats, all or nothing, and queues the
-- paid order on its partition's paid stream in the same atomic step. When it
-- cannot claim (sold out meanwhile, seat lost, order expired, event
-- cancelled) the order becomes failed and its seats and discount use are
-- released.
--
-- KEYS[1]  -> order hash            {pN}:ord:<orderId>
-- KEYS[2]  -> capacities hash       {pN}:ev:<id>:cap
-- KEYS[3]  -> sold hash             {pN}:ev:<id>:sold
-- KEYS[4]  -> booked seats hash     {pN}:ev:<id>:booked
-- KEYS[5]  -> discount holds zset   {pN}:ev:<id>:dcholds ("<code>\n<orderId>" -> expiry, lib/cart)
-- KEYS[6]  -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[7]  -> paid stream           {pN}:paid
-- KEYS[8]  -> partition marker      {pN}:live (sales stop while it is missing)
-- KEYS[9]  -> buyers hash           {pN}:ev:<id>:buyers (buyer key -> admissions)
-- KEYS[10] -> order seats hash      {pN}:ev:<id>:ordseats (label -> o:<orderId> and expiry, lib/seatholds)
-- KEYS[11] -> discount held hash    {pN}:ev:<id>:dcheld (code -> its members in KEYS[5])
--
-- The caller knows every key from the order id: the order's seats and
-- discount code are read from its hash, and their holds are in the
-- event's KEYS[10] and KEYS[5]/KEYS[11] whatever they are.
--
-- ARGV[1] -> order id
-- ARGV[2] -> caller (channel id; the order must belong to it)
-- ARGV[3] -> charged amount, cents
-- ARGV[4] -> tolerance, cents
-- ARGV[5] -> partner reference
-- ARGV[6] -> "1" when the event is cancelled, else "0"
-- ARGV[7] -> paid stream cap: 0 for none (a sync worker drains it); else
--             MAXLEN ~ this many, when no worker ever will
--
-- Without a worker, a paid order keeps the expiry reserve gave its hash
-- (the order's expiry plus the retention, which is after its payment plus
-- the retention).
--
-- Output:
--   {R.OK, duplicate 0|1, tickets JSON, paid units, added}
--                                           paid (duplicate = it already was, by
--                                           this same partner reference: the
--                                           order's 'acks' is counted up, a
--                                           write a WAIT after it can wait for);
--                                           paid units: the sold hash's 'paid'
--                                           after this order; added: the units
--                                           this confirm added to it, 0 for a
--                                           duplicate (lib/cart cart_count_paid)
--   {R.NOT_FOUND}                           no such order for this caller
--   {R.UNPAYABLE, reason}                   cannot confirm: 'expired', 'cancelled',
--                                           'sold_out', 'seat_lost' (now or at an
--                                           earlier confirm), 'buyer_limit' (the
--                                           buyer reached the event's
--                                           maxTicketsPerBuyer since reserve), or
--                                           'already_paid' (paid
--                                           before under another partner reference)
--   {R.AMOUNT_MISMATCH, order total cents}  amount differs beyond the tolerance
--   {R.STOPPED}                             the partition's marker is missing: Redis
--                                           lost its state or is being rebuilt
--@include capacity
--@include cart
--@include reply
--@include seatholds
if redis.call('EXISTS', KEYS[8]) == 0 then
  return {R.STOPPED}
end
local order = KEYS[1]
local o = redis.call('HMGET', order, 'st', 'total', 'ch', 'exp', 'claims', 'seats', 'dc', 'tix', 'why', 'ref', 'bk', 'adm', 'lim')
local st = o[1]
if not st or o[3] ~= ARGV[2] then
  return {R.NOT_FOUND}
end
if st == 'paid' then
  if o[10] ~= ARGV[5] then
    return {R.UNPAYABLE, 'already_paid'}
  end
  local paid = cart_paid_count(KEYS[3])
  -- a write, so that a WAIT after this retry covers the payment an
  -- earlier run wrote on another connection (redisstate.Replication)
  redis.call('HINCRBY', order, 'acks', '1')
  return {R.OK, 1, o[8], paid, 0}
end
if st == 'failed' then
  return {R.UNPAYABLE, o[9] or 'failed'}
end
local oid = ARGV[1]
local holder = 'o:' .. oid
local fields, qtys, seats = cart_of(o[5], o[6])
local code = o[7] or ''

local now = seatholds_now()

-- the seats the order still holds, read once for the checks and the
-- writes (a failed confirm frees only what is still the order's; expired
-- entries go too)
local cur, stale = seatholds_read({orders = KEYS[10]}, seats, now)
local mine, gone = {}, {}
for s = 1, #seats do
  mine[s] = cur[s] == holder
  if mine[s] then
    gone[#gone + 1] = seats[s]
  end
end

-- checks: an order that can no longer be paid fails whatever the amount,
-- so the partner is told to refund rather than to re-quote
local reason = nil
if now >= tonumber(o[4]) then
  reason = 'expired'
elseif ARGV[6] == '1' then
  reason = 'cancelled'
end
local total = tonumber(o[2])
if not reason and math.abs(tonumber(ARGV[3]) - total) > tonumber(ARGV[4]) then
  return {R.AMOUNT_MISMATCH, total}
end
if not reason and capacity_short(KEYS[2], KEYS[3], fields, qtys) then
  reason = 'sold_out'
end
local bk = o[11]
if not reason and bk then
  local have = tonumber(redis.call('HGET', KEYS[9], bk)) or 0
  if have + tonumber(o[12]) > tonumber(o[13]) then
    reason = 'buyer_limit'
  end
end
if not reason then
  for s = 1, #seats do
    if not mine[s] or redis.call('HEXISTS', KEYS[4], seats[s]) == 1 then
      reason = 'seat_lost'
      break
    end
  end
end

-- The discount keys are written below and read by no check.
local dk = {dcholds = KEYS[5], dcheld = KEYS[11], dcused = KEYS[6]}
cart_check_discount(dk, code, not reason)

-- writes: every key they touch was read or checked above, so no command
-- below fails on a key's type (Redis would keep what was written before it)
if reason then
  seatholds_drop(KEYS[10], gone)
  seatholds_drop_stale(stale)
  if code ~= '' then
    cart_drop_discount(dk, code, oid)
  end
  redis.call('HSET', order, 'st', 'failed', 'why', reason)
  return {R.UNPAYABLE, reason}
end
-- Paid (lib/cart cart_settle: the paid stream is its first write). Its
-- claims are counted now: a pending order holds none. Without a worker
-- the order keeps the expiry reserve gave its hash (no retention).
local paid, added = cart_settle(
  {stream = KEYS[7], soldkey = KEYS[3], buyerskey = KEYS[9], bookedkey = KEYS[4], dk = dk, dcusedkey = KEYS[6]},
  {id = oid, salekey = order, ref = ARGV[5], now = now, cap = ARGV[7], retention = nil, fields = fields, qtys = qtys,
   seats = seats, code = code, bk = bk, adm = tonumber(o[12]), counted = false})
seatholds_drop(KEYS[10], seats)
return {R.OK, 0, o[8], paid, added}
