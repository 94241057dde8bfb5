-- paid_ack: settle paid-stream entries the sync worker has written to
-- Postgres, all at once: acknowledge them, take them off the stream, and
-- drop each paid order's record from its hash (Postgres holds it now),
-- giving the hash its retention back (confirm kept it without expiry, so
-- the record could not expire before Postgres had it). One script, so no
-- crash leaves an entry acknowledged but on its stream, or a record gone
-- while its entry is still to be written.
--
-- Off the stream by trimming: XDEL rewrites an entry's listpack node for
-- each id (about 5 us an entry: 1,024 ids took 5 ms), while XTRIM MINID
-- frees whole nodes (27 us for the same 1,024). Everything below the
-- group's first entry still to be written goes: its oldest pending entry
-- (read by some worker, not yet acknowledged) or, with none pending, the
-- first entry no worker has read. What this batch acknowledged at or
-- above that floor (another worker still holds an older entry, or the ids
-- were read before the group was made again) is deleted by id, so the
-- stream holds exactly the entries not yet written, as before. A stream
-- whose group is gone (Redis lost it: the worker recreates it) has its
-- entries deleted by id.
--
-- KEYS[1]  -> paid stream        {pN}:paid
-- KEYS[2..] -> order hashes       {pN}:ord:<orderId>, of the entries' orders
--
-- ARGV[1] -> consumer group
-- ARGV[2] -> retention ms: how long a paid order stays in Redis for replays
-- ARGV[3..] -> entry ids
--
-- Output: {entries taken off the stream, records dropped, of those
--          entries the ones deleted by id}
--@allow-oom

-- reads: the group's last delivered entry (a stream that is not one
-- fails here, before any write), and which orders still carry their
-- record, as HDEL below would fail on a key that is not a hash after the
-- stream was written (Redis keeps what a script wrote before a command
-- failed)
local last = nil
if redis.call('EXISTS', KEYS[1]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local name, delivered = nil, nil
    for i = 1, #g, 2 do
      if g[i] == 'name' then
        name = g[i + 1]
      elseif g[i] == 'last-delivered-id' then
        delivered = g[i + 1]
      end
    end
    if name == ARGV[1] then
      last = delivered
    end
  end
end
local rec = {}
for k = 2, #KEYS do
  rec[k] = redis.call('HEXISTS', KEYS[k], 'rec') == 1
end

-- stream_id(id): an entry id "<ms>-<seq>" as its two numbers.
local function stream_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

-- writes, the stream first; the ids in chunks, as unpack has a stack
-- limit
local function each_chunk(ids, fn)
  local s = 1
  while s <= #ids do
    local e = math.min(s + 999, #ids)
    fn(unpack(ids, s, e))
    s = e + 1
  end
end
local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = ARGV[i]
end
local deleted, byid = 0, 0
if last then
  local acked = 0
  each_chunk(ids, function(...) acked = acked + redis.call('XACK', KEYS[1], ARGV[1], ...) end)
  -- the floor: the oldest pending entry, else the one after the last read
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1])
  local floor = pending[2]
  if pending[1] == 0 then
    local ms, seq = stream_id(last)
    floor = string.format('%d-%d', ms, seq + 1)
  end
  deleted = redis.call('XTRIM', KEYS[1], 'MINID', floor)
  if pending[1] > 0 or acked < #ids then
    -- ids are "<ms>-<seq>": compared as numbers, part by part (with
    -- nothing pending and every id acknowledged, each was delivered, so
    -- lies below the floor)
    local fms, fseq = stream_id(floor)
    local kept = {}
    for _, id in ipairs(ids) do
      local ms, seq = stream_id(id)
      if ms > fms or (ms == fms and seq >= fseq) then
        kept[#kept + 1] = id
      end
    end
    each_chunk(kept, function(...) byid = byid + redis.call('XDEL', KEYS[1], ...) end)
  end
else
  each_chunk(ids, function(...)
    byid = byid + redis.call('XDEL', KEYS[1], ...)
    redis.call('XACK', KEYS[1], ARGV[1], ...)
  end)
end
deleted = deleted + byid
local dropped = 0
for k = 2, #KEYS do
  if rec[k] then
    redis.call('HDEL', KEYS[k], 'rec')
    redis.call('PEXPIRE', KEYS[k], ARGV[2])
    dropped = dropped + 1
  end
end
return {deleted, dropped, byid}
