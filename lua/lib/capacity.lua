-- lib/capacity: the one definition of "capacity left" for the scripts that
-- sell (Go's twin: inventory/capacity). A script takes it with the line
--   --@include capacity
-- before its first use; lua.Load puts this text there.
--
-- Left is a field's cap minus what is sold, never below zero; a field
-- without a cap is uncapped. Sold counts every claim, partner orders and
-- storefront registrations alike.
--
-- CAPACITY_STOREFRONT is the storefront's share of an event (Go's
-- capacity.Storefront): every storefront sale claims its admissions there,
-- and a waiting room's stock caps it (lib/room counts what it sold).
local CAPACITY_STOREFRONT = 'sf'
-- CAPACITY_SHOWING is the kind of a showing's field, 'sh:<showing>' (Go's
-- capacity.KindShowing).
local CAPACITY_SHOWING = 'sh'

-- capacity_short(capKey, soldKey, fields, qtys): checks qtys[i] of every
-- fields[i] against what is left. Returns the first i that does not fit and
-- what is left of fields[i]; nil when all fit. No writes.
local function capacity_short(capkey, soldkey, fields, qtys)
  if #fields == 0 then
    return nil
  end
  local caps = redis.call('HMGET', capkey, unpack(fields))
  local sold = redis.call('HMGET', soldkey, unpack(fields))
  for i = 1, #fields do
    if caps[i] then
      local left = math.max(tonumber(caps[i]) - (tonumber(sold[i]) or 0), 0)
      if qtys[i] > left then
        return i, left
      end
    end
  end
  return nil
end
