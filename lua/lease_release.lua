-- lease_release: delete a lease key only while the caller still owns it, so
-- an owner whose lease expired never deletes the lease of the next owner.
--
-- KEYS[1] -> the lease key (its value is the owner's random token)
--
-- ARGV[1] -> the owner's token
--
-- Output: {1} released; {0} the key is gone or holds another token (left alone)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {1}
end
return {0}
