-- reg_register: create a storefront registration (register-guest). Unlike
-- a partner reserve it claims at once: the sold counters of its claims, the
-- seats its hold token holds (handed to the registration), one use of a
-- limited discount code and the buyer's admissions, so a payment never
-- finds its inventory gone and a partner confirm can never oversell against
-- it. The seats and the discount use are held without expiry: while the
-- registration is held, only reg_expire and reg_pay give them back. A paid
-- registration (total > 0) is held for the checkout window and put in its
-- partition's expiry zset; a free one is paid at once, by the settle step
-- order_confirm.lua and reg_pay.lua take (lib/cart cart_settle), so it is
-- queued on the paid stream exactly as a confirmed order is.
--
-- A paid registration's window is first the register hold (ARGV[2]); the
-- first checkout session attached to it (reg_checkout) moves it to the
-- checkout window counted from now (ARGV[12], kept in 'cexp'). It is the
-- buyer's one registration awaiting payment (the unpaid hash): one of the
-- buyer's already there is named ({R.BUYER_UNPAID}) and the caller releases
-- it first. It counts for its client (lib/holds): refused when the client's
-- registrations awaiting payment and live hold tokens reach the limit. A
-- free one counts in the client's tokens zset (member f:<id>) until the
-- register hold's end.
--
-- KEYS[1]  -> registration hash     {pN}:ord:<id>
-- KEYS[2]  -> capacities hash       {pN}:ev:<id>:cap
-- KEYS[3]  -> sold hash             {pN}:ev:<id>:sold
-- KEYS[4]  -> booked seats hash     {pN}:ev:<id>:booked
-- KEYS[5]  -> hold token hash       {pN}:ev:<id>:hold:<token> (any name when no seats)
-- KEYS[6]  -> discount holds zset   {pN}:ev:<id>:dcholds ("<code>\n<regId>" -> expiry, lib/cart)
-- KEYS[7]  -> discount used hash    {pN}:ev:<id>:dcused
-- KEYS[8]  -> partition marker      {pN}:live (sales stop while it is missing)
-- KEYS[9]  -> buyers hash           {pN}:ev:<id>:buyers
-- KEYS[10] -> seat holds hash       {pN}:ev:<id>:seats (label -> h:<token> and expiry, lib/seatholds)
-- KEYS[11] -> order seats hash      {pN}:ev:<id>:ordseats (label -> o:<orderId> and expiry)
-- KEYS[12] -> registration seats hash {pN}:ev:<id>:regseats (label -> o:<regId>)
-- KEYS[13] -> discount held hash    {pN}:ev:<id>:dcheld (code -> its members in KEYS[6])
-- KEYS[14] -> expiry zset           {pN}:regexp
-- KEYS[15] -> paid stream           {pN}:paid
-- KEYS[16] -> unpaid hash           {pN}:ev:<id>:unpaid (buyer key -> registration id)
-- KEYS[17] -> IP registrations hash {pN}:ev:<id>:ipregs (client -> registrations awaiting payment)
-- KEYS[18] -> IP tokens zset        {pN}:ev:<id>:iptok:<client> (any name when no client;
--             also free registrations, f:<id>, for the register hold)
-- KEYS[19] -> waiting room hash     {pN}:ev:<id>:room (lib/room; read only with a pass)
-- KEYS[20] -> room places hash      {pN}:ev:<id>:room:places
-- KEYS[21] -> room passes zset      {pN}:ev:<id>:room:passes
-- KEYS[22] -> room audit stream     {pN}:ev:<id>:room:audit
--             (20 to 22: a showing's room's, room:places@<showing>..., for
--             a sale of a showing: lib/room room_sale_sfx; 19 to 22 are
--             left out without a pass, ARGV[15] '', as nothing reads them)
--
-- ARGV[1]  -> registration id
-- ARGV[2]  -> register hold TTL ms (the window until a checkout session is attached)
-- ARGV[3]  -> retention ms (how long a paid hash stays without a worker)
-- ARGV[4]  -> hold token ("" when no seats)
-- ARGV[5]  -> discount code ("" when none)
-- ARGV[6]  -> discount max uses (0 = unlimited)
-- ARGV[7]  -> max admissions per buyer (0 = no limit)
-- ARGV[8]  -> buyer key (orders.BuyerKey)
-- ARGV[9]  -> admissions
-- ARGV[10] -> "1" when free (paid at once), else "0"
-- ARGV[11] -> paid stream cap: 0 (a sync worker drains it) or MAXLEN ~ this
-- ARGV[12] -> checkout TTL ms (the window once a checkout session is attached)
-- ARGV[13] -> client key (holds.Client; "" counts no client)
-- ARGV[14] -> the client's limit of holds
-- ARGV[15] -> the waiting room's pass this registration burns: "<queue id>
--             <expiry ms>" ("": none). It must be the place's live pass
--             (the one given with that expiry: an older pass of a place
--             admitted again is lapsed), for this buyer (ARGV[8]), covering
--             the admissions (ARGV[9]); its reservation becomes the
--             registration's claim in this step. "@hold" on a seated
--             event: the pass that made the hold token (KEYS[5]'s 'q',
--             seat_token) is burnt so, its place holding (lib/room 'h');
--             the token's seats the cart leaves out are let go with it
-- ARGV[16] -> number of claims C
-- next 2C  -> claim field, quantity, ...
-- next     -> number of seats S, then S seat labels
-- next 6   -> the hash's total, ch, by, claims, tix and rec (lib/cart
--             cart_sale_fields names them, and adds seats and dc when not
--             empty; st, exp, gen are added here; at, cexp, ub and iph,
--             when counted, to a paid one; bk, adm, lim with a buyer limit;
--             dmax, the code's max uses, with a limited code: reg_pay checks
--             them again for a late payment)
--
-- Output:
--   {R.OK, expiresAtMs}                      held, awaiting payment
--   {R.EXISTS, st}                           the registration exists already
--                                            (nothing done)
--   {R.SHORT, field, remaining}              a capacity field has fewer than
--                                            requested left
--   {R.HOLD_GONE}                            the hold token is gone (hold_expired)
--   {R.SEAT_TAKEN, {labels}}                 seats booked or held by someone else
--   {R.SEAT_NOT_HELD, {labels}}              seats not held by this token
--   {R.DISCOUNT_USED_UP}                     the discount code has no uses left
--   {R.STOPPED}                              the partition's marker is missing
--   {R.BUYER_LIMIT, limit, remaining}        the buyer would pass maxTicketsPerBuyer
--   {R.PAID, paidAtMs, paid units, added}    free: paid at once; paid units:
--                                            the sold hash's 'paid' after it,
--                                            added: the units it added
--                                            (lib/cart cart_count_paid)
--   {R.BUYER_UNPAID, registrationId, nowUs}  the buyer has this registration
--                                            awaiting payment
--   {R.CLIENT_LIMIT, limit}                  the client holds its limit already
--   {R.PASS_INVALID, why}                    the pass is not for this buyer
--                                            ('buyer') or these admissions
--                                            ('units'), or no pass ('state')
--   {R.PASS_USED}                            the pass made a registration already
--   {R.PASS_EXPIRED}                         the pass lapsed, or its holder left
--                                            (or, "@hold", its hold token lapsed)
--   {R.PASS_REQUIRED}                        "@hold": the hold token was made
--                                            without a pass
--@include capacity
--@include cart
--@include holds
--@include reply
--@include room
local gen = redis.call('GET', KEYS[8])
if not gen then
  return {R.STOPPED}
end
local reg = KEYS[1]
local st = redis.call('HGET', reg, 'st')
if st then
  return {R.EXISTS, st}
end

local fields, qtys, labels, rest = cart_args(16)
local nclaims, nseats = #fields, #labels

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local exp = now + ttl
local free = ARGV[10] == '1'
local id, buyer, client = ARGV[1], ARGV[8], ARGV[13]

-- The waiting room's pass, first: a buyer without a live pass of their own
-- is told so before anything else. On a seated event the pass made the
-- registration's hold token (seat_token), which names its place ('q').
local room, pass = nil, nil
if ARGV[15] ~= '' then
  room = {room = KEYS[19], places = KEYS[20], passes = KEYS[21], audit = KEYS[22], sfx = room_sale_sfx(fields)}
  room_check(room)
  if ARGV[15] == '@hold' then
    local h = redis.call('HMGET', KEYS[5], 'exp', 'q')
    if not h[1] then
      return {R.HOLD_GONE}
    end
    if not h[2] then
      return {R.PASS_REQUIRED}
    end
    local pst, pqty, pexp, pbk = room_place(redis.call('HGET', room.places, h[2]))
    if pst == 'u' then
      return {R.PASS_USED}
    end
    if pst ~= 'h' then
      return {R.PASS_EXPIRED}
    end
    pass = {id = h[2], st = pst, qty = pqty, exp = pexp, bk = pbk}
  else
    local refusal
    pass, refusal = room_pass(room, ARGV[15], now)
    if not pass then
      return refusal
    end
    pass.st = 'a'
  end
  if pass.bk ~= buyer then
    return {R.PASS_INVALID, 'buyer'}
  end
  if tonumber(ARGV[9]) > pass.qty then
    return {R.PASS_INVALID, 'units'}
  end
  -- "@hold": the place's units leave resv below, so the seats its token
  -- holds beyond the cart are let go with them (the token holds nothing
  -- after: its place is used), never left held for nobody
  if pass.st == 'h' then
    local incart, rest = {}, {}
    for s = 1, nseats do
      incart[labels[s]] = true
    end
    for _, f in ipairs(redis.call('HKEYS', KEYS[5])) do
      local l = string.sub(f, 3)
      if string.sub(f, 1, 2) == 's:' and not incart[l] then
        rest[#rest + 1] = l
      end
    end
    local cur = seatholds_read({seats = KEYS[10]}, rest, now)
    pass.rest, pass.mine = rest, {}
    for i = 1, #rest do
      if cur[i] == 'h:' .. ARGV[4] then
        pass.mine[#pass.mine + 1] = rest[i]
      end
    end
  end
end

-- What one buyer and one client hold unpaid (lib/holds). The buyer's
-- earlier registration first: releasing it may free the places and the
-- client's count this one needs. A free registration holds nothing unpaid,
-- but it claims for good: it counts for its client like a hold token for
-- the register hold, so one address claims a free event no faster than it
-- could hold a paid one.
if not free then
  local prev = redis.call('HGET', KEYS[16], buyer)
  if prev and prev ~= id then
    return {R.BUYER_UNPAID, prev, tonumber(t[1]) * 1000000 + tonumber(t[2])}
  end
end
if client ~= '' then
  local live = holds_live(KEYS[17], KEYS[18], client, now)
  -- The hold token whose seats this registration takes is one of the
  -- client's holds already: it does not count twice, or a buyer whose
  -- token was the client's last hold could hold seats and never buy them.
  local own = ARGV[4] ~= '' and tonumber(redis.call('ZSCORE', KEYS[18], ARGV[4]))
  if own and own > now then
    live = live - 1
  end
  if live >= tonumber(ARGV[14]) then
    return {R.CLIENT_LIMIT, tonumber(ARGV[14])}
  end
end

-- checks: order_reserve.lua's (capacity, seats held by the token, discount
-- uses, the buyer's admissions), with its reply codes
local code, maxuses = ARGV[5], tonumber(ARGV[6])
local limited = code ~= '' and maxuses > 0
local limit, adm = tonumber(ARGV[7]), tonumber(ARGV[9])
local refusal, dstale, dk = cart_sale_refusal(fields, qtys, labels, now)
if refusal then
  return refusal
end
-- The hash's fields either kind keeps (its state and the rest are added
-- below).
local exps = string.format('%d', exp)
local kv = cart_sale_fields(rest, labels, code, 'exp', exps, 'gen', gen)
cart_buyer_fields(kv, limit, ARGV[8], adm)
if limited then
  kv[#kv + 1] = 'dmax'
  kv[#kv + 1] = maxuses
end
-- A free registration's settle step gives back a hold of its code and
-- counts a use: on keys no check read when the code is unlimited.
if free then
  cart_check_discount(dk, code, true)
end

-- writes: every key they touch was read or checked above but one, written
-- first (when it fails nothing is written): the paid stream of a free
-- registration, the expiry zset of a held one
local paid, added
if free then
  -- Paid at once, settled as order_confirm.lua and reg_pay.lua settle a
  -- sale (lib/cart cart_settle: the paid stream is its first write): its
  -- claims and its buyer's admissions counted, its seats booked, a use of
  -- its code counted, its hash written paid and kept for the sync worker.
  paid, added = cart_settle(
    {stream = KEYS[15], soldkey = KEYS[3], buyerskey = KEYS[9], bookedkey = KEYS[4], dk = dk, dcusedkey = KEYS[7]},
    {id = id, salekey = reg, ref = '', now = now, cap = ARGV[11], retention = tonumber(ARGV[3]), fields = fields,
     qtys = qtys, seats = labels, code = code, bk = limit > 0 and buyer or nil, adm = adm, counted = false, extra = kv})
else
  -- No expiry on the hash while held: the hash is what gives the claim back.
  redis.call('ZADD', KEYS[14], exps, id)
  for c = 1, nclaims do
    redis.call('HINCRBY', KEYS[3], fields[c], string.format('%d', qtys[c]))
  end
  if limit > 0 then
    redis.call('HINCRBY', KEYS[9], buyer, string.format('%d', adm))
  end
end
-- the pass's reservation leaves resv as its units became sold above
if pass then
  room_drop(room, pass.id, pass.st, pass.qty, pass.exp, pass.bk, 'u')
  redis.call('HINCRBY', room.room, room_f(room, 'used'), 1)
  if pass.rest then
    for _, l in ipairs(pass.rest) do
      redis.call('HDEL', KEYS[5], 's:' .. l)
    end
    seatholds_drop(KEYS[10], pass.mine)
  end
end
-- the seats leave the token that held them
for s = 1, nseats do
  redis.call('HDEL', KEYS[5], 's:' .. labels[s])
  redis.call('HDEL', KEYS[10], labels[s])
  if not free then
    -- No expiry: while held, only reg_expire and reg_pay give the seat
    -- back, so a payment that comes after the window but before the sweep
    -- never finds it taken (the sold counts are held that long too).
    redis.call('HSET', KEYS[12], labels[s], 'o:' .. id)
  end
end

if not free then
  if limited then
    cart_hold_discount(dk, code, id, '+inf', now, dstale)
  end
  redis.call('HSET', KEYS[16], buyer, id)
  kv[#kv + 1] = 'ub'
  kv[#kv + 1] = buyer
  kv[#kv + 1] = 'at' -- us, to tell registrations of one buyer apart (Register)
  kv[#kv + 1] = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
  kv[#kv + 1] = 'cexp'
  kv[#kv + 1] = string.format('%d', now + tonumber(ARGV[12]))
  if client ~= '' then
    redis.call('HINCRBY', KEYS[17], client, '1')
    kv[#kv + 1] = 'iph'
    kv[#kv + 1] = client
  end
  kv[#kv + 1] = 'st'
  kv[#kv + 1] = 'held'
  redis.call('HSET', reg, unpack(kv))
  return {R.OK, exp}
end

-- free: it counts for its client until the register hold's end
if client ~= '' then
  holds_add_token(KEYS[18], 'f:' .. id, exp, now)
end
cart_discount_prune(dk, dstale, now)
return {R.PAID, now, paid, added}
