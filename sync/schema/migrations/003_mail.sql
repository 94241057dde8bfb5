-- 003_mail: the outbox as a work queue for several mailer processes, and
-- the host's refund notices.

-- A refund notice names a registration that never became an order, so the
-- row points at an order id that orders may never hold.
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_order_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('buyer_tickets', 'host_notify', 'host_refund'));

-- ref tells apart the rows of one kind an order may have several of: a
-- host_refund row per payment to refund (its payment id), since the host
-- must hear of every one; '' for the once-an-order kinds.
ALTER TABLE outbox ADD COLUMN ref text NOT NULL DEFAULT '';
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_order_id_kind_key;
ALTER TABLE outbox ADD CONSTRAINT outbox_order_id_kind_ref_key UNIQUE (order_id, kind, ref);

-- attempts counts sends begun (a claim counts one); next_attempt_at is when
-- the row is due (backoff after a failure); locked_until and locked_by are
-- the lease of the mailer that claimed it: another mailer takes the row only
-- once the lease ran out (its holder died). failed_at marks a row given up
-- after the last attempt, kept with last_error for an operator.
ALTER TABLE outbox
    ADD COLUMN attempts        int NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN last_error      text,
    ADD COLUMN locked_until    timestamptz,
    ADD COLUMN locked_by       text,
    ADD COLUMN failed_at       timestamptz;

DROP INDEX IF EXISTS outbox_unsent;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- Nothing sent mail before this migration: every unsent row of an existing
-- database would be due at once, and buyers would get their tickets for
-- orders of weeks ago in one burst. Those rows are given up instead, kept
-- with this last_error for an operator, who may queue them again
-- (docs/tickets.md, "Mail queued before the mailer"). A new database has
-- no rows here.
UPDATE outbox SET failed_at = now(), last_error = 'queued before the mailer existed'
WHERE sent_at IS NULL;
