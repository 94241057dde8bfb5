-- seat_release: free seats of a hold token. Only seat keys still held by the
-- token are deleted (a seat handed to an order stays with the order); the
-- token hash stays, so the token can hold again until it expires. When
-- releasing all, the caller reads the token's seats first; if they changed
-- meanwhile the script answers {2} and the caller reads again.
--
-- KEYS[1]  -> hold token hash {pN}:ev:<id>:hold:<token>
-- KEYS[2..] -> one seat key per label, in the order of the labels in ARGV
--
-- ARGV[1] -> hold token
-- ARGV[2] -> "1" when the labels must be all of the token's seats, else "0"
-- ARGV[3..] -> seat labels (distinct)
--
-- Output:
--   {0, {labels}}  released (only the seats that were held by the token)
--   {2}            releasing all, and the token's seats are not the labels given; retry
local hold = KEYS[1]
local n = #KEYS - 1

if ARGV[2] == '1' and redis.call('EXISTS', hold) == 1 then
  local count = 0
  for _, f in ipairs(redis.call('HKEYS', hold)) do
    if string.sub(f, 1, 2) == 's:' then
      count = count + 1
    end
  end
  if count ~= n then
    return {2}
  end
  for i = 1, n do
    if redis.call('HEXISTS', hold, 's:' .. ARGV[2 + i]) == 0 then
      return {2}
    end
  end
end

-- writes
local holder = 'h:' .. ARGV[1]
local released = {}
for i = 1, n do
  local label = ARGV[2 + i]
  if redis.call('GET', KEYS[1 + i]) == holder then
    redis.call('DEL', KEYS[1 + i])
    released[#released + 1] = label
  end
  redis.call('HDEL', hold, 's:' .. label)
end
return {0, released}
