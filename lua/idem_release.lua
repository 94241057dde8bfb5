-- idem_release: give an Idempotency-Key back after its attempt failed
-- without creating an order, so a retry with the same key runs again.
--
-- KEYS[1] -> idempotency record {iN}:idem:<key>
-- ARGV[1] -> the order id the failed attempt claimed the key for
--
-- Output: {1} released, {0} the key belongs to another attempt (left alone)
if redis.call('HGET', KEYS[1], 'order') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {1}
end
return {0}
