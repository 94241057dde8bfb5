-- 002_durability: what a rebuild of Redis from Postgres needs.

-- The generation of the Redis state in force, per key prefix (deployments
-- may share a database): a rebuild records a new one before Redis shows
-- it, and nodes raise seq as they advance it, so a Redis that comes back
-- from an older snapshot (a lower seq, or another gen) is recognised.
CREATE TABLE redis_generations (
    key_prefix text PRIMARY KEY,
    gen        text NOT NULL,
    seq        bigint NOT NULL,
    rebuilt_at timestamptz NOT NULL DEFAULT now()
);

-- The reserve's idempotency record, so a rebuild restores it: a retried
-- reserve then replays the paid order instead of making a second one. And
-- who reserved the order (a channel key or a buyer session), for status.
ALTER TABLE orders
    ADD COLUMN caller          text,
    ADD COLUMN idempotency_key text,
    ADD COLUMN fingerprint     text;

-- A rebuild restores the Redis copies of orders paid within the retention.
CREATE INDEX orders_paid_at ON orders (paid_at);
