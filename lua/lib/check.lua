-- lib/check: check_type(key, want) fails the script when key holds another
-- type than want ('hash', 'zset', 'stream', 'string'); a missing key
-- passes. Redis keeps what a script wrote before a command of it failed,
-- so a script reads every key it will write before its first write; a key
-- it writes without needing to read it first is checked with this instead
-- (one TYPE call), so the command that would fail fails before anything is
-- written. A script takes it with the line
--   --@include check
local function check_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= want and t ~= 'none' then
    return error({err = 'WRONGTYPE ' .. key .. ' holds a ' .. t .. ', not a ' .. want .. ': nothing was written'})
  end
end
