package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaDDL is the whole baseline schema. Every statement is idempotent so
// the server can run it on each start; it lives in its own Postgres schema
// so it can share a database with ticketd without touching its tables.
//
// The CHECK constraints on sold are a second line of defence: even a buggy
// claim could not commit an oversell.
const schemaDDL = `
CREATE SCHEMA IF NOT EXISTS baseline;

CREATE TABLE IF NOT EXISTS baseline.channels (
	id            text PRIMARY KEY,
	key           text NOT NULL UNIQUE,
	secret_sha256 bytea NOT NULL,
	signing_key   text NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS baseline.events (
	id                   text PRIMARY KEY,
	capacity             bigint,            -- NULL: no event-level cap
	sold                 bigint NOT NULL DEFAULT 0, -- kept while capped; apply recomputes it
	fee_per_ticket_cents bigint NOT NULL DEFAULT 0,
	CHECK (sold >= 0 AND (capacity IS NULL OR sold <= capacity))
);

CREATE TABLE IF NOT EXISTS baseline.ticket_types (
	event_id      text NOT NULL REFERENCES baseline.events (id),
	id            text NOT NULL,
	name          text NOT NULL,
	price_cents   bigint NOT NULL CHECK (price_cents >= 0),
	capacity      bigint NOT NULL,
	sold          bigint NOT NULL DEFAULT 0,
	max_per_order bigint NOT NULL DEFAULT 0,  -- 0: no limit
	PRIMARY KEY (event_id, id),
	CHECK (sold >= 0 AND sold <= capacity)
);

CREATE TABLE IF NOT EXISTS baseline.orders (
	id                text PRIMARY KEY,
	channel_id        text NOT NULL REFERENCES baseline.channels (id),
	idempotency_key   text NOT NULL,
	fingerprint       text NOT NULL,
	event_id          text NOT NULL REFERENCES baseline.events (id),
	status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid', 'failed')),
	fail_reason       text,
	total_cents       bigint NOT NULL,
	buyer_name        text NOT NULL,
	buyer_email       text NOT NULL,
	partner_reference text,
	created_at        timestamptz NOT NULL DEFAULT now(),
	expires_at        timestamptz NOT NULL,
	paid_at           timestamptz,
	UNIQUE (channel_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS orders_event_status ON baseline.orders (event_id, status);

CREATE TABLE IF NOT EXISTS baseline.order_lines (
	order_id         text NOT NULL REFERENCES baseline.orders (id),
	pos              int NOT NULL,
	ticket_type_id   text NOT NULL,
	name             text NOT NULL,
	quantity         bigint NOT NULL CHECK (quantity > 0),
	unit_price_cents bigint NOT NULL,
	PRIMARY KEY (order_id, pos)
);

CREATE TABLE IF NOT EXISTS baseline.tickets (
	id             text PRIMARY KEY,
	order_id       text NOT NULL REFERENCES baseline.orders (id),
	seq            int NOT NULL,
	event_id       text NOT NULL,
	ticket_type_id text NOT NULL,
	label          text NOT NULL,
	UNIQUE (order_id, seq)
);
CREATE INDEX IF NOT EXISTS tickets_event_type ON baseline.tickets (event_id, ticket_type_id);
`

// schemaLock is the advisory lock key that serialises concurrent starts:
// CREATE ... IF NOT EXISTS is not safe against a racing twin.
const schemaLock = 0x62617365 // "base"

// migrate creates the schema if it is missing.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
			return fmt.Errorf("schema lock: %w", err)
		}
		// Simple protocol: several statements in one Exec.
		if _, err := tx.Exec(ctx, schemaDDL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		return nil
	})
}
