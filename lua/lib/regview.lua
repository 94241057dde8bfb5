-- lib/regview: a storefront registration as its readers see it
-- (registrations.Service parseStatus), so a read (reg_status) and the
-- payment that changed it (reg_pay) answer it the same way. A script takes
-- it with the line
--   --@include regview
-- which brings lib/reply and lib/seatholds (its clock) too.
--@include reply
--@include seatholds

-- regview(key, now): the registration hash key read whole, with the Redis
-- time (ms) a registration awaiting payment is judged against; now nil
-- reads TIME. Reads only.
--   {R.NOT_FOUND} when the hash is gone, else
--   {R.OK, now ms, st, total, ch, exp, tix, why, ref, rec, amt, sess, paid, cexp, claims}
--   (absent fields as ''; claims, the sale's "field qty ...", name its
--   showing after the sync worker dropped rec)
-- regview_fields(): the fields regview answers, in its order (made by a
-- function: a table at a library's top level would end the library's code,
-- inventory/eval).
local function regview_fields()
  return {'st', 'total', 'ch', 'exp', 'tix', 'why', 'ref', 'rec', 'amt', 'sess', 'paid', 'cexp', 'claims'}
end

local function regview(key, now)
  local f = regview_fields()
  local o = redis.call('HMGET', key, unpack(f))
  if not o[1] then
    return {R.NOT_FOUND}
  end
  local out = {R.OK, now or seatholds_now()}
  for i = 1, #f do
    out[#out + 1] = o[i] or ''
  end
  return out
end

-- regview_of(v, now): regview's answer made of v, the hash's fields by
-- name (a missing one nil or false), for a script that knows them without
-- reading the hash again: reg_pay read it before its writes and knows what
-- they changed.
local function regview_of(v, now)
  local f = regview_fields()
  local out = {R.OK, now}
  for i = 1, #f do
    out[#out + 1] = v[f[i]] or ''
  end
  return out
end
