// Package catalogdb keeps the catalog of record in Postgres: tenants,
// their events and channels, each as the JSON of its catalog type. Redis
// holds only a projection of it, rebuilt from here when Redis is empty.
package catalogdb

import (
	"context"
	"fmt"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// Store reads and writes the catalog tables.
type Store struct {
	Pool *pgxpool.Pool
}

// Apply creates or replaces, by id, every tenant, every event of those
// tenants and every channel given, in one transaction. Objects not given
// stay as they are, matching the catalog's merge-by-id apply. An event that
// moves to another tenant moves with its row.
func (s *Store) Apply(ctx context.Context, tenants []catalog.Tenant, channels []catalog.StoredChannel) error {
	b := &pgx.Batch{}
	for i := range tenants {
		t := tenants[i]
		events := t.Events
		t.Events = nil // kept one row each in events
		doc, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("catalogdb: encode tenant %s: %w", t.ID, err)
		}
		b.Queue(`INSERT INTO tenants (id, doc, updated_at) VALUES ($1, $2, now())
			ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at`, t.ID, string(doc))
		for j := range events {
			e := events[j]
			e.TenantID = t.ID
			doc, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("catalogdb: encode event %s: %w", e.ID, err)
			}
			b.Queue(`INSERT INTO events (id, tenant_id, doc, updated_at) VALUES ($1, $2, $3, now())
				ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, doc = excluded.doc, updated_at = excluded.updated_at`,
				e.ID, t.ID, string(doc))
		}
	}
	for i := range channels {
		c := channels[i]
		doc, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("catalogdb: encode channel %s: %w", c.ID, err)
		}
		b.Queue(`INSERT INTO channels (id, key, doc, updated_at) VALUES ($1, $2, $3, now())
			ON CONFLICT (id) DO UPDATE SET key = excluded.key, doc = excluded.doc, updated_at = excluded.updated_at`,
			c.ID, c.Key, string(doc))
	}
	// An explicit transaction, not the batch's implicit one: when ctx ends
	// while Postgres still runs the batch (the apply lost its catalog lock
	// while a row it updates was locked), pgx drops the connection without
	// stopping the statements, and an implicit transaction would commit once
	// they ran; without a COMMIT it rolls back. The channel key's deferred
	// uniqueness is checked at the commit.
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("catalogdb: apply: %w", err)
	}
	return nil
}

// Load returns the whole catalog: tenants ordered by id, each with its
// events ordered by id, and channels ordered by id. An empty database gives
// two empty slices.
func (s *Store) Load(ctx context.Context) ([]catalog.Tenant, []catalog.StoredChannel, error) {
	var tenants []catalog.Tenant
	var channels []catalog.StoredChannel
	// One snapshot, so an apply committing meanwhile is seen whole or not at all.
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if tenants, err = loadTenants(ctx, tx); err != nil {
			return err
		}
		channels, err = loadChannels(ctx, tx)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("catalogdb: load: %w", err)
	}
	return tenants, channels, nil
}

func loadTenants(ctx context.Context, tx pgx.Tx) ([]catalog.Tenant, error) {
	rows, err := tx.Query(ctx, `SELECT id, doc FROM tenants ORDER BY id`)
	if err != nil {
		return nil, err
	}
	tenants := []catalog.Tenant{}
	at := map[string]int{}
	var id string
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
		var t catalog.Tenant
		if err := json.Unmarshal(doc, &t); err != nil {
			return fmt.Errorf("tenant %s: %w", id, err)
		}
		t.ID = id
		t.Events = []catalog.Event{}
		at[id] = len(tenants)
		tenants = append(tenants, t)
		return nil
	})
	if err != nil {
		return nil, err
	}

	rows, err = tx.Query(ctx, `SELECT id, tenant_id, doc FROM events ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var tenantID string
	_, err = pgx.ForEachRow(rows, []any{&id, &tenantID, &doc}, func() error {
		var e catalog.Event
		if err := json.Unmarshal(doc, &e); err != nil {
			return fmt.Errorf("event %s: %w", id, err)
		}
		e.ID, e.TenantID = id, tenantID
		i := at[tenantID] // the foreign key guarantees the tenant exists
		tenants[i].Events = append(tenants[i].Events, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tenants, nil
}

func loadChannels(ctx context.Context, tx pgx.Tx) ([]catalog.StoredChannel, error) {
	rows, err := tx.Query(ctx, `SELECT id, doc FROM channels ORDER BY id`)
	if err != nil {
		return nil, err
	}
	channels := []catalog.StoredChannel{}
	var id string
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
		var c catalog.StoredChannel
		if err := json.Unmarshal(doc, &c); err != nil {
			return fmt.Errorf("channel %s: %w", id, err)
		}
		c.ID = id
		channels = append(channels, c)
		return nil
	})
	return channels, err
}
