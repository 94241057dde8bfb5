-- 006_mail_queue: the messages waiting for one address's hourly limit
-- (005) form a queue that costs the mailer one claim a slot. Before, every
-- row deferred for a full address got the same due time; when it came, all
-- of them were claimed and deferred again (one sent), sorted first, so
-- other buyers' mail waited behind the churn.
--
-- rate_key is now written with each buyer row (sync/worker), so the mailer
-- finds an address's rows without claiming them. While the address is
-- full, its rows are parked (rate_parked); the oldest parked row is the
-- head, due when the next slot frees, and the others are due only in a day
-- (a safety net). The head is set again whenever a slot is taken, a row is
-- parked, a failed send gives its slot back or a row is given up.
-- sync/mailer rate.go.
ALTER TABLE outbox ADD COLUMN rate_parked boolean NOT NULL DEFAULT false;
-- An address's rows waiting and not parked (new, the head, a retry).
CREATE INDEX outbox_rate_waiting ON outbox (rate_key)
    WHERE rate_key IS NOT NULL AND NOT rate_parked AND rate_at IS NULL AND sent_at IS NULL AND failed_at IS NULL;
-- An address's parked rows, oldest first.
CREATE INDEX outbox_rate_parked ON outbox (rate_key, id)
    WHERE rate_parked AND sent_at IS NULL AND failed_at IS NULL;
