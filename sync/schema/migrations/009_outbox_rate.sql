-- 009_outbox_rate: a new outbox row stays out of outbox_rate until the
-- mailer takes a send slot for it (rate_at). The index's one query
-- (sync/mailer rate.go recentSQL) counts an address's sends of the last
-- hour, rate_at > now() - 1 hour, which a row without rate_at never
-- matches; so the sync worker's insert of each paid order's e-mail row
-- updates one index less (about 3 us of Postgres time an order,
-- docs/decisions.md, One sale core). On a large outbox, writes to it wait
-- while the index is built.
DROP INDEX outbox_rate;
CREATE INDEX outbox_rate ON outbox (rate_key, rate_at) WHERE rate_key IS NOT NULL AND rate_at IS NOT NULL;
