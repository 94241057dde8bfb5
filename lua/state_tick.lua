-- state_tick: read which generation of the Redis state is in force, and
-- while it is live advance its sequence number, so that a node that later
-- reads a lower number knows Redis went back to an older snapshot. The
-- catalog version rides along: nodes reload the catalog when it moves.
--
-- KEYS[1] -> state hash        {catalog}:state (gen, seq, status)
-- KEYS[2] -> catalog version   {catalog}:version
--
-- ARGV: none
--
-- Output: {status, gen, seq, catalog version}
--   status is '' when the hash is missing (Redis lost its state), else
--   'live' or 'rebuilding'; seq is the value after the increment when live;
--   the version is 0 when unset.
local st = redis.call('HMGET', KEYS[1], 'status', 'gen', 'seq')
local v = tonumber(redis.call('GET', KEYS[2])) or 0
if not st[1] then
  return {'', '', 0, v}
end
local seq = tonumber(st[3]) or 0

-- writes
if st[1] == 'live' then
  seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
end
return {st[1], st[2] or '', seq, v}
