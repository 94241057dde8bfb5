-- lease_extend: push a lease's expiry to now + TTL, only while the caller
-- still owns it. A lease that expired, or that another owner took after it
-- expired, is left alone: the caller has lost it.
--
-- KEYS[1] -> the lease key (its value is the owner's random token)
--
-- ARGV[1] -> the owner's token
-- ARGV[2] -> TTL ms
--
-- Output: {R.OK} extended; {R.NOT_OWNER} the key is gone or holds another
-- token (nothing written)
--@include reply
--@allow-oom
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {R.OK}
end
return {R.NOT_OWNER}
