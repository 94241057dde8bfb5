// Package catalogstore keeps the catalog every node serves from: it applies
// operator documents (merge by id, checks against what is sold, capacities
// into Redis, the Postgres record, the projection) and holds the compiled
// snapshot in process, reloading it when the projection's version moves.
package catalogstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/lease"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/reply"
)

// Record is the catalog of record (Postgres). It is nil when ticketd runs
// without Postgres.
type Record interface {
	Apply(ctx context.Context, tenants []catalog.Tenant, channels []catalog.StoredChannel) error
	Load(ctx context.Context) ([]catalog.Tenant, []catalog.StoredChannel, error)
}

// Store applies catalogs and serves the current snapshot.
type Store struct {
	Redis  rueidis.Client
	Space  keys.Space
	Sealer *catalog.Sealer
	Record Record
	Logger *slog.Logger
	// LockTTL is how long the apply lock outlives an apply that stopped
	// extending it (a crashed node); 0 means DefaultLockTTL.
	LockTTL time.Duration

	snap atomic.Pointer[catalog.Snapshot]

	// afterCheck, when set, runs between Apply's sold-count checks and its
	// capacity scripts: tests sell there, as a sale racing an apply would.
	afterCheck func()
}

// Current returns the snapshot in force; never nil after Load succeeded.
func (s *Store) Current() *catalog.Snapshot {
	if p := s.snap.Load(); p != nil {
		return p
	}
	return emptySnapshot
}

var emptySnapshot, _ = catalog.Compile(0, nil, nil, catalog.NewSealer(""))

// projected is the JSON the projection keeps in Redis.
type projected struct {
	Tenants  []catalog.Tenant        `json:"tenants"`
	Channels []catalog.StoredChannel `json:"channels"`
}

// Refresh reloads the snapshot when the projection's version has moved.
func (s *Store) Refresh(ctx context.Context) error {
	v, err := s.version(ctx)
	if err != nil {
		return err
	}
	return s.Sync(ctx, v)
}

// version reads the projection's version (0 when there is none).
func (s *Store) version(ctx context.Context) (int64, error) {
	v, err := s.Redis.Do(ctx, s.Redis.B().Get().Key(s.Space.CatalogVersion()).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("catalog: read version: %w", err)
	}
	return v, nil
}

// Sync reloads the snapshot when version (the projection's, as just read
// from Redis) is not the one served. Nodes call it after each check that
// found the Redis state current (redisstate.Monitor), never while it is
// lost: a lost projection reads as an empty catalog, and serving that
// would turn every valid credential into a 401.
//
// version may be stale by the time the document is read: an apply can land
// in between (on this node, which installed its own version already, or on
// another). The version is read again after the document, and a document
// whose version moved meanwhile is not installed under the old number
// (the next check brings the new one): labelled with the old version, the
// new catalog would keep what this node learnt under the old one (sold-out
// answers from memory) after an apply that changed the capacities.
func (s *Store) Sync(ctx context.Context, version int64) error {
	if cur := s.snap.Load(); cur != nil && cur.Version == version {
		return nil
	}
	p, err := s.readProjection(ctx)
	if err != nil {
		return err
	}
	if now, err := s.version(ctx); err != nil || now != version {
		return err
	}
	return s.install(version, p)
}

// install compiles p as version v and serves it.
func (s *Store) install(v int64, p projected) error {
	snap, err := catalog.Compile(v, p.Tenants, p.Channels, s.Sealer)
	if err != nil {
		return err
	}
	s.snap.Store(snap)
	return nil
}

func (s *Store) readProjection(ctx context.Context) (projected, error) {
	b, err := s.Redis.Do(ctx, s.Redis.B().Get().Key(s.Space.CatalogDoc()).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return projected{}, nil
	}
	if err != nil {
		return projected{}, fmt.Errorf("catalog: read projection: %w", err)
	}
	return decodeProjection(b)
}

func decodeProjection(b []byte) (projected, error) {
	var p projected
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("catalog: decode projection: %w", err)
	}
	return p, nil
}

func (s *Store) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Applied counts the objects of an applied document.
type Applied struct {
	Tenants  int `json:"tenants"`
	Channels int `json:"channels"`
	Events   int `json:"events"`
}

// ErrBusy means another apply (or a rebuild of Redis) holds the catalog
// lock.
var ErrBusy = errors.New("catalog: another apply or a rebuild holds the catalog lock")

// ErrLockLost means an apply lost the catalog lock before it had written
// the document (it could not extend the lock for a TTL, so another apply or
// a rebuild may hold it now) and stopped there: the record, or the
// projection, does not hold the document, though capacities may already
// carry it. Applying the document again completes it. It is an ErrBusy.
var ErrLockLost = fmt.Errorf("%w: this apply lost the catalog lock before it wrote the document; apply it again", ErrBusy)

// DefaultLockTTL is the apply lock's TTL. The lock is extended every third
// of it while the apply runs.
const DefaultLockTTL = 30 * time.Second

var capsScript = eval.Load("catalog_caps")

// Apply merges a validated document into the catalog: every object is
// created or replaced by id, absent objects stay. A channel or publishable
// key that an applied object left in place already has, capacities below
// what is sold and booked seats missing from a new seat map are refused as
// a *catalog.ValidationError before anything is written, also when a sale
// lands between those checks and the capacity scripts: the capacities
// already replaced are put back, and the record is written only after all
// of them took. A capped object removed from an applied event keeps its
// sold count as its capacity (catalog_caps), so its pending orders cannot
// confirm past it.
//
// The apply holds the catalog lock (Space.CatalogLock, a lease kept alive
// while it runs; ErrBusy while another holds it) and confirms it still
// holds it right before writing the capacities, the record and the
// projection; a lost lock stops it there with ErrLockLost, so an apply
// that stalled past its lock never overwrites a later apply's merge. The
// record write runs under the lock's context: one still in flight when the
// lock is lost is cancelled.
func (s *Store) Apply(ctx context.Context, doc *catalog.Document) (Applied, error) {
	ttl := s.LockTTL
	if ttl == 0 {
		ttl = DefaultLockTTL
	}
	lock, err := lease.Acquire(ctx, s.Redis, s.Space.CatalogLock(), ttl)
	if errors.Is(err, lease.ErrHeld) {
		return Applied{}, ErrBusy
	}
	if err != nil {
		return Applied{}, fmt.Errorf("catalog: lock: %w", err)
	}
	defer func() {
		// Also the one log line of a lost lock (lease.ErrLost).
		if err := lock.Release(context.WithoutCancel(ctx)); err != nil {
			s.logger().Warn("catalog apply lock", "err", err)
		}
	}()

	cur, err := s.readProjection(ctx)
	if err != nil {
		return Applied{}, err
	}
	// Keys already taken in the merged result; checked here, not left to
	// the record's unique constraint, so the answer names the field and
	// holds without Postgres too.
	if err := catalog.ValidateAgainst(doc, cur.Tenants, cur.Channels); err != nil {
		return Applied{}, err
	}
	var changed []*catalog.Event
	var paths []string // of changed, in the document
	for ti := range doc.Tenants {
		t := &doc.Tenants[ti]
		for ei := range t.Events {
			t.Events[ei].TenantID = t.ID
			path := fmt.Sprintf("tenants[%d].events[%d]", ti, ei)
			if err := s.checkSold(ctx, &t.Events[ei], path); err != nil {
				return Applied{}, err
			}
			changed, paths = append(changed, &t.Events[ei]), append(paths, path)
		}
	}
	stored := make([]catalog.StoredChannel, len(doc.Channels))
	for i, c := range doc.Channels {
		stored[i] = s.Sealer.Store(c)
	}
	next := merge(cur, doc.Tenants, stored)
	if s.afterCheck != nil {
		s.afterCheck()
	}
	// Capacities first: their scripts are where a sale racing this apply
	// can still refuse it (sold past a lowered capacity since the checks
	// above). Only once every event's capacities took is the record
	// written, so Postgres never keeps a document Redis refused. They too
	// are written only under the lock: a stalled apply's capacities would
	// overwrite those of the apply that took the lock over.
	if err := s.stillLocked(ctx, lock); err != nil {
		return Applied{}, err
	}
	undo, err := s.projectCaps(ctx, changed, paths)
	if err != nil {
		return Applied{}, err
	}
	if err := s.stillLocked(ctx, lock); err != nil {
		if !errors.Is(err, ErrLockLost) {
			undo(context.WithoutCancel(ctx))
		}
		// A lost lock may be another apply's now: putting capacities
		// back could undo its work, so they stay.
		return Applied{}, err
	}
	if s.Record != nil {
		// Under the lock's context: a write still running when the lock
		// is lost is cancelled, not committed.
		rctx, cancel := lock.Context(ctx)
		err := s.Record.Apply(rctx, doc.Tenants, stored)
		cancel()
		if err != nil {
			if lock.Err() != nil {
				return Applied{}, ErrLockLost // capacities stay, as above
			}
			undo(context.WithoutCancel(ctx))
			return Applied{}, fmt.Errorf("catalog: write record: %w", err)
		}
	}
	if err := s.stillLocked(ctx, lock); err != nil {
		return Applied{}, err
	}
	v, b, err := s.writeProjection(ctx, next)
	if err != nil {
		return Applied{}, err
	}
	// Serve the document just stored, decoded as Refresh would decode it,
	// without reading it back from Redis.
	p, err := decodeProjection(b)
	if err != nil {
		return Applied{}, err
	}
	applied := Applied{Tenants: len(doc.Tenants), Channels: len(doc.Channels), Events: len(changed)}
	return applied, s.install(v, p)
}

// stillLocked extends the apply lock and confirms it is still this apply's,
// right before a write it guards.
func (s *Store) stillLocked(ctx context.Context, lock *lease.Lease) error {
	err := lock.Extend(ctx)
	if errors.Is(err, lease.ErrLost) {
		return ErrLockLost
	}
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// checkSold refuses an event whose new capacities or seat map would undo a sale.
func (s *Store) checkSold(ctx context.Context, ev *catalog.Event, path string) error {
	res := s.Redis.DoMulti(ctx,
		s.Redis.B().Hgetall().Key(s.Space.Sold(ev.ID)).Build(),
		s.Redis.B().Hkeys().Key(s.Space.Booked(ev.ID)).Build())
	sold, err := res[0].AsIntMap()
	if err != nil {
		return fmt.Errorf("catalog: read sold: %w", err)
	}
	booked, err := res[1].AsStrSlice()
	if err != nil {
		return fmt.Errorf("catalog: read booked: %w", err)
	}
	ce := compileOne(ev)
	caps := ce.Caps()
	for f, n := range sold {
		if c, ok := caps[f]; ok && c < n {
			return &catalog.ValidationError{Path: path + capPath(ev, f),
				Msg: fmt.Sprintf("capacity %d is below the %d already sold", c, n)}
		}
	}
	sort.Strings(booked)
	for _, label := range booked {
		if _, ok := ce.SeatCategory(label); !ok {
			return &catalog.ValidationError{Path: path + ".seatMap",
				Msg: "seat " + label + " is booked and must stay in the seat map"}
		}
	}
	return nil
}

func capPath(ev *catalog.Event, field string) string {
	switch kind, id := capacity.Split(field); kind {
	case capacity.KindEvent:
		return ".capacity"
	case capacity.KindStorefront:
		return ".waitingRoom.allocations" // the room's stock is what they leave
	case capacity.KindChannel:
		return ".waitingRoom.allocations." + id
	}
	for i, t := range ev.Tickets {
		if field == capacity.TicketField(t.ID) {
			return fmt.Sprintf(".tickets[%d].capacity", i)
		}
	}
	for i, sh := range ev.Showings {
		if field == capacity.ShowingField(sh.ID) {
			return fmt.Sprintf(".showings[%d].capacity", i)
		}
	}
	for i, x := range ev.Extras {
		if field == capacity.ExtraField(x.ID) {
			return fmt.Sprintf(".extras[%d].capacity", i)
		}
	}
	if ev.SeatMap != nil {
		for i, a := range ev.SeatMap.GAAreas {
			if field == capacity.AreaField(a.ID) {
				return fmt.Sprintf(".seatMap.gaAreas[%d].capacity", i)
			}
		}
	}
	return ""
}

// uncappedFields lists the capacity fields (named as CompiledEvent.Caps
// names them) of objects still in ev that have no capacity: the event
// itself, showings and extras, and the sellers' shares of an event without
// a waiting room. catalog_caps removes them (uncapped) instead of freezing
// them as fields of removed objects.
func uncappedFields(ev *catalog.Event) []string {
	var out []string
	if ev.Capacity == nil {
		out = append(out, "ev")
	}
	if ev.WaitingRoom == nil {
		out = append(out, capacity.Storefront)
		for _, ch := range ev.Channels {
			out = append(out, capacity.ChannelField(ch))
		}
	}
	for _, sh := range ev.Showings {
		if sh.Capacity == nil {
			out = append(out, capacity.ShowingField(sh.ID))
		}
	}
	for _, x := range ev.Extras {
		if x.Capacity == nil {
			out = append(out, capacity.ExtraField(x.ID))
		}
	}
	return out
}

func compileOne(ev *catalog.Event) *catalog.CompiledEvent {
	snap, _ := catalog.Compile(0, []catalog.Tenant{{ID: ev.TenantID, Events: []catalog.Event{*ev}}}, nil, nil)
	return snap.Events[ev.ID]
}

// merge replaces objects of cur by id with those applied.
func merge(cur projected, tenants []catalog.Tenant, channels []catalog.StoredChannel) projected {
	byID := map[string]int{}
	out := projected{Tenants: append([]catalog.Tenant(nil), cur.Tenants...), Channels: append([]catalog.StoredChannel(nil), cur.Channels...)}
	for i, t := range out.Tenants {
		byID[t.ID] = i
	}
	for _, t := range tenants {
		i, ok := byID[t.ID]
		if !ok {
			out.Tenants = append(out.Tenants, t)
			byID[t.ID] = len(out.Tenants) - 1
			continue
		}
		old := out.Tenants[i].Events
		nt := t
		nt.Events = mergeEvents(old, t.Events)
		out.Tenants[i] = nt
	}
	// An event id belongs to one tenant: drop it from any other tenant.
	owner := map[string]string{}
	for _, t := range tenants {
		for _, e := range t.Events {
			owner[e.ID] = t.ID
		}
	}
	for i := range out.Tenants {
		kept := out.Tenants[i].Events[:0:0]
		for _, e := range out.Tenants[i].Events {
			if o, ok := owner[e.ID]; ok && o != out.Tenants[i].ID {
				continue
			}
			kept = append(kept, e)
		}
		out.Tenants[i].Events = kept
	}
	chIdx := map[string]int{}
	for i, c := range out.Channels {
		chIdx[c.ID] = i
	}
	for _, c := range channels {
		if i, ok := chIdx[c.ID]; ok {
			out.Channels[i] = c
		} else {
			out.Channels = append(out.Channels, c)
			chIdx[c.ID] = len(out.Channels) - 1
		}
	}
	return out
}

func mergeEvents(old, applied []catalog.Event) []catalog.Event {
	out := append([]catalog.Event(nil), old...)
	idx := map[string]int{}
	for i, e := range out {
		idx[e.ID] = i
	}
	for _, e := range applied {
		if i, ok := idx[e.ID]; ok {
			out[i] = e
		} else {
			out = append(out, e)
			idx[e.ID] = len(out) - 1
		}
	}
	return out
}

// projectCaps replaces the capacities of the changed events, one atomic
// script each. When one refuses, those already replaced get their previous
// capacities back and the refusal is returned; on success undo does the
// same for all of them (the record could not be written). A refusal's path
// starts at paths[i], the event's place in the applied document.
func (s *Store) projectCaps(ctx context.Context, changed []*catalog.Event, paths []string) (undo func(context.Context), err error) {
	prev := make([]map[string]int64, len(changed))
	caps := make([]map[string]int64, len(changed))
	if len(changed) > 0 {
		cmds := make(rueidis.Commands, len(changed))
		for i, ev := range changed {
			cmds[i] = s.Redis.B().Hgetall().Key(s.Space.Caps(ev.ID)).Build()
		}
		for i, r := range s.Redis.DoMulti(ctx, cmds...) {
			if prev[i], err = r.AsIntMap(); err != nil {
				return nil, fmt.Errorf("catalog: read capacities of %s: %w", changed[i].ID, err)
			}
		}
	}
	for i, ev := range changed {
		caps[i] = compileOne(ev).Caps()
		if err := s.replaceCaps(ctx, ev, caps[i], uncappedFields(ev)); err != nil {
			s.restoreCaps(context.WithoutCancel(ctx), changed[:i], caps[:i], prev[:i])
			if ve, ok := err.(*catalog.ValidationError); ok {
				ve.Path = paths[i] + ve.Path
			}
			return nil, err
		}
	}
	return func(ctx context.Context) { s.restoreCaps(ctx, changed, caps, prev) }, nil
}

// replaceCaps runs catalog_caps.lua for one event: caps become its
// capacities, the uncapped fields are removed, any other field is frozen
// at its sold count. A refusal is a *catalog.ValidationError whose path is
// relative to the event (".tickets[0].capacity").
func (s *Store) replaceCaps(ctx context.Context, ev *catalog.Event, caps map[string]int64, uncapped []string) error {
	fields := make([]string, 0, len(caps))
	for f := range caps {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	args := []string{strconv.Itoa(len(fields))}
	for _, f := range fields {
		args = append(args, f, strconv.FormatInt(caps[f], 10))
	}
	args = append(args, strconv.Itoa(len(uncapped)))
	args = append(args, uncapped...)
	arr, err := eval.Array(ctx, s.Redis, capsScript,
		[]string{s.Space.Caps(ev.ID), s.Space.Sold(ev.ID), s.Space.Live(keys.Partition(ev.ID))}, args)
	if err != nil {
		return fmt.Errorf("catalog: project capacities of %s: %w", ev.ID, err)
	}
	switch c, _ := reply.Of(arr); c {
	case reply.Stopped:
		return redisstate.ErrSalesStopped
	case reply.BelowSold:
		f, _ := eval.Str(arr, 1)
		n, _ := eval.Int(arr, 2)
		return &catalog.ValidationError{Path: capPath(ev, f),
			Msg: fmt.Sprintf("capacity is below the %d already sold", n)}
	case reply.OK:
		if frozen, _ := eval.Strs(arr, 1); len(frozen) > 0 {
			s.logger().Info("capacities of removed objects frozen at their sold counts", "event", ev.ID, "fields", frozen)
		}
	}
	return nil
}

// restoreCaps gives events the capacities they had before an apply that
// failed: the previous ones (prev), with the fields the apply added (in caps,
// the capacities it set, but not in prev) removed.
// Restoring is refused only where sales passed a previous capacity under
// the raised one meanwhile; those capacities stay raised, and the log says
// so, since the record and projection still hold the previous document.
func (s *Store) restoreCaps(ctx context.Context, events []*catalog.Event, caps, prev []map[string]int64) {
	for i, ev := range events {
		var added []string
		for f := range caps[i] {
			if _, ok := prev[i][f]; !ok {
				added = append(added, f)
			}
		}
		sort.Strings(added)
		if err := s.replaceCaps(ctx, ev, prev[i], added); err != nil {
			s.logger().Error("catalog: could not restore capacities after a failed apply; the raised ones stay",
				"event", ev.ID, "err", err)
		}
	}
}

// writeProjection stores the catalog document every node compiles and
// moves its version, so nodes reload it. It returns the new version and the
// document as stored.
func (s *Store) writeProjection(ctx context.Context, p projected) (int64, []byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return 0, nil, fmt.Errorf("catalog: encode projection: %w", err)
	}
	res := s.Redis.DoMulti(ctx,
		s.Redis.B().Set().Key(s.Space.CatalogDoc()).Value(string(b)).Build(),
		s.Redis.B().Incr().Key(s.Space.CatalogVersion()).Build())
	if err := res[0].Error(); err != nil {
		return 0, nil, fmt.Errorf("catalog: write projection: %w", err)
	}
	v, err := res[1].AsInt64()
	if err != nil {
		return 0, nil, fmt.Errorf("catalog: write projection: %w", err)
	}
	return v, b, nil
}
