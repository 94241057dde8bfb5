-- 005_mail_rate: a buyer's address gets at most TICKETD_MAIL_PER_HOUR
-- (default 5) messages an hour (issue 17: one request on a free event
-- mailed a message of the attacker's choosing to an address of theirs).
-- A buyer_tickets row about to be sent takes a slot of its recipient:
-- rate_key is the address normalised (sync/mailer rateKey), rate_at when
-- the slot was taken. A failed send gives its slot back (both NULL again);
-- a row over the limit waits (next_attempt_at) until a slot frees.
ALTER TABLE outbox ADD COLUMN rate_key text, ADD COLUMN rate_at timestamptz;
CREATE INDEX outbox_rate ON outbox (rate_key, rate_at) WHERE rate_key IS NOT NULL;
