-- lib/cart: how the scripts that take a cart (order_reserve, reg_register)
-- read and check it, with the same reply codes (lib/reply;
-- orders.RefusalError maps them), how the scripts that settle one
-- (order_confirm, reg_pay, reg_expire, reg_register's free registration)
-- read it back from the order hash, the discount holds and the paid stream
-- entry they share. A script takes it with the line
--   --@include cart
-- which brings lib/capacity, lib/check and lib/reply too (cart_refusal
-- uses capacity_short and R, cart_check_discount check_type), once however
-- many includes name it.

--@include capacity
--@include check
--@include reply
--@include seatholds

-- cart_args(i): the claims and seats in ARGV from index i, as
-- orders.ClaimArgs appends them (C, C field/quantity pairs, S, S labels).
-- Returns fields, qtys, labels and the index after them.
local function cart_args(i)
  local fields, qtys, labels = {}, {}, {}
  local n = tonumber(ARGV[i])
  i = i + 1
  for c = 1, n do
    fields[c] = ARGV[i]
    qtys[c] = tonumber(ARGV[i + 1])
    i = i + 2
  end
  n = tonumber(ARGV[i])
  i = i + 1
  for s = 1, n do
    labels[s] = ARGV[i]
    i = i + 1
  end
  return fields, qtys, labels, i
end

-- cart_of(claims, seats): the claims and seats an order hash keeps in its
-- 'claims' ("field qty ...") and 'seats' ("label ...") fields.
local function cart_of(claims, seats)
  local fields, qtys, labels = {}, {}, {}
  for f, q in string.gmatch(claims or '', '(%S+)%s+(%S+)') do
    fields[#fields + 1] = f
    qtys[#qtys + 1] = tonumber(q)
  end
  for label in string.gmatch(seats or '', '%S+') do
    labels[#labels + 1] = label
  end
  return fields, qtys, labels
end

-- An event's discount holds are two keys of fixed names, so every script
-- that takes, settles or expires a hold declares them whatever the code
-- (keys.Space.DiscountHolds, DiscountHeld):
--   dcholds: zset, one member "<code>\n<orderId>" a hold, scored by its
--            expiry (ms, Redis time) or '+inf' (a registration's);
--   dcheld:  hash, code -> its members in dcholds.
-- A hold counts while its score is ahead of now; an expired member counts
-- in dcheld until a script that met it drops it (cart_discount_prune), so
-- a code's live holds are its dcheld count less its expired members. Both
-- keys expire with the latest hold (never while one is '+inf'), together.

-- cart_discount_member(code, id): id's member in dcholds (order ids have
-- no newline, so the code is what comes before the last one).
local function cart_discount_member(code, id)
  return code .. '\n' .. id
end

-- cart_discount_live(k, code, now): the live holds of code, and every
-- expired member of the event (score up to now) for cart_discount_prune.
-- Reads only.
--   k: dcholds, dcheld
local function cart_discount_live(k, code, now)
  local held = tonumber(redis.call('HGET', k.dcheld, code)) or 0
  local stale = redis.call('ZRANGEBYSCORE', k.dcholds, '-inf', now)
  local prefix = code .. '\n'
  for _, m in ipairs(stale) do
    if string.sub(m, 1, #prefix) == prefix and not string.find(m, '\n', #prefix + 1, true) then
      held = held - 1
    end
  end
  return held, stale
end

-- cart_discount_count(k, code, by): moves code's count in dcheld by by; a
-- count at 0 goes.
local function cart_discount_count(k, code, by)
  if redis.call('HINCRBY', k.dcheld, code, by) <= 0 then
    redis.call('HDEL', k.dcheld, code)
  end
end

-- cart_discount_prune(k, stale, now): drops the expired members
-- cart_discount_live met at now (nil: none read), each off its code's
-- count.
local function cart_discount_prune(k, stale, now)
  if not stale or #stale == 0 then
    return
  end
  for _, m in ipairs(stale) do
    cart_discount_count(k, string.match(m, '^(.*)\n'), -1)
  end
  -- the same members: nothing changed them since the read
  redis.call('ZREMRANGEBYSCORE', k.dcholds, '-inf', now)
end

-- cart_discount_expiry(k): the holds expire with the last of them, so an
-- event whose holds all lapsed leaves nothing behind; never while a hold
-- without end is among them. Both keys have the same expiry: the hash
-- exists exactly while the zset does (every member is counted).
local function cart_discount_expiry(k)
  if redis.call('ZCOUNT', k.dcholds, '+inf', '+inf') > 0 then
    redis.call('PERSIST', k.dcholds)
    redis.call('PERSIST', k.dcheld)
    return
  end
  local top = redis.call('ZRANGE', k.dcholds, -1, -1, 'WITHSCORES')
  if top[2] then
    local at = math.ceil(tonumber(top[2]))
    redis.call('PEXPIREAT', k.dcholds, at)
    redis.call('PEXPIREAT', k.dcheld, at)
  end
end

-- cart_hold_discount(k, code, id, score, now, stale): holds one use of a
-- limited code for id until score (ms, Redis time), or '+inf': a
-- storefront registration's hold never lapses by itself, as the
-- registration may still be paid after its window; only reg_expire or
-- reg_pay give it back. The expired holds cart_refusal met (stale) go.
--   k: dcholds, dcheld
local function cart_hold_discount(k, code, id, score, now, stale)
  cart_discount_prune(k, stale, now)
  if redis.call('ZADD', k.dcholds, score, cart_discount_member(code, id)) == 1 then
    cart_discount_count(k, code, 1)
  end
  if score == '+inf' then
    redis.call('PERSIST', k.dcholds)
    redis.call('PERSIST', k.dcheld)
    return
  end
  -- Only raised, as seatholds_put does: a zset without expiry has a
  -- '+inf' hold (cart_drop_discount keeps that true) or was made by the
  -- ZADD above.
  local at = redis.call('PEXPIRETIME', k.dcholds)
  if at == -1 and redis.call('ZCOUNT', k.dcholds, '+inf', '+inf') > 0 then
    return
  end
  if at < score then
    redis.call('PEXPIREAT', k.dcholds, score)
    redis.call('PEXPIREAT', k.dcheld, score)
  end
end

-- cart_drop_discount(k, code, id): gives id's hold of code back (expired
-- or not; none: nothing). The keys keep their expiry after a hold that
-- lapses goes (at worst they outlive the holds left until that hold's
-- end); after a '+inf' one they take the latest hold left's.
local function cart_drop_discount(k, code, id)
  local m = cart_discount_member(code, id)
  local score = redis.call('ZSCORE', k.dcholds, m)
  if not score then
    return
  end
  redis.call('ZREM', k.dcholds, m)
  cart_discount_count(k, code, -1)
  if score == 'inf' then
    cart_discount_expiry(k)
  end
end

-- cart_discount_refusal(k, code, maxuses, id, now): true when id, which
-- holds no live use of the code (its hold was given back, or taken under
-- an older state), cannot take one now: the paid uses and the live holds
-- of others reach maxuses, as cart_refusal counts them. Reads only.
--   k: dcholds, dcheld, dcused
local function cart_discount_refusal(k, code, maxuses, id, now)
  local mine = redis.call('ZSCORE', k.dcholds, cart_discount_member(code, id))
  if mine and (mine == 'inf' or tonumber(mine) > now) then
    return false
  end
  local used = tonumber(redis.call('HGET', k.dcused, code)) or 0
  return used + cart_discount_live(k, code, now) >= maxuses
end

-- cart_check_discount(k, code, booking): a settling script gives the
-- code's hold back whether it books or not, and counts a use when it
-- books; no check reads those keys, so their types are checked here,
-- before the script's first write (lib/check). Nothing without a code.
--   k: dcholds, dcheld, dcused
local function cart_check_discount(k, code, booking)
  if code ~= '' then
    check_type(k.dcholds, 'zset')
    check_type(k.dcheld, 'hash')
    if booking then
      check_type(k.dcused, 'hash')
    end
  end
end

-- cart_refusal(k, c, now): the checks of a new cart; the first refusal
-- wins: capacity {R.SHORT, field, left}, the hold token gone
-- {R.HOLD_GONE}, seats booked or held by someone else {R.SEAT_TAKEN,
-- labels}, seats the token does not hold {R.SEAT_NOT_HELD, labels}, the
-- discount code used up {R.DISCOUNT_USED_UP}, the buyer's limit
-- {R.BUYER_LIMIT, limit, remaining}. nil when the cart fits, and then,
-- when it checked a limited code, the expired discount holds it met
-- (cart_hold_discount or cart_discount_prune drop them). It writes nothing (a script's
-- checks come before its first write: Redis keeps what a script wrote
-- before a command of it failed), and it reads, with a command that fails
-- on a key of the wrong type, every key the caller writes after it but the
-- order hash and the keys only the caller knows of.
--   k: caps, sold, booked, hold (the token's hash), seats, orders and regs
--      (the event's holds hashes, lib/seatholds; read when the cart has
--      seats), dcholds, dcheld, dcused, buyers
--   c: fields, qtys, labels, holder ('h:<token>'), code, maxuses, limit,
--      buyer, adm
local function cart_refusal(k, c, now)
  local short, left = capacity_short(k.caps, k.sold, c.fields, c.qtys)
  if short then
    return {R.SHORT, c.fields[short], left}
  end
  if #c.labels > 0 then
    -- HLEN, not EXISTS: it also fails on a hold key that is not a hash,
    -- here rather than at the HDEL after the first write
    if redis.call('HLEN', k.hold) == 0 then
      return {R.HOLD_GONE}
    end
    local conflicts, notheld = {}, {}
    local cur = seatholds_read(k, c.labels, now)
    for s = 1, #c.labels do
      local v = cur[s]
      if redis.call('HEXISTS', k.booked, c.labels[s]) == 1 or (v and v ~= c.holder) then
        conflicts[#conflicts + 1] = c.labels[s]
      elseif not v then
        notheld[#notheld + 1] = c.labels[s]
      end
    end
    if #conflicts > 0 then
      return {R.SEAT_TAKEN, conflicts}
    end
    if #notheld > 0 then
      return {R.SEAT_NOT_HELD, notheld}
    end
  end
  -- paid uses + uses held by live pending orders and registrations (the
  -- expired holds read here are dropped by cart_hold_discount, a write)
  local dstale = nil
  if c.code ~= '' and c.maxuses > 0 then
    local used = tonumber(redis.call('HGET', k.dcused, c.code)) or 0
    local live
    live, dstale = cart_discount_live(k, c.code, now)
    if used + live >= c.maxuses then
      return {R.DISCOUNT_USED_UP}
    end
  end
  if c.limit > 0 then
    local have = tonumber(redis.call('HGET', k.buyers, c.buyer)) or 0
    if have + c.adm > c.limit then
      return {R.BUYER_LIMIT, c.limit, c.limit - have}
    end
  end
  return nil, dstale
end

-- A new sale's keys and arguments: order_reserve and reg_register (a
-- partner order, a storefront registration) take the same first thirteen
-- KEYS (orders.Service.SaleKeys builds them; order_reserve only the first
-- eight for a cart without seats, code or buyer limit, as cart_refusal
-- reads none of the others then) and nine ARGV, then their own:
--   KEYS[1] the sale's hash, [2] caps, [3] sold, [4] booked, [5] the hold
--   token's hash, [6] dcholds, [7] dcused, [8] the partition's marker,
--   [9] buyers, [10] seats, [11] ordseats, [12] regseats, [13] dcheld
--   ARGV[1] the sale's id, [2] its hold ms, [3] retention ms, [4] the hold
--   token, [5] the discount code, [6] its max uses, [7] max admissions per
--   buyer, [8] the buyer key, [9] the sale's admissions
-- cart_sale_refusal(fields, qtys, labels, now): cart_refusal of such a
-- sale's cart, and the discount keys (k of cart_hold_discount).
local function cart_sale_refusal(fields, qtys, labels, now)
  local dk = {dcholds = KEYS[6], dcheld = KEYS[13], dcused = KEYS[7]}
  local refusal, dstale = cart_refusal(
    {caps = KEYS[2], sold = KEYS[3], booked = KEYS[4], hold = KEYS[5], seats = KEYS[10], orders = KEYS[11], regs = KEYS[12],
     dcholds = dk.dcholds, dcheld = dk.dcheld, dcused = dk.dcused, buyers = KEYS[9]},
    {fields = fields, qtys = qtys, labels = labels, holder = 'h:' .. ARGV[4], code = ARGV[5],
     maxuses = tonumber(ARGV[6]), limit = tonumber(ARGV[7]), buyer = ARGV[8], adm = tonumber(ARGV[9])}, now)
  return refusal, dstale, dk
end

-- cart_buyer_fields(kv, limit, buyer, adm): appends to kv the buyer key, the
-- cart's admissions and the limit (bk, adm, lim) when the event has a
-- limit, for the settling script's check.
local function cart_buyer_fields(kv, limit, buyer, adm)
  if limit > 0 then
    kv[#kv + 1] = 'bk'
    kv[#kv + 1] = buyer
    kv[#kv + 1] = 'adm'
    kv[#kv + 1] = adm
    kv[#kv + 1] = 'lim'
    kv[#kv + 1] = limit
  end
end

-- cart_sale_fields(i, labels, code, f1, v1, f2, v2): a new sale hash's
-- fields, to HSET: the caller's two (f1 = v1, f2 = v2), then total, ch,
-- by, claims, tix and rec, whose values the caller sends in ARGV from i in
-- that order (orders.SaleFieldArgs: the names are not sent, as each
-- argument costs Redis a string and a table slot), then seats (the cart's
-- labels) and dc (its code) when not empty: every reader takes a missing
-- one as empty. One table constructor: a table grown field by field is
-- rehashed as it doubles.
local function cart_sale_fields(i, labels, code, f1, v1, f2, v2)
  local kv = {f1, v1, f2, v2, 'total', ARGV[i], 'ch', ARGV[i + 1], 'by', ARGV[i + 2], 'claims', ARGV[i + 3],
    'tix', ARGV[i + 4], 'rec', ARGV[i + 5]}
  if #labels > 0 then
    kv[17], kv[18] = 'seats', table.concat(labels, ' ')
  end
  if code ~= '' then
    local n = #kv
    kv[n + 1], kv[n + 2] = 'dc', code
  end
  return kv
end

-- cart_queue_paid(stream, cap, id, ref, now): queues the paid order id on
-- its partition's paid stream, paid at now (ms, as '%d' text). The entry
-- names the order; its record and tickets stay in the hash (written once,
-- not copied: a durable Redis writes every byte to its append-only file),
-- and cart_keep_paid says for how long. cap is ARGV's stream cap: '0' when a worker drains the stream;
-- else the stream keeps about cap entries. No check reads the stream, so
-- the settling scripts make this their first write: when it fails (the
-- key is not a stream) nothing is written.
local function cart_queue_paid(stream, cap, id, ref, now)
  if cap == '0' then
    redis.call('XADD', stream, '*', 'order', id, 'ref', ref, 'paidAt', now)
  else
    redis.call('XADD', stream, 'MAXLEN', '~', cap, '*', 'order', id, 'ref', ref, 'paidAt', now)
  end
end

-- cart_paid_count(soldkey): the sold hash's 'paid' field (0 when none), for
-- a duplicate reply, which reports it as the paid reply does.
local function cart_paid_count(soldkey)
  return tonumber(redis.call('HGET', soldkey, 'paid')) or 0
end

-- cart_count_paid(soldkey, fields, qtys): adds a settled order's admissions
-- (its 'ev' claim) to the sold hash's 'paid' field and returns the field's
-- new value and the admissions added (the units (new-added, new] are this
-- order's: a node that sees one handed out twice knows Redis went back).
-- 'paid' counts the event's units ever paid (refunded ones too): only ever
-- raised, and written back by a rebuild as the units it found
-- paid, so every value a script returns is comparable with the record
-- (nodes keep the highest as the event's sold mark, decisions.md). No
-- capacity is kept on it: it is not a claim. The caller checked the sold
-- hash's type before its first write.
local function cart_count_paid(soldkey, fields, qtys)
  for c = 1, #fields do
    if fields[c] == 'ev' then
      return redis.call('HINCRBY', soldkey, 'paid', string.format('%d', qtys[c])), qtys[c]
    end
  end
  return cart_paid_count(soldkey), 0
end

-- cart_keep_paid(hash, cap, retention): a paid order's hash stays without
-- expiry until the sync worker has written it to Postgres (paid_ack.lua
-- then drops the record and sets the retention) when cap is '0'; else
-- nothing will read the record: it goes and, when retention (ms) is given,
-- the hash expires after it (else it keeps the expiry it has).
local function cart_keep_paid(hash, cap, retention)
  if cap == '0' then
    redis.call('PERSIST', hash)
    return
  end
  redis.call('HDEL', hash, 'rec')
  if retention then
    redis.call('PEXPIRE', hash, retention)
  end
end

-- cart_settle(k, s): the writes that mark a sale paid, after its script's
-- checks, for a partner's confirm (order_confirm.lua), a processor's
-- payment (reg_pay.lua) and a free registration (reg_register.lua) alike:
-- queued on its partition's paid stream first (no check reads the stream:
-- when it is not one, this first write fails and nothing is written), its
-- claims and its buyer's admissions counted
-- unless they were when it was held (s.counted), its seats booked, its
-- discount hold made a use, its hash marked paid (and s.extra's fields)
-- and kept for the sync worker (cart_keep_paid). It returns the event's
-- paid units and the units this sale added (cart_count_paid).
-- k: stream (paid), soldkey, buyerskey, bookedkey, dk (the discount keys
--    of cart_drop_discount), dcusedkey
-- s: id, salekey (its hash), ref, now, cap, retention, fields, qtys, seats, code, bk
--    (nil: no buyer limit), adm, counted, extra (nil or field, value, ...)
local function cart_settle(k, s)
  local nows = string.format('%d', s.now)
  cart_queue_paid(k.stream, s.cap, s.id, s.ref, nows)
  if not s.counted then
    for c = 1, #s.fields do
      redis.call('HINCRBY', k.soldkey, s.fields[c], string.format('%d', s.qtys[c]))
    end
    if s.bk then
      redis.call('HINCRBY', k.buyerskey, s.bk, string.format('%d', s.adm))
    end
  end
  for i = 1, #s.seats do
    redis.call('HSET', k.bookedkey, s.seats[i], s.id)
  end
  if s.code ~= '' then
    cart_drop_discount(k.dk, s.code, s.id)
    redis.call('HINCRBY', k.dcusedkey, s.code, '1')
  end
  redis.call('HSET', s.salekey, 'st', 'paid', 'ref', s.ref, 'paid', nows, unpack(s.extra or {}))
  cart_keep_paid(s.salekey, s.cap, s.retention)
  return cart_count_paid(k.soldkey, s.fields, s.qtys)
end
