-- seat_release: free seats of a hold token. Only seats still held by the
-- token lose their entries in the event's seat holds hash (a seat handed to
-- an order stays with the order); the token hash stays, so the token can
-- hold again until it expires. Releasing all, the script reads the token's
-- seats itself.
--
-- The event's single-seat rule (decisions.md §7) holds for releases too, so
-- a buyer cannot hold three seats and let go of the middle one: a partial
-- release (the token still holds a seat afterwards) is refused when a seat
-- it frees would be left alone between taken seats ('lenient'), or between
-- a taken seat and its row's end ('strict'). A release that leaves the token
-- with nothing is always allowed: it puts back what the hold took. The
-- caller passes the neighbour seats as for seat_hold (same row, within two,
-- not released themselves; a label missing is beyond its row's end).
--
-- KEYS[1]  -> hold token hash  {pN}:ev:<id>:hold:<token>
-- KEYS[2]  -> booked seats hash {pN}:ev:<id>:booked (label -> order id)
-- KEYS[3]  -> seat holds hash  {pN}:ev:<id>:seats
-- KEYS[4]  -> order seats hash {pN}:ev:<id>:ordseats
-- KEYS[5]  -> registration seats hash {pN}:ev:<id>:regseats
--
-- ARGV[1] -> hold token
-- ARGV[2] -> "1" to release all of the token's seats (no labels follow), else "0"
-- ARGV[3] -> n, the number of labels
-- ARGV[4] -> single-seat rule: 'off', 'lenient' or 'strict'
-- ARGV[5..4+n] -> seat labels "<row>-<number>" (distinct)
-- ARGV[5+n..]  -> neighbour seat labels (distinct, none of the labels)
--
-- Output:
--   {R.OK, {labels}}        released (only the seats that were held by the token)
--   {R.STRANDED, {labels}}  the rule refuses: these freed seats would be stranded
--@include reply
--@include seatrule
--@allow-oom
local hold = KEYS[1]
local all = ARGV[2] == '1'
local n = tonumber(ARGV[3])
local rule = ARGV[4]
local holder = 'h:' .. ARGV[1]
local fields = redis.call('HKEYS', hold)
local labels, isLabel = {}, {}
if all then
  for _, f in ipairs(fields) do
    if string.sub(f, 1, 2) == 's:' then
      labels[#labels + 1] = string.sub(f, 3)
    end
  end
  n = #labels
else
  for i = 1, n do
    labels[i] = ARGV[4 + i]
    isLabel[labels[i]] = true
  end
end

local now = seatholds_now()
local k = {seats = KEYS[3], orders = KEYS[4], regs = KEYS[5]}
local cur, stale = seatholds_read(k, labels, now)

local m = #ARGV - 4 - n
if not all and rule ~= 'off' and m > 0 then
  local keeps = false
  for _, f in ipairs(fields) do
    if string.sub(f, 1, 2) == 's:' and not isLabel[string.sub(f, 3)] then
      keeps = true
      break
    end
  end
  if keeps then
    -- taken as lib/seatrule describes it, as it would be after the
    -- release: a released seat is taken only when booked or another's.
    local taken = {}
    local booked = redis.call('HMGET', KEYS[2], unpack(labels))
    for i = 1, n do
      taken[labels[i]] = (booked[i] or (cur[i] and cur[i] ~= holder)) and true or false
    end
    seat_taken_mark(taken, KEYS[2], k, {unpack(ARGV, 5 + n, 4 + n + m)}, now)
    local strict = rule == 'strict'
    local stranded = {}
    for i = 1, n do
      if cur[i] == holder then
        local row, num = seat_split(labels[i])
        if seat_alone(taken, row, num, strict) then
          stranded[#stranded + 1] = labels[i]
        end
      end
    end
    if #stranded > 0 then
      return {R.STRANDED, stranded}
    end
  end
end

-- writes
local released = {}
for i = 1, n do
  if cur[i] == holder then
    released[#released + 1] = labels[i]
  end
  redis.call('HDEL', hold, 's:' .. labels[i])
end
seatholds_drop_stale(stale)
seatholds_drop(KEYS[3], released)
return {R.OK, released}
