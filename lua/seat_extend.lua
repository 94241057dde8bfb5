-- seat_extend: push a hold token's expiry to now + TTL, never beyond
-- first + max TTL, on the token hash, on every seat it still holds (its
-- entries in the event's seat holds hash, lib/seatholds) and, for a token
-- counted for a client (seat_token), on its score in the client's IP
-- tokens zset, so the token counts exactly as long as it lives. The script
-- reads the token's seats itself, so the caller declares the same keys
-- whatever the token holds. The caller names the client it serves; a token
-- counted for another client (its buyer's address changed) is extended,
-- but its count keeps its old expiry: that client's zset is not declared.
-- A token a waiting room's pass made ('q', seat_token) moves its place's
-- reservation with it (lib/room 'h': the place's pass expiry and its score
-- in the passes zset), so the units stay reserved exactly while it lives.
--
-- KEYS[1]  -> hold token hash  {pN}:ev:<id>:hold:<token>
-- KEYS[2]  -> IP tokens zset   {pN}:ev:<id>:iptok:<client> (any name when no client)
-- KEYS[3]  -> seat holds hash  {pN}:ev:<id>:seats
-- KEYS[4]  -> room places hash {pN}:ev:<id>:room:places (a pass's token: its place's expiry moves)
-- KEYS[5]  -> room passes zset {pN}:ev:<id>:room:passes
--
-- ARGV[1] -> hold token
-- ARGV[2] -> hold TTL ms
-- ARGV[3] -> max TTL ms, counted from the token's creation
-- ARGV[4] -> the caller's client (holds.Client key; "" none)
--
-- Output:
--   {R.OK, expiresAtMs}  extended
--   {R.HOLD_GONE}        the token is gone (expired or never created)
--@include holds
--@include reply
--@include room
--@include seatholds
local hold = KEYS[1]
local h = redis.call('HMGET', hold, 'first', 'exp', 'ip', 'q')
if not h[2] then
  return {R.HOLD_GONE}
end
local client = h[3] or ''
local counted = client ~= '' and client == ARGV[4]

local labels = {}
for _, f in ipairs(redis.call('HKEYS', hold)) do
  if string.sub(f, 1, 2) == 's:' then
    labels[#labels + 1] = string.sub(f, 3)
  end
end

local now = seatholds_now()
local first = tonumber(h[1]) or now
local e = math.min(now + tonumber(ARGV[2]), first + tonumber(ARGV[3]))

-- the seats the token still holds, read before the first write: a read
-- that failed on a key of the wrong type after it would leave the token
-- extended without its seats; the client's zset too
local holder = 'h:' .. ARGV[1]
local cur = seatholds_read({seats = KEYS[3]}, labels, now)
if counted then
  redis.call('ZSCORE', KEYS[2], ARGV[1])
end
local pst, pqty, _, pbk = nil, nil, nil, nil
if h[4] then
  pst, pqty, _, pbk = room_place(redis.call('HGET', KEYS[4], h[4]))
  check_type(KEYS[5], 'zset')
end

-- writes
local es = string.format('%d', e)
redis.call('HSET', hold, 'exp', es)
redis.call('PEXPIREAT', hold, es)
local mine = {}
for i = 1, #labels do
  if cur[i] == holder then
    mine[#mine + 1] = labels[i]
  end
end
seatholds_put(KEYS[3], mine, holder, es)
if counted then
  holds_add_token(KEYS[2], ARGV[1], e, now)
end
if pst == 'h' then
  room_put(KEYS[4], h[4], 'h', pqty, e, pbk)
  redis.call('ZADD', KEYS[5], e, h[4])
end
return {R.OK, e}
