-- lib/seatholds: an event's held seats in three hashes of fixed names, so
-- every script that changes a hold declares the same keys whatever seats
-- it touches (it reads the seats from the token's or the order's hash).
-- A script takes it with the line
--   --@include seatholds
--
-- Seat holds that lapse, label -> "<holder> <expiry ms>" (Redis time):
--   - the seat holds hash (keys.Space.SeatHolds): hold tokens, "h:<token>";
--   - the order seats hash (keys.Space.OrderSeats): pending partner
--     orders, "o:<orderId>".
-- Redis 7.0 has no expiry per field, so an entry whose expiry has passed
-- counts as a free seat; the scripts that meet one delete it
-- (seatholds_read returns them), an entry is only ever written for a seat
-- of the map, and each hash expires with the latest entry written to it
-- (seatholds_put), so timed-out holds leave nothing behind for long.
--
-- The registration seats hash (keys.Space.RegSeats) keeps the seats of
-- storefront registrations awaiting payment: label -> "o:<regId>", without
-- expiry (only reg_pay and reg_expire give them back).
--
-- A hash is gone with its last entry.

-- seatholds_now(): Redis time, ms.
local function seatholds_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- seatholds_timed(key, labels, now, out, stale): reads a hash of holds that
-- lapse into out (holder of labels[i] while it lasts) and appends to stale
-- {key = key, labels = the labels whose entries expired}.
local function seatholds_timed(key, labels, now, out, stale)
  local vals = redis.call('HMGET', key, unpack(labels))
  local expired = {}
  for i = 1, #labels do
    if vals[i] then
      local holder, e = string.match(vals[i], '^(%S+) (%d+)$')
      if holder and tonumber(e) > now then
        out[i] = out[i] or holder
      else
        expired[#expired + 1] = labels[i]
      end
    end
  end
  stale[#stale + 1] = {key = key, labels = expired}
end

-- seatholds_every(n, a, b): whether each of the n seats read into a (or
-- into b, when given) has an entry: every one taken.
local function seatholds_every(n, a, b)
  for i = 1, n do
    if not a[i] and not (b and b[i]) then
      return false
    end
  end
  return true
end

-- seatholds_read(k, labels, now, byreg): the holder of each label at now
-- (false for a free seat), and the expired entries met (stale: the caller
-- deletes them with its writes, seatholds_drop_stale). k names the hashes
-- read: seats, orders (holds that lapse) and regs (registrations); a
-- missing one is not read. byreg, when given, is the regs hash's HMGET of
-- labels the caller made already (it is not read again). Reads only; fails
-- on a key that is not a hash.
local function seatholds_read(k, labels, now, byreg)
  local out, stale = {}, {}
  if #labels == 0 then
    return out, stale
  end
  if k.regs then
    byreg = byreg or redis.call('HMGET', k.regs, unpack(labels))
    for i = 1, #labels do
      out[i] = byreg[i]
    end
  end
  if k.seats then
    seatholds_timed(k.seats, labels, now, out, stale)
  end
  if k.orders then
    seatholds_timed(k.orders, labels, now, out, stale)
  end
  for i = 1, #labels do
    out[i] = out[i] or false
  end
  return out, stale
end

-- seatholds_put(key, labels, holder, exp): gives labels to holder in the
-- hash of holds that lapse key until exp (ms), and keeps the hash until its
-- latest entry's expiry.
local function seatholds_put(key, labels, holder, exp)
  if #labels == 0 then
    return
  end
  local entry = holder .. ' ' .. exp
  for i = 1, #labels do
    redis.call('HSET', key, labels[i], entry)
  end
  if redis.call('PEXPIRETIME', key) < tonumber(exp) then
    redis.call('PEXPIREAT', key, exp)
  end
end

-- seatholds_drop(key, labels): deletes the entries of labels (none: nothing).
local function seatholds_drop(key, labels)
  if #labels > 0 then
    redis.call('HDEL', key, unpack(labels))
  end
end

-- seatholds_drop_stale(stale): deletes the expired entries seatholds_read met.
local function seatholds_drop_stale(stale)
  for _, grp in ipairs(stale) do
    seatholds_drop(grp.key, grp.labels)
  end
end
