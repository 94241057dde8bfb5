-- 001_init: catalog of record, paid orders and what the sync worker writes
-- with them (lines, tickets, outbox), and entries it could not read.

-- A tenant's doc is the catalog.Tenant JSON without its events; those live
-- in events, one row each, so an apply can replace one event alone.
CREATE TABLE tenants (
    id         text PRIMARY KEY,
    doc        jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE events (
    id         text PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES tenants (id),
    doc        jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_tenant_id ON events (tenant_id);

-- doc is the catalog.StoredChannel JSON (secret hashed, signing key sealed).
-- The key's uniqueness is checked at commit so one apply may swap two keys.
CREATE TABLE channels (
    id         text PRIMARY KEY,
    key        text NOT NULL,
    doc        jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channels_key_unique UNIQUE (key) DEFERRABLE INITIALLY DEFERRED
);

-- No foreign key to events: a paid order is the record even if its event
-- never reached Postgres.
CREATE TABLE orders (
    id                      text PRIMARY KEY,
    event_id                text NOT NULL,
    tenant_id               text NOT NULL,
    channel_id              text,
    source                  text NOT NULL,
    status                  text NOT NULL,
    buyer_name              text NOT NULL,
    buyer_email             text NOT NULL,
    buyer_phone             text,
    showing_id              text,
    discount_code           text,
    currency                text NOT NULL,
    subtotal_cents          bigint NOT NULL,
    discount_cents          bigint NOT NULL,
    extras_cents            bigint NOT NULL,
    fee_cents               bigint NOT NULL,
    vat_cents               bigint NOT NULL,
    refund_protection_cents bigint NOT NULL,
    total_cents             bigint NOT NULL,
    partner_reference       text,
    created_at              timestamptz NOT NULL,
    paid_at                 timestamptz NOT NULL,
    stream_id               text NOT NULL
);
CREATE INDEX orders_event_id ON orders (event_id);
CREATE INDEX orders_channel_id ON orders (channel_id) WHERE channel_id IS NOT NULL;

CREATE TABLE order_lines (
    order_id         text NOT NULL REFERENCES orders (id),
    line_no          int NOT NULL,
    kind             text NOT NULL,
    ref_id           text NOT NULL,
    quantity         bigint NOT NULL,
    unit_price_cents bigint NOT NULL,
    amount_cents     bigint NOT NULL,
    PRIMARY KEY (order_id, line_no)
);

CREATE TABLE tickets (
    id             text PRIMARY KEY,
    order_id       text NOT NULL REFERENCES orders (id),
    event_id       text NOT NULL,
    kind           text NOT NULL DEFAULT 'ticket', -- ticket | seat | area | table
    ref_id         text,                           -- ticket type, seat label, area or table id
    label          text NOT NULL,
    issued_at      timestamptz NOT NULL
);
CREATE INDEX tickets_order_id ON tickets (order_id);
CREATE INDEX tickets_event_id ON tickets (event_id);

-- Mail to send; the mailer sets sent_at. One row per order and kind, so a
-- redelivered order never mails twice.
CREATE TABLE outbox (
    id         bigserial PRIMARY KEY,
    order_id   text NOT NULL REFERENCES orders (id),
    kind       text NOT NULL CHECK (kind IN ('buyer_tickets', 'host_notify')),
    recipient  text NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz,
    UNIQUE (order_id, kind)
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;

-- Paid-stream entries the worker could not write, kept for an operator.
CREATE TABLE dead_letters (
    id         bigserial PRIMARY KEY,
    stream     text NOT NULL,
    entry_id   text NOT NULL,
    fields     jsonb NOT NULL,
    error      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (stream, entry_id)
);
