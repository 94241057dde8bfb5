-- lease_release: delete a lease key only while the caller still owns it, so
-- an owner whose lease expired never deletes the lease of the next owner.
--
-- KEYS[1] -> the lease key (its value is the owner's random token)
--
-- ARGV[1] -> the owner's token
--
-- Output: {R.OK} released; {R.NOT_OWNER} the key is gone or holds another
-- token (left alone)
--@include reply
--@allow-oom
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {R.OK}
end
return {R.NOT_OWNER}
