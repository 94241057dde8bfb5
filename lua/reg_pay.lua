-- reg_pay: book a processor's payment of a storefront registration. Held:
-- its seats are booked, its discount use consumed, it leaves the expiry
-- zset, and it is queued on the paid stream exactly as order_confirm.lua
-- queues an order. Expired (or held under an older generation of the Redis
-- state, whose claims a rebuild did not count): it claims anew when every
-- capacity and the same seats are still free (reclaimed), else it needs a
-- refund: capacity, the same seats, a use of its limited discount code
-- and the buyer's limit are checked as for a new claim. A cancelled event
-- never books it: it needs a refund and, when held, gives its claim back at
-- once (no later payment can book a registration in refund). A payment of
-- a session ticketd never opened for the registration (not in its 'sess'
-- list, reg_checkout.lua), or of another amount or currency than its total
-- in USD, is refused, and nothing changes; but for the payment recorded
-- already ('ref'), a tombstone's (reg_lost.lua), and another payment of a
-- paid registration a rebuild wrote back without its 'sess' (it can only be
-- refunded: already_paid).
--
-- KEYS[1]  -> registration hash     {pN}:ord:<id>
-- KEYS[2]  -> capacities hash       {pN}:ev:<id>:cap
-- KEYS[3]  -> sold hash             {pN}:ev:<id>:sold
-- KEYS[4]  -> booked seats hash     {pN}:ev:<id>:booked
-- KEYS[5]  -> discount holds zset   {pN}:ev:<id>:dcholds ("<code>\n<regId>" -> expiry, lib/cart)
-- KEYS[6]  -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[7]  -> paid stream           {pN}:paid
-- KEYS[8]  -> partition marker      {pN}:live (sales stop while it is missing)
-- KEYS[9]  -> buyers hash           {pN}:ev:<id>:buyers
-- KEYS[10] -> expiry zset           {pN}:regexp
-- KEYS[11] -> unpaid hash           {pN}:ev:<id>:unpaid (a held one leaves it, lib/holds)
-- KEYS[12] -> IP registrations hash {pN}:ev:<id>:ipregs (a held one leaves its client's count)
-- KEYS[13] -> seat holds hash       {pN}:ev:<id>:seats (lib/seatholds)
-- KEYS[14] -> order seats hash      {pN}:ev:<id>:ordseats
-- KEYS[15] -> registration seats hash {pN}:ev:<id>:regseats (label -> o:<regId>)
-- KEYS[16] -> discount held hash    {pN}:ev:<id>:dcheld (code -> its members in KEYS[5])
-- KEYS[17] -> waiting room hash     {pN}:ev:<id>:room (lib/room; read only:
--             a registration whose units went back takes them again only
--             from what the room's live passes do not hold)
-- KEYS[18] -> a webhook delivery's mark {pN}:whseen:<processor>:<eventId>,
--             only with ARGV[8] (handlers/webhooks: registrations.Mark)
--
-- Its seats and discount code are read from its hash; whoever holds the
-- seats is in KEYS[13..15], the code's holds in KEYS[5] and KEYS[16].
--
-- ARGV[1] -> registration id
-- ARGV[2] -> payment reference "<processor>:<paymentId>"
-- ARGV[3] -> amount paid, cents
-- ARGV[4] -> currency, upper case
-- ARGV[5] -> paid stream cap: 0 (a sync worker drains it) or MAXLEN ~ this
-- ARGV[6] -> retention ms (how long a refund or a paid hash without a worker stays)
-- ARGV[7] -> "1" when the event is cancelled, else "0"
-- ARGV[8] -> the mark's value ("done:<delivery>"), or absent: a payment
--            booked (R.OK below) sets KEYS[18] to it, so the webhook that
--            brought it is remembered in the same step
-- ARGV[9] -> the mark's lifetime, ms (with ARGV[8])
--
-- Output:
--   {R.OK, duplicate 0|1, reclaimed 0|1, tickets JSON, paid units, added, view}
--                                         paid (duplicate: by this same payment
--                                         already; its 'acks' is counted up, a
--                                         write a WAIT after it can wait for);
--                                         paid units: the sold hash's 'paid'
--                                         after it; added: the units this
--                                         payment added to it, 0 for a
--                                         duplicate (lib/cart cart_count_paid)
--   {R.NOT_FOUND}                         no such storefront registration
--   {R.UNPAYABLE, reason, duplicate 0|1, view}
--                                         this payment needs a refund: 'cancelled',
--                                         'sold_out', 'seat_lost',
--                                         'discount_used_up', 'buyer_limit',
--                                         'already_paid' (paid by another payment),
--                                         or the reason the registration is in
--                                         refund already
--   {R.STOPPED}                           the partition's marker is missing
--   {R.PAYMENT_REFUSED, reason}           refused, nothing written: 'session' (not
--                                         one ticketd opened for it), 'amount' or
--                                         'currency' (not the registration's)
-- view: the registration as the payment left it, as reg_status answers it
-- (lib/regview), so the caller reads it in the payment's own reply, also
-- when a WAIT follows the payment: read after the writes, or, for a
-- payment booked now, made of what the script read and wrote
-- (regview_of)
--@include capacity
--@include cart
--@include check
--@include holds
--@include regview
--@include reply
--@include room
--@include seatholds

-- mark_seen(): the last write of a booked payment (ARGV[8], KEYS[18]).
local function mark_seen()
  if ARGV[8] and ARGV[8] ~= '' then
    redis.call('SET', KEYS[18], ARGV[8], 'PX', ARGV[9])
  end
end

local gen = redis.call('GET', KEYS[8])
if not gen then
  return {R.STOPPED}
end
local reg = KEYS[1]
local o = redis.call('HMGET', reg, 'st', 'total', 'ch', 'exp', 'claims', 'seats', 'dc', 'tix', 'why', 'ref', 'bk', 'adm', 'gen',
  'dmax', 'lim', 'sess', 'iph', 'ub', 'rec', 'cexp')
local st = o[1]
if not st or string.sub(o[3] or '', 1, 3) ~= 'sf:' then
  return {R.NOT_FOUND}
end
local ref = ARGV[2]
-- A payment not recorded on it yet is taken only for a session ticketd
-- opened for this registration, of its total in USD. The one recorded
-- ('ref') is answered as before, and so is any payment of a tombstone
-- (reg_lost.lua), which knows no session, and another payment of a paid
-- registration a rebuild wrote back without its sessions ('sess'): it
-- cannot be checked and can only be refunded (already_paid, below), as for
-- one that aged out of Redis into Postgres.
local sess = o[16]
if o[10] ~= ref and o[9] ~= 'lost' and not (st == 'paid' and not sess) then
  local opened = false
  for e in string.gmatch(sess or '', '%S+') do
    opened = opened or e == ref
  end
  if not opened then
    return {R.PAYMENT_REFUSED, 'session'}
  elseif ARGV[4] ~= 'USD' then
    return {R.PAYMENT_REFUSED, 'currency'}
  elseif tonumber(ARGV[3]) ~= tonumber(o[2]) then
    return {R.PAYMENT_REFUSED, 'amount'}
  end
end
if st == 'paid' then
  if o[10] ~= ref then
    return {R.UNPAYABLE, 'already_paid', 0, regview(reg)}
  end
  local paid = cart_paid_count(KEYS[3])
  -- a write, so that a WAIT after this retry covers the payment an
  -- earlier run wrote on another connection (redisstate.Replication)
  redis.call('HINCRBY', reg, 'acks', '1')
  mark_seen()
  return {R.OK, 1, 0, o[8], paid, 0, regview(reg)}
end
if st == 'refund' then
  return {R.UNPAYABLE, o[9] or 'refund', o[10] == ref and 1 or 0, regview(reg)}
end
local id = ARGV[1]
local holder = 'o:' .. id
local fields, qtys, seats = cart_of(o[5], o[6])
local n = #fields
local code = o[7] or ''
local bk, adm = o[11], tonumber(o[12]) or 0
-- Its claims count only while held in the generation that took them.
local counted = st == 'held' and o[13] == gen

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- the registration's seats, read once for the checks and the writes (a
-- refund frees only what is still the registration's; expired entries go
-- too)
local cur, stale = seatholds_read({seats = KEYS[13], orders = KEYS[14], regs = KEYS[15]}, seats, now)
local mine = {}
for s = 1, #seats do
  if cur[s] == holder then
    mine[#mine + 1] = seats[s]
  end
end

-- checks
local reason = nil
if ARGV[7] == '1' then
  reason = 'cancelled'
end
if not reason and not counted and capacity_short(KEYS[2], KEYS[3], fields, qtys) then
  reason = 'sold_out'
end
-- An event with a waiting room: the units its live passes hold are
-- promised to the buyers it admitted (lib/room: resv + sold <= stock), so
-- a registration whose units went back takes only what is beyond them.
if not reason and not counted then
  local rk = {sfx = room_sale_sfx(fields)}
  local rv = redis.call('HMGET', KEYS[17], room_f(rk, 'resv'), room_f(rk, 'stock'))
  if rv[2] then
    local sfq = 0
    for c = 1, #fields do
      if fields[c] == CAPACITY_STOREFRONT then -- a showing's units are the same
        sfq = qtys[c]
      end
    end
    if room_free(KEYS[3], rv[2]) - (tonumber(rv[1]) or 0) < sfq then
      reason = 'sold_out'
    end
  end
end
if not reason then
  for s = 1, #seats do
    local v = cur[s]
    if (v and v ~= holder) or redis.call('HEXISTS', KEYS[4], seats[s]) == 1 then
      reason = 'seat_lost'
      break
    end
  end
end
-- A held registration's discount hold never lapses; one given back (or
-- taken under an older state) must find a use left, as a new claim does.
local dk = {dcholds = KEYS[5], dcheld = KEYS[16], dcused = KEYS[6]}
local dmax = tonumber(o[14]) or 0
if not reason and code ~= '' and dmax > 0 and cart_discount_refusal(dk, code, dmax, id, now) then
  reason = 'discount_used_up'
end
local lim = tonumber(o[15]) or 0
if not reason and not counted and bk and lim > 0 then
  if (tonumber(redis.call('HGET', KEYS[9], bk)) or 0) + adm > lim then
    reason = 'buyer_limit'
  end
end

-- Keys written below that no check above read (the checks a refund or a
-- counted claim skips among them): checked now, as a command that fails on
-- a key's type after the first write would leave what was written before.
check_type(KEYS[10], 'zset')
cart_check_discount(dk, code, not reason)
-- the sold hash: a refund of a counted claim gives its claims back, a
-- payment counts its units ('paid', lib/cart cart_count_paid)
check_type(KEYS[3], 'hash')
if reason and counted and bk then
  check_type(KEYS[9], 'hash')
end

-- a held registration no longer awaits payment, paid or refunded: its
-- client's count and its buyer's unpaid slot (lib/holds), read here first
local hk = st == 'held' and {o[17], o[18]} or {}
local slot = holds_read(KEYS[12], KEYS[11], hk[1], hk[2])

-- writes
if reason then
  holds_leave(KEYS[12], KEYS[11], id, hk[1], hk[2], slot)
  if counted then
    for c = 1, n do
      redis.call('HINCRBY', KEYS[3], fields[c], -qtys[c])
    end
    if bk and redis.call('HINCRBY', KEYS[9], bk, -adm) <= 0 then
      redis.call('HDEL', KEYS[9], bk)
    end
  end
  seatholds_drop(KEYS[15], mine)
  seatholds_drop_stale(stale)
  if code ~= '' then
    cart_drop_discount(dk, code, id)
  end
  redis.call('ZREM', KEYS[10], id)
  redis.call('HSET', reg, 'st', 'refund', 'why', reason, 'ref', ref, 'amt', ARGV[3])
  redis.call('PEXPIRE', reg, tonumber(ARGV[6]))
  return {R.UNPAYABLE, reason, 0, regview(reg, now)}
end
-- Paid (lib/cart cart_settle: the paid stream is its first write); a
-- claim counted at register (or re-claimed above) is not counted again.
local paid, added = cart_settle(
  {stream = KEYS[7], soldkey = KEYS[3], buyerskey = KEYS[9], bookedkey = KEYS[4], dk = dk, dcusedkey = KEYS[6]},
  {id = id, salekey = reg, ref = ref, now = now, cap = ARGV[5], retention = tonumber(ARGV[6]), fields = fields, qtys = qtys,
   seats = seats, code = code, bk = bk, adm = adm, counted = counted, extra = {'amt', ARGV[3]}})
holds_leave(KEYS[12], KEYS[11], id, hk[1], hk[2], slot)
seatholds_drop(KEYS[15], mine)
seatholds_drop_stale(stale)
redis.call('ZREM', KEYS[10], id)
mark_seen()
-- the view as regview would read it now: the fields read above, with what
-- cart_settle wrote (st, ref, paid, amt) and dropped (rec, unless a worker
-- drains the stream: lib/cart cart_keep_paid)
local view = regview_of({st = 'paid', total = o[2], ch = o[3], exp = o[4], tix = o[8], why = o[9], ref = ref,
  rec = ARGV[5] == '0' and o[19] or nil, amt = ARGV[3], sess = sess, paid = string.format('%d', now), cexp = o[20],
  claims = o[5]}, now)
return {R.OK, 0, counted and 0 or 1, o[8], paid, added, view}
