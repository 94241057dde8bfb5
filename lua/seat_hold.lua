-- seat_hold: add seats to a hold token, all or nothing. A seat is free when
-- no live hold (lib/seatholds: the seat holds, order seats and
-- registration seats hashes) and is not booked; seats the token already holds are kept. New
-- entries expire with the token (the hash's exp), so a timed-out hold
-- leaves only entries that count as free; the expired entries this hold
-- reads are deleted. The token's expiry is not changed.
--
-- The event's single-seat rule (decisions.md §7) is checked here, so no
-- surface can bypass it: a hold is refused when a free seat next to a newly
-- held seat would be left alone between taken seats ('lenient'), or between
-- a taken seat and its row's end ('strict'). Taken = booked or held (any
-- token, this one included, or an order). Only seats next to newly held
-- seats are looked at: an older stranded seat is not this hold's doing.
-- The caller passes, as neighbour labels, every seat of the same row within
-- two of a requested seat that is not itself requested; a label missing
-- from labels and neighbours is beyond its row's end.
--
-- KEYS[1]  -> hold token hash   {pN}:ev:<id>:hold:<token>
-- KEYS[2]  -> booked seats hash {pN}:ev:<id>:booked (label -> order id)
-- KEYS[3]  -> partition marker  {pN}:live (sales stop while it is missing)
-- KEYS[4]  -> seat holds hash   {pN}:ev:<id>:seats (label -> h:<token> and expiry)
-- KEYS[5]  -> order seats hash  {pN}:ev:<id>:ordseats (label -> o:<orderId> and expiry)
-- KEYS[6]  -> registration seats hash {pN}:ev:<id>:regseats (label -> o:<regId>)
-- KEYS[7]  -> room places hash  {pN}:ev:<id>:room:places (read when ARGV[5] is '1')
--
-- ARGV[1] -> hold token
-- ARGV[2] -> most seats one token may hold
-- ARGV[3] -> n, the number of requested labels
-- ARGV[4] -> single-seat rule: 'off', 'lenient' or 'strict'
-- ARGV[5] -> '1' when the event sells through a waiting room: the token
--            must have been made with a pass (seat_token 'q', 'n') whose
--            place still holds (lib/room 'h': not registered yet), and
--            holds at most its units; '0' otherwise
-- ARGV[6..5+n] -> requested seat labels "<row>-<number>" (distinct)
-- ARGV[6+n..]  -> neighbour seat labels (distinct, none requested)
--
-- Output:
--   {R.OK, expiresAtMs, {labels}}  held; labels = every seat the token now holds
--   {R.HOLD_GONE}                  the token is gone (expired or never created)
--   {R.SEAT_TAKEN, {labels}}       seats booked or held by another token or order
--   {R.TOKEN_LIMIT, max}           the token would hold more than max seats (the
--                                  least of ARGV[2] and its pass's units)
--   {R.PASS_REQUIRED}              ARGV[5] '1' and no pass made the token
--   {R.PASS_USED}                  ARGV[5] '1' and its place made a registration
--   {R.PASS_EXPIRED}               ARGV[5] '1' and its place holds no more (lapsed,
--                                  or gone)
--   {R.STOPPED}                    the partition's marker is missing: Redis lost
--                                  its state or is being rebuilt
--   {R.STRANDED, {labels}}         the rule refuses: these free seats would be
--                                  stranded
--@include reply
--@include room
--@include seatrule
if redis.call('EXISTS', KEYS[3]) == 0 then
  return {R.STOPPED}
end
local hold = KEYS[1]
local h = redis.call('HMGET', hold, 'exp', 'n', 'q')
local exp = h[1]
if not exp then
  return {R.HOLD_GONE}
end
local most = tonumber(ARGV[2])
if ARGV[5] == '1' then
  if not h[2] then
    return {R.PASS_REQUIRED}
  end
  local pst = room_place(redis.call('HGET', KEYS[7], h[3]))
  if pst == 'u' then
    return {R.PASS_USED}
  elseif pst ~= 'h' then
    return {R.PASS_EXPIRED}
  end
  most = math.min(most, tonumber(h[2]))
end

local n = tonumber(ARGV[3])
local rule = ARGV[4]
local labels = {}
for i = 1, n do
  labels[i] = ARGV[5 + i]
end
-- Every seat booked, or booked or held by a registration (entries that do
-- not lapse), is a rush's commonest conflict: that answer needs neither
-- the holds that lapse nor the clock, so those are read last.
local booked = redis.call('HMGET', KEYS[2], unpack(labels))
if seatholds_every(n, booked) then
  return {R.SEAT_TAKEN, labels}
end
local k = {seats = KEYS[4], orders = KEYS[5], regs = KEYS[6]}
local byreg = redis.call('HMGET', k.regs, unpack(labels))
if seatholds_every(n, booked, byreg) then
  return {R.SEAT_TAKEN, labels}
end
local now = seatholds_now()
local holder = 'h:' .. ARGV[1]
local cur, stale = seatholds_read(k, labels, now, byreg)
local conflicts = {}
for i = 1, n do
  if booked[i] or (cur[i] and cur[i] ~= holder) then
    conflicts[#conflicts + 1] = labels[i]
  end
end
if #conflicts > 0 then
  return {R.SEAT_TAKEN, conflicts}
end

local all, mine = {}, {}
for _, f in ipairs(redis.call('HKEYS', hold)) do
  if string.sub(f, 1, 2) == 's:' then
    local l = string.sub(f, 3)
    all[#all + 1] = l
    mine[l] = true
  end
end
for i = 1, n do
  if not mine[labels[i]] then
    all[#all + 1] = labels[i]
  end
end
if #all > most then
  return {R.TOKEN_LIMIT, most}
end

local m = #ARGV - 5 - n
if rule ~= 'off' and m > 0 then
  -- taken as lib/seatrule describes it, as it would be after the hold.
  local taken = {}
  for _, grp in ipairs(seat_taken_mark(taken, KEYS[2], k, {unpack(ARGV, 6 + n, 5 + n + m)}, now)) do
    stale[#stale + 1] = grp
  end
  for i = 1, n do
    taken[labels[i]] = true
  end
  local strict = rule == 'strict'
  local stranded, seen = {}, {}
  for i = 1, n do
    if not cur[i] then -- newly held
      local row, num = seat_split(labels[i])
      for _, s in ipairs({num - 1, num + 1}) do
        local l = row .. '-' .. s
        if taken[l] == false and not seen[l] and seat_alone(taken, row, s, strict) then
          seen[l] = true
          stranded[#stranded + 1] = l
        end
      end
    end
  end
  if #stranded > 0 then
    return {R.STRANDED, stranded}
  end
end

-- writes (the expired entries go first: a requested one is written again)
seatholds_drop_stale(stale)
local new = {}
for i = 1, n do
  if not cur[i] then
    new[#new + 1] = labels[i]
  end
  redis.call('HSET', hold, 's:' .. labels[i], '1')
end
seatholds_put(KEYS[4], new, holder, exp)
return {R.OK, tonumber(exp), all}
