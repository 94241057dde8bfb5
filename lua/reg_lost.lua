-- reg_lost: leave a tombstone for a registration a payment came for that
-- ticketd knows nowhere (lost with Redis' state before it reached Postgres,
-- or aged out of both): it needs a refund, and a later read says so.
--
-- KEYS[1] -> registration hash {pN}:ord:<id>
--
-- ARGV[1] -> owner "sf:<tenant>" ("sf:" when unknown)
-- ARGV[2] -> payment reference "<processor>:<paymentId>"
-- ARGV[3] -> amount paid, cents
-- ARGV[4] -> retention ms
--
-- Output: {R.OK} written; {R.EXISTS} the registration exists (nothing
-- written)
--@include reply
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {R.EXISTS}
end
redis.call('HSET', KEYS[1], 'st', 'refund', 'why', 'lost', 'ch', ARGV[1], 'ref', ARGV[2], 'amt', ARGV[3], 'total', 0)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return {R.OK}
