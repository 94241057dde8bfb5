-- idem_release: give an Idempotency-Key back after its attempt failed
-- without creating an order, so a retry with the same key runs again.
--
-- KEYS[1] -> idempotency record {iN}:idem:<key>: "caller|fingerprint|order id"
-- ARGV[1] -> the record the failed attempt claimed the key with
--
-- Output: {1} released, {0} the key belongs to another attempt (left alone)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {1}
end
return {0}
