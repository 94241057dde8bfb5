-- lib/reply: the scripts' reply codes, one table for every script. A script
-- answers an array whose first element is one of these (a few reads answer
-- their data alone: discount_left, paid_ack, redis_time, state_tick), and
-- a meaning has one name and one number in every script: "sales stopped"
-- is R.STOPPED wherever sales stop. inventory/reply is the same table in
-- Go, and its test holds the two to each other, name for name and number
-- for number; inventory/eval's test refuses a script that answers a bare
-- number. A script takes it with the line
--   --@include reply
-- and inventory/eval, loading the script, puts each R.<NAME> of its code
-- as the number and leaves the table out: Redis never builds it (that
-- cost about 2 us a script call), and a name the table lacks fails the
-- load. So this file holds the table alone, one "NAME = number," a line.
-- The payload after the code is each script's own (its header's Output).
local R = {
  OK = 0, -- done: the rest of the reply is the script's result
  EXISTS = 1, -- what the call would create exists already (a replay, an id taken): nothing written
  SHORT = 2, -- a capacity field has fewer than requested left
  HOLD_GONE = 3, -- the hold token is gone (expired or never created)
  SEAT_TAKEN = 4, -- seats booked or held by someone else
  SEAT_NOT_HELD = 5, -- seats the hold token does not hold
  DISCOUNT_USED_UP = 6, -- the discount code has no uses left
  STOPPED = 7, -- the partition's marker is missing (Redis lost or rebuilds its state): sales stop
  BUYER_LIMIT = 8, -- the buyer would pass the event's maxTicketsPerBuyer
  PAID = 9, -- paid at once (a free registration)
  BUYER_UNPAID = 10, -- the buyer has another registration awaiting payment
  CLIENT_LIMIT = 11, -- the client holds its limit of holds already
  NOT_FOUND = 12, -- no such thing (for this caller)
  NOT_OWNER = 13, -- the caller holds it no longer (gone, or another's): nothing written
  UNPAYABLE = 14, -- it cannot be paid; the reply says why
  AMOUNT_MISMATCH = 15, -- the amount is not the order's, beyond the tolerance: nothing written
  PAYMENT_REFUSED = 16, -- a payment refused: of no session ticketd opened, not its amount or currency, or a test card that may not pay
  NOT_PENDING = 17, -- not in the state the call acts on (a registration, an event's sales not held)
  NOT_DUE = 18, -- its time has not come
  SESSIONS_CHANGED = 19, -- its checkout sessions are not those the caller read: nothing written
  TOO_MANY_SESSIONS = 20, -- it has the most checkout sessions already
  TOKEN_LIMIT = 21, -- the hold token would hold more seats than it may
  STRANDED = 22, -- the single-seat rule refuses: free seats would be left alone
  IN_USE = 23, -- it holds seats: left alone
  LIMITED = 24, -- the rate limit refuses
  BELOW_SOLD = 25, -- a capacity is below its sold count: nothing written
  LIVE = 26, -- the partition's marker is there: sales run, nothing written
  MORE = 27, -- part of the work done: call again
  PASS_INVALID = 28, -- the waiting room's pass is not one it gave, or not for this buyer or these units
  PASS_USED = 29, -- the waiting room's pass was used already
  PASS_EXPIRED = 30, -- the waiting room's pass expired unused (or its holder left)
  PASS_REQUIRED = 31, -- the event sells through its waiting room and no pass (or hold token a pass made) came
}
