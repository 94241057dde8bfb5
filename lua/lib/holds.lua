-- lib/holds: what one client and one buyer hold without paying
-- (inventory/holds). A script takes it with the line
--   --@include holds
--
-- Per client (a hashed client IP): the registrations awaiting payment it
-- made, a count in the event's IP registrations hash (client -> n), and its
-- live seat hold tokens, in its IP tokens zset (token -> expiry ms). Per
-- buyer (orders.BuyerKey): the one registration awaiting payment, in the
-- event's unpaid hash (buyer -> registration id). The scripts that create
-- a hold add to them; every script that moves a registration out of 'held'
-- takes it out (holds_read, then holds_leave), so the counts are exact and
-- an event with nothing held has none of these keys.

-- holds_live(regs, toks, client, now): the client's registrations awaiting
-- payment plus its hold tokens still live at now. Reads only (each read
-- fails on a key of the wrong type, before a caller's first write).
local function holds_live(regs, toks, client, now)
  return (tonumber(redis.call('HGET', regs, client)) or 0) + redis.call('ZCOUNT', toks, string.format('(%d', now), '+inf')
end

-- holds_add_token(toks, token, exp, now): counts a hold token for its
-- client until exp (ms): the tokens that timed out by now leave, and the
-- zset expires with its last token, so it never outlives them.
local function holds_add_token(toks, token, exp, now)
  redis.call('ZREMRANGEBYSCORE', toks, '-inf', string.format('%d', now))
  redis.call('ZADD', toks, string.format('%d', exp), token)
  local top = redis.call('ZRANGE', toks, '-1', '-1', 'WITHSCORES')
  redis.call('PEXPIREAT', toks, string.format('%d', math.ceil(tonumber(top[2]))))
end

-- holds_read(regs, unpaid, client, buyer): what a registration leaving
-- 'held' reads before its script writes anything: its client's count (a
-- type check) and the registration its buyer's unpaid slot names (returned;
-- nil when none). client and buyer are its 'iph' and 'ub' fields (nil or ''
-- when not counted).
local function holds_read(regs, unpaid, client, buyer)
  if client and client ~= '' then
    redis.call('HGET', regs, client)
  end
  if buyer and buyer ~= '' then
    return redis.call('HGET', unpaid, buyer)
  end
  return nil
end

-- holds_leave(regs, unpaid, id, client, buyer, slot): the registration id
-- no longer awaits payment: its client counts one less, and its buyer's
-- unpaid slot is emptied when it still names id (slot: holds_read's).
local function holds_leave(regs, unpaid, id, client, buyer, slot)
  if client and client ~= '' and redis.call('HINCRBY', regs, client, '-1') <= 0 then
    redis.call('HDEL', regs, client)
  end
  if slot == id then
    redis.call('HDEL', unpaid, buyer)
  end
end
