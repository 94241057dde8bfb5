-- lib/seatrule: the single-seat rule (decisions.md §7) as seat_hold and
-- seat_release test it, so a hold and a release cannot disagree on which
-- seat is left alone. A script takes it with the line
--   --@include seatrule
-- before its first use; lua.Load puts this text there.
--
-- Seats are labelled "<row>-<number>"; a row's seats are numbered without
-- gaps, so row-(k-1) and row-(k+1) are seat k's neighbours. The scripts
-- describe a row with a map taken[label]: true for a taken seat (booked or
-- held), false for a free one, nil for a label beyond the row's end (the
-- caller passes every seat of the row within two of the seats it changes,
-- so a label it did not pass is not a seat).
--
-- seat_taken_mark(taken, bookedkey, k, labels, now): sets
-- taken[labels[i]] to true when the seat is a field of the booked hash
-- bookedkey or held at now (any holder; k: the holds hashes, as
-- lib/seatholds seatholds_read takes them), else false. Reads only;
-- returns the expired entries it met, as seatholds_read does.
--
-- seat_split(label): row, number (a Lua number) of a seat label.
--
-- seat_alone(taken, row, num, strict): whether the free seat row-num is
-- left alone: between two taken seats, or (strict) between a taken seat and
-- its row's end. A seat with no neighbour at all (a one-seat row) is never
-- alone. Returns a boolean.
--
-- It brings lib/seatholds (seatholds_now, seatholds_read, ...) with it.

--@include seatholds

local function seat_taken_mark(taken, bookedkey, k, labels, now)
  if #labels == 0 then
    return {}
  end
  local booked = redis.call('HMGET', bookedkey, unpack(labels))
  local cur, stale = seatholds_read(k, labels, now)
  for i = 1, #labels do
    taken[labels[i]] = (booked[i] or cur[i]) and true or false
  end
  return stale
end

local function seat_split(label)
  local row, num = string.match(label, '^(.*)-(%d+)$')
  return row, tonumber(num)
end

local function seat_alone(taken, row, num, strict)
  local left, right = taken[row .. '-' .. (num - 1)], taken[row .. '-' .. (num + 1)]
  if left and right then
    return true
  end
  return strict and left ~= false and right ~= false and (left or right) and true or false
end
