-- sales_resume: resume the sales of an event a rebuild held after a loss
-- ticketd could not repair (ticketctl release or reconcile). While held, the
-- event's sold hash counts the lost units in 'ev' (so nothing sells into
-- them) and says how many in 'held'. Release gives them back to the event
-- (the operator refunded or settled their buyers: the counts as rebuilt);
-- reconcile keeps them counted as sold. 'paid' (units ever paid) keeps them
-- either way. Idempotent: an event no longer held is left alone.
--
-- KEYS[1] -> sold hash        {pN}:ev:<id>:sold (fields 'ev', 'held')
-- KEYS[2] -> partition marker {pN}:live (while it is missing, the rebuild
--            that restores the partition applies the resolution)
--
-- ARGV[1] -> 'release' or 'reconcile'
--
-- Output: {R.OK, lost} resumed (lost: the units it held); {R.NOT_PENDING}
-- not held (nothing written); {R.STOPPED} the partition's marker is missing
-- (nothing written)
--@include reply
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {R.STOPPED}
end
local held = tonumber(redis.call('HGET', KEYS[1], 'held'))
if not held then
  return {R.NOT_PENDING}
end
if ARGV[1] ~= 'release' and ARGV[1] ~= 'reconcile' then
  return redis.error_reply('sales_resume: ARGV[1] must be release or reconcile')
end

-- writes
if ARGV[1] == 'release' then
  redis.call('HINCRBY', KEYS[1], 'ev', -held)
end
redis.call('HDEL', KEYS[1], 'held')
return {R.OK, held}
