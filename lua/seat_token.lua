-- seat_token: create a seat hold token, or report the expiry of the live one
-- (a buyer session asks for its token more than once). A token made for a
-- client (a storefront or seat picker buyer, lib/holds) counts for it while
-- it lives, and is refused when the client's registrations awaiting payment
-- and live tokens reach its limit; the token hash keeps the client ('ip')
-- so an extend moves the token's count with its expiry.
--
-- On a seated event with a waiting room the token is made with a pass
-- (ARGV[5]; the caller refuses a storefront call without one): the pass
-- is burnt here, its place holding (lib/room 'h') until the token's
-- expiry, its units reserved as long (the passes zset scores it so, and
-- an admission step lapses it then; the audit says 'held'), and the token keeps the place ('q')
-- and its units ('n'): it holds at most that many seats (seat_hold), and
-- register-guest burns the place with it (reg_register "@hold"). A pass's
-- token is named after the pass (room.Service.PassToken), so a retry finds
-- it (R.EXISTS).
--
-- KEYS[1] -> hold token hash      {pN}:ev:<id>:hold:<token>
-- KEYS[2] -> IP registrations hash {pN}:ev:<id>:ipregs
-- KEYS[3] -> IP tokens zset       {pN}:ev:<id>:iptok:<client> (any name when no client)
-- KEYS[4] -> waiting room hash    {pN}:ev:<id>:room (lib/room; type-checked with a pass)
-- KEYS[5] -> room places hash     {pN}:ev:<id>:room:places
-- KEYS[6] -> room passes zset     {pN}:ev:<id>:room:passes
-- KEYS[7] -> room audit stream    {pN}:ev:<id>:room:audit
--
-- ARGV[1] -> hold TTL ms
-- ARGV[2] -> hold token
-- ARGV[3] -> client key ("" counts no client)
-- ARGV[4] -> the client's limit of holds
-- ARGV[5] -> the waiting room's pass the token burns, "<queue id> <expiry
--            ms>" (roompass.Pass.Arg), or "" for none
--
-- Output:
--   {R.OK, expiresAtMs}      created: first = now, exp = now + TTL
--   {R.EXISTS, expiresAtMs}  the token already exists; nothing changed
--   {R.CLIENT_LIMIT, limit}  the client holds its limit already; nothing created
--   {R.PASS_USED}, {R.PASS_EXPIRED}, {R.PASS_INVALID, 'state'}
--                            the pass is not live and unused (lib/room
--                            room_pass); nothing created
--@include holds
--@include reply
--@include room
local hold = KEYS[1]
local exp = redis.call('HGET', hold, 'exp')
if exp then
  -- a pass's token (the pass names it): answered again while its place
  -- holds, not once a registration burnt it
  if ARGV[5] ~= '' and room_place(redis.call('HGET', KEYS[5], string.match(ARGV[5], '^(%S+)') or '')) == 'u' then
    return {R.PASS_USED}
  end
  return {R.EXISTS, tonumber(exp)}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local e = now + tonumber(ARGV[1])
local client = ARGV[3]
local room, place = nil, nil
if ARGV[5] ~= '' then
  room = {room = KEYS[4], places = KEYS[5], passes = KEYS[6], audit = KEYS[7]}
  local refusal
  place, refusal = room_pass(room, ARGV[5], now)
  if not place then
    return refusal
  end
  room_check(room)
end
if client ~= '' and holds_live(KEYS[2], KEYS[3], client, now) >= tonumber(ARGV[4]) then
  return {R.CLIENT_LIMIT, tonumber(ARGV[4])}
end

-- writes (every key was read above)
local es = string.format('%d', e)
local kv = {'first', string.format('%d', now), 'exp', es}
if client ~= '' then
  holds_add_token(KEYS[3], ARGV[2], e, now)
  kv[#kv + 1] = 'ip'
  kv[#kv + 1] = client
end
if place then
  kv[#kv + 1] = 'q'
  kv[#kv + 1] = place.id
  kv[#kv + 1] = 'n'
  kv[#kv + 1] = place.qty
  -- the pass's units stay reserved while the token lives
  room_put(room.places, place.id, 'h', place.qty, e, place.bk)
  redis.call('ZADD', room.passes, e, place.id)
  room_audit(room, 'held', place.id, 'n', place.qty)
end
redis.call('HSET', hold, unpack(kv))
redis.call('PEXPIREAT', hold, es)
return {R.OK, e}
