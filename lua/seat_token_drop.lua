-- seat_token_drop: take back a seat hold token that best-available made
-- for this call and could hold nothing with (every free block it found was
-- taken before its hold). The token holds no seat and reached no buyer, so
-- it is deleted and stops counting for its client at once (lib/holds);
-- else a buyer who lost such races would reach the client's limit holding
-- nothing. A token that holds a seat is left alone, and so is one a
-- waiting room's pass made ('q', seat_token): its place holds the pass's
-- units while it lives, and a retry with the pass finds it.
--
-- KEYS[1] -> hold token hash  {pN}:ev:<id>:hold:<token>
-- KEYS[2] -> IP tokens zset   {pN}:ev:<id>:iptok:<client> (any name when no client)
--
-- ARGV[1] -> hold token
--
-- Output:
--   {R.OK}      dropped (or gone already)
--   {R.IN_USE}  it holds seats, or a pass made it: left alone
--@include reply
--@allow-oom
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 2) == 's:' or f == 'q' then
    return {R.IN_USE}
  end
end
-- a read of the zset: a key of the wrong type fails here, before any write
redis.call('ZSCORE', KEYS[2], ARGV[1])

-- writes
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return {R.OK}
