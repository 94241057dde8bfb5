-- 004_refunds: payments ticketd took but could not book (decisions.md
-- section 4; issue 9, item 6). A registration paid after its hold was gone
-- and its inventory sold meanwhile, or paid a wrong amount, needs its money
-- back: the host is told through an outbox row of kind host_refund, written
-- in the same transaction as the row here (003_mail lets the outbox hold
-- that kind, for a registration that has no orders row).

-- One row a payment to refund: a registration may have been paid twice
-- (already_paid: it stays confirmed, the second charge goes back).
CREATE TABLE refunds (
    registration_id text NOT NULL,
    event_id        text NOT NULL,
    tenant_id       text NOT NULL,
    processor       text NOT NULL,
    payment_id      text NOT NULL,
    amount_cents    bigint NOT NULL, -- what the processor reported paid
    total_cents     bigint NOT NULL, -- what the registration cost
    currency        text NOT NULL,
    reason          text NOT NULL,   -- sold_out | seat_lost | amount_mismatch | already_paid | lost
    buyer_name      text NOT NULL,
    buyer_email     text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    refunded_at     timestamptz,     -- set by whoever refunds it
    PRIMARY KEY (registration_id, payment_id)
);
CREATE INDEX refunds_open ON refunds (created_at) WHERE refunded_at IS NULL;
