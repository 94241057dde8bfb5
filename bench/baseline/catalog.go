package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/inventory/money"
)

// document is the part of ticketd's catalog document (decisions.md §1) the
// reserve+confirm flow needs; every other field is ignored.
type document struct {
	Tenants []struct {
		Events []docEvent `json:"events"`
	} `json:"tenants"`
	Channels []docChannel `json:"channels"`
}

type docEvent struct {
	ID       string `json:"id"`
	Capacity *int64 `json:"capacity"`
	Pricing  *struct {
		FeePerTicket money.Cents `json:"feePerTicket"`
	} `json:"pricing"`
	Tickets []docTicket `json:"tickets"`
}

type docTicket struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Price       money.Cents `json:"price"`
	Capacity    int64       `json:"capacity"`
	MaxPerOrder int64       `json:"maxPerOrder"`
}

type docChannel struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	Secret     string `json:"secret"`
	SigningKey string `json:"signingKey"`
}

// invalidCatalog is a refused document; the handler answers 400 INVALID_CATALOG.
type invalidCatalog struct{ msg string }

func (e *invalidCatalog) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &invalidCatalog{msg: fmt.Sprintf(format, args...)}
}

// validate checks what the upserts rely on.
func (d *document) validate() error {
	for i, c := range d.Channels {
		if c.ID == "" || c.Key == "" || c.Secret == "" {
			return invalidf("channels[%d]: id, key and secret are required", i)
		}
	}
	for ti, t := range d.Tenants {
		for ei, ev := range t.Events {
			at := fmt.Sprintf("tenants[%d].events[%d]", ti, ei)
			if ev.ID == "" {
				return invalidf("%s.id is required", at)
			}
			if ev.Capacity != nil && *ev.Capacity < 0 {
				return invalidf("%s.capacity must not be negative", at)
			}
			if ev.Pricing != nil && ev.Pricing.FeePerTicket < 0 {
				return invalidf("%s.pricing.feePerTicket must not be negative", at)
			}
			seen := map[string]bool{}
			for k, tk := range ev.Tickets {
				if tk.ID == "" || seen[tk.ID] {
					return invalidf("%s.tickets[%d].id is missing or repeated", at, k)
				}
				seen[tk.ID] = true
				if tk.Price < 0 || tk.Capacity < 0 || tk.MaxPerOrder < 0 {
					return invalidf("%s.tickets[%d]: price, capacity and maxPerOrder must not be negative", at, k)
				}
			}
		}
	}
	return nil
}

// applied counts what an apply upserted.
type applied struct {
	Tenants  int `json:"tenants"`
	Channels int `json:"channels"`
	Events   int `json:"events"`
}

// apply upserts the document in one transaction. Upserts never lower a sold
// count, and the CHECK (sold <= capacity) refuses a capacity below it.
func apply(ctx context.Context, pool *pgxpool.Pool, d *document) (applied, error) {
	var n applied
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		n = applied{Tenants: len(d.Tenants), Channels: len(d.Channels)}
		for _, c := range d.Channels {
			sum := sha256.Sum256([]byte(c.Secret))
			if _, err := tx.Exec(ctx, `
				INSERT INTO baseline.channels (id, key, secret_sha256, signing_key) VALUES ($1, $2, $3, $4)
				ON CONFLICT (id) DO UPDATE SET key = EXCLUDED.key, secret_sha256 = EXCLUDED.secret_sha256,
					signing_key = EXCLUDED.signing_key`,
				c.ID, c.Key, sum[:], c.SigningKey); err != nil {
				return catalogErr(err, "channel "+c.ID)
			}
		}
		for _, t := range d.Tenants {
			for _, ev := range t.Events {
				n.Events++
				var fee money.Cents
				if ev.Pricing != nil {
					fee = ev.Pricing.FeePerTicket
				}
				// Confirms lock ticket types (in byte order of id) before the
				// event; taking the same locks in the same order first
				// waits out the confirms in flight and holds back new ones
				// until the event's cap and sold count below are settled.
				if _, err := tx.Exec(ctx, `SELECT 1 FROM baseline.ticket_types WHERE event_id = $1 ORDER BY id COLLATE "C" FOR UPDATE`, ev.ID); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `
					INSERT INTO baseline.events (id, capacity, fee_per_ticket_cents) VALUES ($1, $2, $3)
					ON CONFLICT (id) DO UPDATE SET capacity = EXCLUDED.capacity,
						fee_per_ticket_cents = EXCLUDED.fee_per_ticket_cents`,
					ev.ID, ev.Capacity, int64(fee)); err != nil {
					return catalogErr(err, "event "+ev.ID)
				}
				for _, tk := range ev.Tickets {
					if _, err := tx.Exec(ctx, `
						INSERT INTO baseline.ticket_types (event_id, id, name, price_cents, capacity, max_per_order)
						VALUES ($1, $2, $3, $4, $5, $6)
						ON CONFLICT (event_id, id) DO UPDATE SET name = EXCLUDED.name, price_cents = EXCLUDED.price_cents,
							capacity = EXCLUDED.capacity, max_per_order = EXCLUDED.max_per_order`,
						ev.ID, tk.ID, tk.Name, int64(tk.Price), tk.Capacity, tk.MaxPerOrder); err != nil {
						return catalogErr(err, "ticket "+ev.ID+"/"+tk.ID)
					}
				}
				// Confirms claim the event row only while it has a cap, so
				// its sold count is rebuilt here from the ticket types
				// (every admission is one); a cap below it is refused.
				if _, err := tx.Exec(ctx, `
					UPDATE baseline.events SET sold = (SELECT coalesce(sum(sold), 0) FROM baseline.ticket_types WHERE event_id = $1)
					WHERE id = $1`, ev.ID); err != nil {
					return catalogErr(err, "event "+ev.ID)
				}
			}
		}
		return nil
	})
	return n, err
}

// catalogErr turns constraint violations (capacity below sold, a key taken
// by another channel) into a refusal of the document.
func catalogErr(err error, what string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23514" || pe.Code == "23505") {
		return invalidf("%s: %s", what, pe.Message)
	}
	return err
}

// snapshot is the catalog held in memory. Prices, names, limits and
// credentials change only through apply, so reading them from Postgres on
// every request would be work no tuned shop does; capacity and sold counts
// are never cached.
type snapshot struct {
	events   map[string]*event
	channels map[string]*channel // by key
}

type event struct {
	id      string
	fee     money.Cents
	tickets map[string]*ticketType
}

type ticketType struct {
	id          string
	name        string
	price       money.Cents
	maxPerOrder int64
}

type channel struct {
	id           string
	secretSHA256 [sha256.Size]byte
	signingKey   string
}

// load reads the catalog into a fresh snapshot.
func load(ctx context.Context, pool *pgxpool.Pool) (*snapshot, error) {
	s := &snapshot{events: map[string]*event{}, channels: map[string]*channel{}}
	rows, err := pool.Query(ctx, `SELECT id, key, secret_sha256, signing_key FROM baseline.channels`)
	if err != nil {
		return nil, fmt.Errorf("load channels: %w", err)
	}
	for rows.Next() {
		var c channel
		var key string
		var sum []byte
		if err := rows.Scan(&c.id, &key, &sum, &c.signingKey); err != nil {
			return nil, fmt.Errorf("load channels: %w", err)
		}
		copy(c.secretSHA256[:], sum)
		s.channels[key] = &c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load channels: %w", err)
	}
	rows, err = pool.Query(ctx, `
		SELECT e.id, e.fee_per_ticket_cents, t.id, t.name, t.price_cents, t.max_per_order
		FROM baseline.events e LEFT JOIN baseline.ticket_types t ON t.event_id = e.id`)
	if err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	for rows.Next() {
		var evID string
		var fee int64
		var tid, name *string
		var price, maxPer *int64
		if err := rows.Scan(&evID, &fee, &tid, &name, &price, &maxPer); err != nil {
			return nil, fmt.Errorf("load events: %w", err)
		}
		ev := s.events[evID]
		if ev == nil {
			ev = &event{id: evID, fee: money.Cents(fee), tickets: map[string]*ticketType{}}
			s.events[evID] = ev
		}
		if tid != nil {
			ev.tickets[*tid] = &ticketType{id: *tid, name: *name, price: money.Cents(*price), maxPerOrder: *maxPer}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	return s, nil
}
