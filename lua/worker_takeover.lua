-- worker_takeover: take over the entries a stopped sync worker left pending
-- on one paid stream and, once it holds none, remove its consumer. Taking and
-- removing in one script is what makes removal safe: XGROUP DELCONSUMER drops
-- the consumer's pending entries from the group, so it may only run while the
-- consumer holds none, and a worker wrongly thought stopped may read more at
-- any moment.
--
-- KEYS[1] -> a partition's paid stream ({pN}:paid)
-- ARGV[1] -> consumer group
-- ARGV[2] -> the stopped worker's consumer name
-- ARGV[3] -> this worker's consumer name
-- ARGV[4] -> the most entries to take in one call
--
-- Output: {R.MORE, entries, taken} took `taken` pending ids; `entries` are those
--         still in the stream, as XCLAIM answers them ({id, {field, value,
--         ...}}), now pending with ARGV[3] (ids deleted from the stream while
--         pending leave the group); call again after writing them
--         {R.OK} the consumer held nothing and is removed (or the group is gone)
--@include reply
--@allow-oom
local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', ARGV[4], ARGV[2])
if type(pending) == 'table' and pending.err then
  return {R.OK}
end
if #pending == 0 then
  redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
  return {R.OK}
end
local ids = {}
for i, p in ipairs(pending) do
  ids[i] = p[1]
end
return {R.MORE, redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, unpack(ids)), #ids}
