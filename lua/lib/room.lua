-- lib/room: an event's waiting room (inventory/room, keys.Space Room*):
-- its places, and the admission step the scripts that read the room for
-- a waiter run (room_admit). A script takes it with the line
--   --@include room
-- which brings lib/check too.
--
-- A place is one field of the places hash, "<state> <qty> <passExp> <bk>":
--   state: w waiting (in the line), a admitted (a live pass until passExp,
--          Redis ms), h holding (on a seated event, its pass made a hold
--          token: its units stay reserved until passExp, the token's
--          expiry), u used (its pass, or its hold token, became a
--          registration), x lapsed (its pass, or its hold token, expired
--          unused), l left;
--   qty:   the units it asked for, or, once admitted, the units its pass
--          reserves;
--   bk:    the buyer key (orders.BuyerKey) of the e-mail it joined with: a
--          pass buys for that buyer alone.
-- The room hash (one an event, for every room it has: a multi-showing
-- event has a room per showing, whose fields end in ':<showing>', k.sfx,
-- room_f) keeps seq (arrivals), resv (units reserved by live
-- passes), wn and wq (places waiting and their units), admitted, used and
-- lapsed (passes so far), lv (places that left the line waiting), first
-- (Redis ms of the first pass) and stock (catalog Room.Spec, as the last
-- admission step had it: reg_pay reads it).
--
-- Admission never passes the stock: resv never exceeds room_free (the
-- room's stock less the storefront's sold count 'sf', and no more than the
-- event's stock less every sale and what the partners' allocations may
-- still sell) after a step that admits: a pass is given only for units
-- left over after the sold counts, which hold every registration awaiting
-- payment, and the other live passes. A pass's units leave resv only as
-- they become sold (reg_register, in the step that burns the pass) or when
-- it lapses or its holder leaves; a hold token a pass made (seat_token)
-- keeps them while it lives.

--@include capacity
--@include check
--@include reply

-- room_f(k, name): the room's field name in the room hash: name, then
-- k.sfx ('' for an event's room, ':<showing>' for a showing's:
-- keys.RoomFields).
local function room_f(k, name)
  return name .. (k.sfx or '')
end

-- room_sale_sfx(fields): the suffix of the room a sale with these claim
-- fields is admitted by (room_f): a sale of a showing ('sh:<showing>')
-- is its showing's room's (the rooms of a multi-showing event are its
-- showings'), else the event's ('').
local function room_sale_sfx(fields)
  for _, f in ipairs(fields) do
    local sh = string.match(f, '^' .. CAPACITY_SHOWING .. ':(.+)$')
    if sh then
      return ':' .. sh
    end
  end
  return ''
end

-- room_place(v): the state, units, pass expiry and buyer key of a place's
-- value (nil: no such place).
local function room_place(v)
  if not v then
    return nil
  end
  local st, qty, exp, bk = string.match(v, '^(%a) (%d+) (%d+) (%S*)$')
  return st, tonumber(qty), tonumber(exp), bk
end

-- room_put(places, id, st, qty, exp, bk): writes a place.
local function room_put(places, id, st, qty, exp, bk)
  redis.call('HSET', places, id, st .. ' ' .. qty .. ' ' .. exp .. ' ' .. bk)
end

-- room_audit(k, what, id, ...): one entry of the room's audit stream
-- (keys.Space RoomAudit): e = what ('admitted', 'held', 'used', 'lapsed',
-- 'left', 'key'), q = the place, then the field, value pairs given. About the
-- last million entries are kept.
local function room_audit(k, what, id, ...)
  redis.call('XADD', k.audit, 'MAXLEN', '~', 1000000, '*', 'e', what, 'q', id, ...)
end

-- room_check(k): the type checks of the room's keys, for a script's
-- checks before its first write.
--   k: room, places, audit, and who, line, passes when the script has them
local function room_check(k)
  check_type(k.room, 'hash')
  check_type(k.places, 'hash')
  check_type(k.audit, 'stream')
  if k.who then
    check_type(k.who, 'hash')
  end
  if k.line then
    check_type(k.line, 'zset')
  end
  if k.passes then
    check_type(k.passes, 'zset')
  end
end

-- room_free(soldkey, spec): the units the room may still promise, before
-- what its live passes hold. spec is catalog Room.Spec: "<stock>[/<sold
-- field>] <event stock> [<channel field> <allocation>]..." (a bare
-- "<stock>", as an older node wrote it, counts the storefront alone). The
-- least of the room's stock less what its sold field counts (a showing's
-- room: 'sh:<showing>'; else the storefront's, 'sf'), and the event's
-- stock less every sale ('ev') and what the listed channels may still
-- sell of their allocations: the second holds when 'sf' does not count a
-- sale the event did (sold before the shares were counted, units a
-- rebuild kept as lost, a channel taken out of the event after it sold).
-- Reads only.
local function room_free(soldkey, spec)
  local w = {}
  for x in string.gmatch(spec, '%S+') do
    w[#w + 1] = x
  end
  local stock, field = string.match(w[1], '^(%d+)/?(%S*)$')
  if field == '' then
    field = CAPACITY_STOREFRONT
  end
  local fields = {field, 'ev'}
  for i = 3, #w, 2 do
    fields[#fields + 1] = w[i]
  end
  local sold = redis.call('HMGET', soldkey, unpack(fields))
  local free = tonumber(stock) - (tonumber(sold[1]) or 0)
  if w[2] then
    local rest = tonumber(w[2]) - (tonumber(sold[2]) or 0)
    for i = 3, #w, 2 do
      rest = rest - math.max(0, tonumber(w[i + 1]) - (tonumber(sold[2 + (i - 1) / 2]) or 0))
    end
    free = math.min(free, rest)
  end
  return free
end

-- room_read(k): the room hash's figures, read once by a script that runs
-- the admission step (room_admit keeps them current as it writes, so the
-- answer needs no second read): resv, seq, wn, wq, admitted, first, used,
-- lapsed, lv as numbers (0 when unset), stock and shown as stored (false
-- when unset).
local function room_read(k)
  local v = redis.call('HMGET', k.room, room_f(k, 'resv'), room_f(k, 'seq'), room_f(k, 'wn'), room_f(k, 'wq'),
    room_f(k, 'admitted'), room_f(k, 'first'), room_f(k, 'used'), room_f(k, 'lapsed'), room_f(k, 'stock'),
    room_f(k, 'shown'), room_f(k, 'lv'))
  return {resv = tonumber(v[1]) or 0, seq = tonumber(v[2]) or 0, wn = tonumber(v[3]) or 0, wq = tonumber(v[4]) or 0,
    admitted = tonumber(v[5]) or 0, first = tonumber(v[6]) or 0, used = tonumber(v[7]) or 0,
    lapsed = tonumber(v[8]) or 0, stock = v[9], shown = v[10], lv = tonumber(v[11]) or 0}
end

-- room_writing(k): called before each write of the admission step: the
-- first call type-checks the room's keys (room_check) unless the script
-- did (k.checked), so a step that writes nothing (most polls) pays no TYPE
-- call, and one that writes fails before its first write on a key of
-- another type.
local function room_writing(k)
  if not k.checked then
    room_check(k)
    k.checked = true
  end
end

-- room_admit(k, now, ttl, t0, limit, spec, r): the admission step. Passes
-- that lapsed by now give their units back; then, from T0 (t0, Redis ms)
-- on, the head of the line is admitted while the units it asked for are
-- left (room_free of spec, less resv), at most limit places a call. A head
-- that asks for more than is left waits while live passes may give units
-- back; when none may, it is admitted for what is left (it is not skipped:
-- the line keeps its order). r is room_read's figures, kept current here
-- and written back in one HSET when they changed. Returns the units left
-- after the step and whether it changed any place.
--   k: room, line, places, passes, soldkey, audit (room_writing checks
--      them before the step's first write)
local function room_admit(k, now, ttl, t0, limit, spec, r)
  local admitted = r.admitted
  local free = room_free(k.soldkey, spec)
  local lapsed = redis.call('ZRANGEBYSCORE', k.passes, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(lapsed) do
    local st, qty, exp, bk = room_place(redis.call('HGET', k.places, id))
    room_writing(k)
    if st == 'a' or st == 'h' then
      r.resv = r.resv - qty
      room_put(k.places, id, 'x', qty, exp, bk)
      r.lapsed = r.lapsed + 1
      room_audit(k, 'lapsed', id, 'n', qty)
    end
    redis.call('ZREM', k.passes, id)
  end
  local left = free - r.resv
  -- nothing is left to give (the usual poll while passes are out): the
  -- line is not read
  if now >= t0 and left > 0 then
    for _ = 1, limit do
      local top = redis.call('ZRANGE', k.line, 0, 0, 'WITHSCORES')
      local head = top[1]
      if not head then
        break
      end
      local st, want, _, bk = room_place(redis.call('HGET', k.places, head))
      if st ~= 'w' then
        -- a line entry without a waiting place (none is made so): it goes
        room_writing(k)
        redis.call('ZREM', k.line, head)
      else
        local qty = want
        if qty > left then
          if r.resv > 0 or left <= 0 then
            break
          end
          qty = left
        end
        room_writing(k)
        local exp = now + ttl
        redis.call('ZREM', k.line, head)
        r.wn = r.wn - 1
        r.wq = r.wq - want
        room_put(k.places, head, 'a', qty, exp, bk)
        redis.call('ZADD', k.passes, exp, head)
        r.admitted = r.admitted + 1
        if r.first == 0 then
          r.first = now
        end
        room_audit(k, 'admitted', head, 'n', qty, 'rank', top[2])
        r.resv = r.resv + qty
        left = left - qty
      end
    end
  end
  -- the figures move only with a lapse or an admission
  local changed = #lapsed > 0 or r.admitted ~= admitted
  if changed then
    room_writing(k)
    redis.call('HSET', k.room, room_f(k, 'resv'), r.resv, room_f(k, 'wn'), r.wn, room_f(k, 'wq'), r.wq,
      room_f(k, 'admitted'), r.admitted, room_f(k, 'first'), r.first, room_f(k, 'lapsed'), r.lapsed)
  end
  -- the stock as the catalog says it now, for reg_pay: a late payment
  -- takes back only units no live pass holds
  if r.stock ~= spec then
    room_writing(k)
    redis.call('HSET', k.room, room_f(k, 'stock'), spec)
    r.stock = spec
  end
  return left, changed
end

-- room_drop(k, id, st, qty, exp, bk, to): takes a waiting, admitted or
-- holding place out of the line or its pass out of resv, and marks it to
-- ('l' left, 'u' used), in the audit too.
local function room_drop(k, id, st, qty, exp, bk, to)
  if to == 'u' then
    room_audit(k, 'used', id, 'n', qty)
  else
    room_audit(k, 'left', id, 'was', st)
  end
  if st == 'w' then
    redis.call('ZREM', k.line, id)
    redis.call('HINCRBY', k.room, room_f(k, 'wn'), -1)
    redis.call('HINCRBY', k.room, room_f(k, 'wq'), -qty)
    redis.call('HINCRBY', k.room, room_f(k, 'lv'), 1) -- room_frontier: the head may have changed
  elseif st == 'a' or st == 'h' then
    redis.call('ZREM', k.passes, id)
    redis.call('HINCRBY', k.room, room_f(k, 'resv'), -qty)
  end
  room_put(k.places, id, to, qty, exp, bk)
end

-- room_pass(k, arg, now): the admitted place of a pass the caller burns,
-- arg being "<queue id> <expiry ms>" (roompass.Pass.Arg): the pass must
-- be the place's live one (given with that expiry: an older pass of a
-- place admitted again is lapsed). Returns the place {id, qty, exp, bk},
-- or nil and the refusal: {R.PASS_USED} (it made a registration or a hold
-- token), {R.PASS_EXPIRED} (lapsed, or its holder left), {R.PASS_INVALID,
-- 'state'} (no such admission). Reads only.
--   k: places
local function room_pass(k, arg, now)
  local qid, passexp = string.match(arg, '^(%S+) (%d+)$')
  if not qid then
    return nil, {R.PASS_INVALID, 'state'}
  end
  local st, qty, exp, bk = room_place(redis.call('HGET', k.places, qid))
  if st == 'u' or st == 'h' then
    return nil, {R.PASS_USED}
  end
  if st == 'x' or st == 'l' or (st == 'a' and (exp <= now or exp ~= tonumber(passexp))) then
    return nil, {R.PASS_EXPIRED}
  end
  if st ~= 'a' then
    return nil, {R.PASS_INVALID, 'state'}
  end
  return {id = qid, qty = qty, exp = exp, bk = bk}
end

-- room_place_reading(k, id, st, qty, exp, bk, rank, ahead): what a buyer
-- is told of place id (its state, units, pass expiry and buyer key st,
-- qty, exp, bk, as it is after the script's writes) after room_admit's
-- step; room_figures has what every waiter is told of the room
-- (inventory/room parses both):
--   state, qty, passExp, ahead, bk, rank
-- ahead: places before it in the line (-1 when it is not waiting); rank:
-- its score in the line ('' when not waiting; read from the line when rank
-- is nil); ahead, when not nil, is its places ahead as the caller knows
-- them (a place it just put at the back of the line: no ZRANK).
local function room_place_reading(k, id, st, qty, exp, bk, rank, ahead)
  if st == 'w' then
    ahead = ahead or redis.call('ZRANK', k.line, id) or -1
    rank = rank or redis.call('ZSCORE', k.line, id) or ''
  else
    ahead, rank = -1, ''
  end
  return {st, qty, exp, ahead, bk, rank}
end

-- room_figures(now, left, r): what every waiter is told of the room after
-- room_admit's step, r being room_read's figures as the step left them:
--   waiting, waitingUnits, left, resv, now, admitted, first, used, lapsed
-- waiting, waitingUnits: the line's places and units; left: units neither
-- sold nor reserved; resv: units reserved by live passes; now: Redis ms;
-- admitted, used, lapsed: passes given, that made a registration, that
-- expired unused, so far; first: Redis ms of the first pass (0: none yet).
local function room_figures(now, left, r)
  return {r.wn, r.wq, left, r.resv, now, r.admitted, r.first, r.used, r.lapsed}
end

-- room_frontier(k, now, left, r, samples, near, prev): the room as every
-- node keeps it in memory to answer the polls of waiters (inventory/room
-- frontier), r being room_read's figures after the step:
--   waiting, waitingUnits, left, resv, now, admitted, first, used,
--   lapsed, lv, step, n, the ids of the line's first n places in order,
--   then the scores of the line at positions 0, step, 2 step, ... and its
--   last
-- n is at most near (the head, which a node answers exactly); step spreads
-- at most samples scores over the line; samples 0 reads none (step 0).
-- prev is the head the node read last, "<n> <first id> <last id> <lv>"
-- ("": none). When the head is still that one, n is -1 and no id is
-- listed: listing it is most of a tick's cost, and most ticks of a sale
-- find the head as it was (the line moves when stock comes back). It is
-- the same when its first place is, its last has n - 1 before it (no place
-- came in or went out between them, unless as many came as went, which
-- only a leave can make: lv counts the leaves), no place left the line
-- since, and, when it listed fewer than near, the line has no more.
local function room_frontier(k, now, left, r, samples, near, prev)
  local wn = redis.call('ZCARD', k.line)
  local step = 0
  if samples > 0 then
    step = math.max(1, math.ceil(wn / samples))
  end
  local head = {}
  local n, first, last, lv = string.match(prev, '^(%d+) (%S*) (%S*) (%d+)$')
  n = tonumber(n)
  local same = n ~= nil and tonumber(lv) == r.lv and (n >= near or wn == n)
  if same and n > 0 then
    same = redis.call('ZRANGE', k.line, 0, 0)[1] == first and redis.call('ZRANK', k.line, last) == n - 1
  end
  local out
  if same then
    out = {wn, r.wq, left, r.resv, now, r.admitted, r.first, r.used, r.lapsed, r.lv, step, -1}
  else
    if near > 0 and wn > 0 then
      head = redis.call('ZRANGE', k.line, 0, near - 1)
    end
    out = {wn, r.wq, left, r.resv, now, r.admitted, r.first, r.used, r.lapsed, r.lv, step, #head}
    for _, id in ipairs(head) do
      out[#out + 1] = id
    end
  end
  if step == 0 then
    return out
  end
  for pos = 0, wn - 1, step do
    out[#out + 1] = redis.call('ZRANGE', k.line, pos, pos, 'WITHSCORES')[2]
  end
  if wn > 0 and (wn - 1) % step ~= 0 then
    out[#out + 1] = redis.call('ZRANGE', k.line, -1, -1, 'WITHSCORES')[2]
  end
  return out
end

-- room_answer(code, head, reading): {code, head..., reading...}.
local function room_answer(code, head, reading)
  local out = {code}
  for _, v in ipairs(head) do
    out[#out + 1] = v
  end
  for _, v in ipairs(reading) do
    out[#out + 1] = v
  end
  return out
end
