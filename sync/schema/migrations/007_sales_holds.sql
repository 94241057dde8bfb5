-- 007_sales_holds: what keeps a loss ticketd cannot repair from overselling
-- (docs/decisions.md, Durability and recovery; issue 18, item 3).

-- Each event's sold mark: the highest count of units ever paid (the sold
-- hash's "paid", which the paying scripts return) any node saw, per key
-- prefix. Nodes raise it (never lower it) about once a second while the
-- event sells, at once when Postgres returns after being away, and when
-- they find the Redis state lost or stale. A rebuild never counts an event
-- below it.
CREATE TABLE event_sold_marks (
    key_prefix text NOT NULL,
    event_id   text NOT NULL,
    paid       bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_prefix, event_id)
);

-- An event a rebuild found below its mark: lost units were paid (and
-- answered to buyers) that neither Redis nor Postgres holds any more. Its
-- sales stay held (503 SALES_HELD) until an operator resolves the row:
-- release (the lost buyers were refunded or settled: the event resumes with
-- the counts as rebuilt) or reconcile (the lost units stay counted as sold).
-- Every later rebuild counts each row's lost units as paid, and those of
-- open and reconciled rows as sold.
CREATE TABLE event_sales_holds (
    id          bigserial PRIMARY KEY,
    key_prefix  text NOT NULL,
    event_id    text NOT NULL,
    lost        bigint NOT NULL CHECK (lost > 0),
    detected_at timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    resolution  text CHECK (resolution IN ('release', 'reconcile')),
    CHECK ((released_at IS NULL) = (resolution IS NULL))
);
-- One open hold per event: a later gap adds to it.
CREATE UNIQUE INDEX event_sales_holds_open ON event_sales_holds (key_prefix, event_id) WHERE released_at IS NULL;
