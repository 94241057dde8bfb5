-- 009_outbox_rate: a new outbox row stays out of outbox_rate until the
-- mailer takes a send slot for it (rate_at). The index's one query
-- (sync/mailer rate.go recentSQL) counts an address's sends of the last
-- hour, rate_at > now() - 1 hour, which a row without rate_at never
-- matches; so the sync worker's insert of each paid order's e-mail row
-- updates one index less (about 3 us of Postgres time an order,
-- docs/decisions.md, One sale core). The new index is built first, beside
-- the old one: on a large outbox, writes to it wait while it is built, and
-- reads only for the drop and the rename after it.
CREATE INDEX outbox_rate_slots ON outbox (rate_key, rate_at) WHERE rate_key IS NOT NULL AND rate_at IS NOT NULL;
DROP INDEX outbox_rate;
ALTER INDEX outbox_rate_slots RENAME TO outbox_rate;
