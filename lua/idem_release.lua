-- idem_release: give an Idempotency-Key back after its attempt failed
-- without creating an order, so a retry with the same key runs again.
--
-- KEYS[1] -> idempotency record {iN}:idem:<key>: "caller|fingerprint|order id"
-- ARGV[1] -> the record the failed attempt claimed the key with
--
-- Output: {R.OK} released, {R.NOT_OWNER} the key belongs to another attempt
-- (left alone)
--@include reply
--@allow-oom
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {R.OK}
end
return {R.NOT_OWNER}
