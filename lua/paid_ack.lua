-- paid_ack: settle paid-stream entries the sync worker has written to
-- Postgres, all at once: delete them from the stream, acknowledge them, and
-- drop each paid order's record from its hash (Postgres holds it now),
-- giving the hash its retention back (confirm kept it without expiry, so
-- the record could not expire before Postgres had it). One script, so no
-- crash leaves an entry acknowledged but on its stream, or a record gone
-- while its entry is still to be written.
--
-- KEYS[1]  -> paid stream        {pN}:paid
-- KEYS[2..] -> order hashes       {pN}:ord:<orderId>, of the entries' orders
--
-- ARGV[1] -> consumer group
-- ARGV[2] -> retention ms: how long a paid order stays in Redis for replays
-- ARGV[3..] -> entry ids
--
-- Output: {entries deleted, records dropped}
--@allow-oom

-- reads: which orders still carry their record, before any write, as
-- HDEL below would fail on a key that is not a hash after the stream was
-- written (Redis keeps what a script wrote before a command failed)
local rec = {}
for k = 2, #KEYS do
  rec[k] = redis.call('HEXISTS', KEYS[k], 'rec') == 1
end

-- writes, the stream first (its first XDEL fails before anything is
-- written when it is not a stream), the ids in chunks, as unpack has a
-- stack limit
local deleted = 0
local s = 3
while s <= #ARGV do
  local e = math.min(s + 999, #ARGV)
  deleted = deleted + redis.call('XDEL', KEYS[1], unpack(ARGV, s, e))
  redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, s, e))
  s = e + 1
end
local dropped = 0
for k = 2, #KEYS do
  if rec[k] then
    redis.call('HDEL', KEYS[k], 'rec')
    redis.call('PEXPIRE', KEYS[k], ARGV[2])
    dropped = dropped + 1
  end
end
return {deleted, dropped}
