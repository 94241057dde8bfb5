-- idem_claim: claim an Idempotency-Key for one reserve attempt, or find the
-- attempt that claimed it before.
--
-- KEYS[1] -> idempotency record {iN}:idem:<key>
--
-- ARGV[1] -> caller ("ch:<channel>" or "ss:<session>")
-- ARGV[2] -> request fingerprint (hash of event and canonical request)
-- ARGV[3] -> order id this attempt will create
-- ARGV[4] -> retention ms (24h)
--
-- Output:
--   {0}                       claimed: go on and create ARGV[3]
--   {1}                       used by another caller or for another request
--   {2, order id, age ms}     the same request claimed it earlier
local r = redis.call('HMGET', KEYS[1], 'caller', 'fp', 'order', 't')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not r[1] then
  redis.call('HSET', KEYS[1], 'caller', ARGV[1], 'fp', ARGV[2], 'order', ARGV[3], 't', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {0}
end
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then
  return {1}
end
return {2, r[3], now - tonumber(r[4])}
