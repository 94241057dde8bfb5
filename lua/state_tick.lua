-- state_tick: read which generation of the Redis state is in force, and
-- while it is live advance its sequence number, so that a node that later
-- reads a lower number knows Redis went back to an older snapshot. A node
-- that found the live generation stale says so here: the state becomes
-- 'stale' for every node and its number stops, so that the checks of the
-- nodes still running never count an old snapshot's number past what
-- Postgres recorded (a node starting later would take it as current). The
-- catalog version rides along: nodes reload the catalog when it moves.
--
-- KEYS[1] -> state hash        {catalog}:state (gen, seq, status)
-- KEYS[2] -> catalog version   {catalog}:version
--
-- ARGV[1] -> a generation the calling node found stale ('' when none)
--
-- Output: {status, gen, seq, catalog version}
--   status is '' when the hash is missing (Redis lost its state), else
--   'live', 'stale' or 'rebuilding'; seq is the value after the increment
--   when live; the version is 0 when unset.
local st = redis.call('HMGET', KEYS[1], 'status', 'gen', 'seq')
local v = tonumber(redis.call('GET', KEYS[2])) or 0
if not st[1] then
  return {'', '', 0, v}
end
local status, gen = st[1], st[2] or ''
local seq = tonumber(st[3]) or 0

-- writes
if status == 'live' and gen ~= '' and gen == ARGV[1] then
  status = 'stale'
  redis.call('HSET', KEYS[1], 'status', status)
elseif status == 'live' then
  seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
end
return {status, gen, seq, v}
