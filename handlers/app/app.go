// Package app builds one ticketd node's HTTP application: the keepers of
// the Redis state (NewState), then the services, surfaces and loops of the
// API (New). cmd/ticketd and handlers/servertest both build through it, so
// a test server is wired as a production node is; what differs between
// them (keys, intervals, test processors' deliveries) is a setting here.
package app

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/lockout"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/pages"
	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/handlers/readiness"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/handlers/storefront"
	"github.com/ticketd/ticketd/handlers/webhooks"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/room"
	"github.com/ticketd/ticketd/inventory/seats"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/orderdb"
	"github.com/ticketd/ticketd/sync/rebuild"
	"github.com/ticketd/ticketd/sync/refunddb"
	"github.com/ticketd/ticketd/sync/unsynced"
	"github.com/ticketd/ticketd/sync/worker"
)

// Base is what both builders take: the stores, the catalog, the metric
// set and the logger of the node.
type Base struct {
	Redis rueidis.Client
	Space keys.Space
	// Pool is Postgres; nil runs without write-through (development).
	Pool    *pgxpool.Pool
	Catalog *catalogstore.Store
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// State keeps the Redis state: the monitor and its gate, the rebuilder
// (nil without Postgres) and the guard of sold marks and held events.
type State struct {
	Monitor   *redisstate.Monitor
	Rebuilder *rebuild.Rebuilder
	Guard     *rebuild.Guard
}

// NewState builds the monitor of the Redis state and, with Postgres, the
// rebuilder that restores it, and wires the guard into both. fixed, when
// set, is the durability the monitor reports instead of reading it (an
// embedded Redis). The caller checks the state, sets Monitor.Recover, and
// runs the monitor and Guard.Book.
func NewState(b Base, fixed *redisstate.Durability) State {
	mon := &redisstate.Monitor{Redis: b.Redis, Space: b.Space, Logger: b.Logger,
		OnCurrent: b.Catalog.Sync, OnRTT: b.Metrics.ObserveRedisRTT, OnChange: b.Metrics.StateChanged,
		FixedDurability: fixed}
	var rb *rebuild.Rebuilder
	if b.Pool != nil {
		mon.Record = &rebuild.Generations{Pool: b.Pool, Prefix: b.Space.Prefix}
		rb = &rebuild.Rebuilder{Redis: b.Redis, Space: b.Space, Pool: b.Pool, Catalog: b.Catalog, Logger: b.Logger}
	}
	g := rebuild.NewGuard(b.Redis, b.Space, b.Pool, b.Metrics.SetSalesHeld, b.Logger)
	g.WireState(mon, rb)
	return State{Monitor: mon, Rebuilder: rb, Guard: g}
}

// Keys are the secrets of the API. Production derives each from
// TICKETD_SECRETS_KEY, so every node has the same; tests name them.
type Keys struct {
	Sessions []byte // buyer sessions of the partner surface
	OrderIDs []byte // order ids
	Picker   []byte // the seat picker's page tokens
	Holds    []byte // the per-client hold counters
	Room     []byte // the waiting room's poll tokens, passes and shuffle keys
	// Tickets is the key tickets are signed under (tickets.NewKeys).
	Tickets string
	// CardWebhook and WalletWebhook sign the built-in processors'
	// webhooks; used only with TestPayments.
	CardWebhook, WalletWebhook string
}

// Settings tune the API. A zero duration or limit is the default of the
// service that reads it.
type Settings struct {
	// AppURL is the public base URL of ticketd's pages.
	AppURL string
	// AdminToken turns the admin surface on; "" leaves it off.
	AdminToken string
	// Trusted are the proxies whose X-Forwarded-For is believed.
	Trusted []netip.Prefix
	Keys    Keys

	OrderTTL, SeatHoldTTL, CheckoutTTL, RegisterHoldTTL time.Duration
	// Retention is how long orders, registrations and Idempotency-Keys
	// outlive their end in Redis.
	Retention time.Duration
	// HoldsPerIP bounds the unpaid registrations and hold tokens of a
	// client IP per event (0 counts none).
	HoldsPerIP int64
	// LockoutPerIP and LockoutPerKey are the failed authentications a
	// minute the lockout allows.
	LockoutPerIP, LockoutPerKey int64
	// MaxUnsynced stops sales while the sync backlog passes it (only with
	// Postgres: without it nothing drains the streams).
	MaxUnsynced unsynced.Limit
	// Replication has each sale wait for Redis replicas.
	Replication *redisstate.Replication
	// StorefrontTimeout bounds each storefront request's work.
	StorefrontTimeout time.Duration
	// RoomNearHead is how many places at the head of a waiting room's
	// line each tick lists for the polls (room.Service NearHead; 0: its
	// 200). Tests lower it to have far waiters without hundreds of joins.
	RoomNearHead int64

	// TestMode says payments are simulated (pages, registrations, /readyz);
	// TestPayments runs the built-in test processors.
	TestMode, TestPayments         bool
	CardProcessor, WalletProcessor string
	Stripe                         payments.StripeConfig
	StripeWalletMethods            []string
	StripeWebhookSecret            string
	// StorefrontCard, when set, is the card processor the storefront's
	// payment calls use, given the built-in test card (tests wrap it).
	StorefrontCard func(*payments.Hosted) payments.Processor

	// ClaimIdle is how long a paid stream entry waits pending with
	// another worker before the sync worker takes it over.
	ClaimIdle time.Duration
	// Paid, when set, is told the partition of each sale this node marks
	// paid (orders.Service.Paid): the node's own sync worker's Nudge, so
	// the order is written through at once.
	Paid func(partition int)

	// BacklogEvery and SweepEvery are the periods of the backlog reader
	// and of the sweep of expired checkout holds.
	BacklogEvery, SweepEvery time.Duration
}

// App is a built API: its handler and what the caller runs beside it.
type App struct {
	// Handler is the root handler, instrumented by Base.Metrics; the
	// caller serves it (server.New).
	Handler fasthttp.RequestHandler
	// Routes are the routes Handler serves: method -> path templates.
	Routes        map[string][]string
	Orders        *orders.Service
	Registrations *registrations.Service
	Sessions      *channel.Sessions
	Tickets       *tickets.Keys
	// Card and Wallet are the built-in test processors, nil without
	// TestPayments.
	Card, Wallet *payments.Hosted
	// Loops run beside the API until their ctx ends, and use Redis (the
	// sweep Postgres too): the backlog reader and the sweep of expired
	// checkout holds.
	Loops []func(context.Context)
	// Deliveries sends the built-in processors' owed webhooks until its
	// ctx ends; every node runs it, tests deliver on demand instead
	// (Hosted.DeliverDue).
	Deliveries func(context.Context)
	// Stopping answers the requests the node holds open (the waiting
	// room's long-polls) at once, now and from now on: call it as the
	// server starts to shut down, so that its drain waits for none.
	Stopping func()
}

// New builds the API of a node whose state st keeps.
func New(b Base, st State, s Settings) (*App, error) {
	log, m, rc, space := b.Logger, b.Metrics, b.Redis, b.Space
	m.SetLogger(log) // failed requests, by route
	ord := &orders.Service{Redis: rc, Space: space, OrderTTL: s.OrderTTL, IDKey: s.Keys.OrderIDs,
		Retention: s.Retention, IdempotencyTTL: s.Retention, Replication: s.Replication, Paid: s.Paid}
	if b.Pool != nil {
		// Status and confirm replays of orders that aged out of Redis.
		ord.Archive = orderdb.Store{Pool: b.Pool}
	} else {
		// Nothing will drain the paid streams: keep the newest entries only.
		ord.StreamCap = 100_000
	}
	st.Guard.WireOrders(ord)
	limiter := &ratelimit.Limiter{Redis: rc, Space: space}
	resolver := &clientip.Resolver{Trusted: s.Trusted}
	// One lockout for both surfaces: an IP guessing admin tokens is as
	// locked out of the partner surface as one guessing channel secrets.
	locks := &lockout.Guard{Limiter: limiter, Logger: log, PerIP: s.LockoutPerIP, PerKey: s.LockoutPerKey}
	// One reader of the sync backlog feeds /readyz, the metrics and the
	// MaxUnsynced gate; without Postgres nothing drains the streams, so
	// nothing is bounded.
	backlog := &readiness.Backlog{Redis: rc, Space: space, Metrics: m}
	if b.Pool != nil && !s.MaxUnsynced.Off() {
		backlog.Limit = &unsynced.Gate{Limit: s.MaxUnsynced, Logger: log, OnChange: m.UnsyncedChanged}
	}
	gate := backlog.Limit.After(st.Monitor.Gate) // every surface that sells
	sessions := &channel.Sessions{Secret: s.Keys.Sessions}
	eng := &seats.Engine{Redis: rc, Space: space, TTL: s.SeatHoldTTL}
	partner := &channel.API{Catalog: b.Catalog.Current, Orders: ord, Seats: eng, Limiter: limiter, ClientIP: resolver,
		Lockout: locks, Sessions: sessions, Gate: gate, Metrics: m, Logger: log}

	procs, err := payments.Open(payments.Config{
		CardProcessor: s.CardProcessor, WalletProcessor: s.WalletProcessor, TestPayments: s.TestPayments,
		Hosted:     payments.HostedConfig{Redis: rc, Space: space, AppURL: s.AppURL, Logger: log},
		CardSecret: s.Keys.CardWebhook, WalletSecret: s.Keys.WalletWebhook,
		Stripe: s.Stripe, StripeWalletMethods: s.StripeWalletMethods,
	})
	if err != nil {
		return nil, err
	}
	// The sweep and the webhooks wait while the Redis state is not
	// current (a Redis back from an older snapshot must neither give holds
	// back nor book payments); payments know each event's tenant and
	// cancellation from the catalog.
	regs := &registrations.Service{Redis: rc, Space: space, Orders: ord, CheckoutTTL: s.CheckoutTTL,
		HoldTTL: s.RegisterHoldTTL, Retention: s.Retention, StreamCap: ord.StreamCap, Expirer: procs.Set,
		Event: registrations.CatalogEvents(b.Catalog.Current), Gate: st.Monitor.Gate, Logger: log}
	if b.Pool != nil {
		regs.Archive = orderdb.Store{Pool: b.Pool}
	}
	tix := tickets.NewKeys(s.Keys.Tickets)
	hp := holds.Policy{Key: s.Keys.Holds, Limit: s.HoldsPerIP}
	// One room service for the storefront (joins, polls, passes), the
	// admin queue read and the /metrics room gauges.
	rooms := &room.Service{Redis: rc, Space: space, Key: s.Keys.Room, Logger: log, NearHead: s.RoomNearHead}
	m.WatchRooms(RoomEvents(b.Catalog.Current), rooms.Stats)
	card := procs.Card
	if s.StorefrontCard != nil && procs.TestCard != nil {
		card = s.StorefrontCard(procs.TestCard)
	}
	front := &storefront.API{
		Catalog: b.Catalog.Current, Orders: ord, Registrations: regs, Seats: eng,
		Card: card, Wallet: procs.Wallet, Processors: procs.Set, Tickets: tix, TestMode: s.TestMode,
		Limiter: limiter, ClientIP: resolver, Gate: gate, Timeout: s.StorefrontTimeout, Logger: log, Holds: hp,
		Room: rooms,
	}
	hooks := &webhooks.API{Booker: regs, Redis: rc, Space: space, CardSecret: testSecret(s, s.Keys.CardWebhook),
		WalletSecret: testSecret(s, s.Keys.WalletWebhook), StripeSecret: s.StripeWebhookSecret, StripeLive: !s.TestMode,
		Gate: gate, Logger: log}
	pick := &picker.Picker{Catalog: b.Catalog.Current, Seats: eng, Key: s.Keys.Picker, Limiter: limiter,
		ClientIP: resolver, Gate: gate, TestMode: s.TestMode, Logger: log, Holds: hp, Room: rooms}
	surfaces := []server.Surface{partner, front, hooks, pick}
	if procs.TestCard != nil && procs.TestWallet != nil {
		// The hosted pages exist only with the built-in processors.
		surfaces = append(surfaces, &pages.Pay{Card: procs.TestCard, Wallet: procs.TestWallet, Logger: log})
	}
	if b.Pool != nil {
		hooks.Refunds = refunddb.Store{Pool: b.Pool}
		surfaces = append(surfaces, &pages.Tickets{Orders: orderdb.Store{Pool: b.Pool}, Keys: tix, TestMode: s.TestMode, Logger: log})
	} else {
		// Without Postgres no refund can be recorded for the host's e-mail
		// (and no mail is sent): the log is where an operator finds it.
		hooks.Refunds = loggedRefunds{log: log}
	}
	if s.AdminToken == "" {
		log.Info("TICKETD_ADMIN_TOKEN is not set: the admin surface is off (/v1/admin/ answers 404 ADMIN_DISABLED, so ticketctl apply " +
			"and queue cannot reach it); set it, and give ticketctl the same token, to provision catalogs")
	}
	surfaces = append(surfaces, &admin.API{Token: s.AdminToken, Catalog: b.Catalog, Room: rooms, Gate: st.Monitor.Gate,
		ClientIP: resolver, Lockout: locks}, m)
	payMode := server.PaymentsLive
	if s.TestMode {
		payMode = server.PaymentsSimulated
	}
	health := readiness.WithHeld(readiness.WithPayments(readiness.Health(st.Monitor, b.Pool, backlog), payMode), st.Guard.Held.List)
	sweepEvery := s.SweepEvery
	if sweepEvery <= 0 {
		sweepEvery = time.Second
	}
	backlogEvery := s.BacklogEvery
	if backlogEvery <= 0 {
		backlogEvery = 500 * time.Millisecond
	}
	routes := server.Router(health, surfaces...)
	return &App{
		Handler: m.Instrument(routes.Handler), Routes: routes.List(),
		Orders: ord, Registrations: regs, Sessions: sessions, Tickets: tix, Card: procs.TestCard, Wallet: procs.TestWallet,
		Loops: []func(context.Context){
			func(ctx context.Context) { backlog.Run(ctx, backlogEvery) },
			func(ctx context.Context) { regs.Run(ctx, sweepEvery) },
			// a lapsed pass or hold gives its units to the next in line
			// within a tenth of a second (a quarter in a sold-out room at
			// rest), though nobody polls, and the long-polls hear of a
			// change (a sell-out) as fast
			func(ctx context.Context) { rooms.Run(ctx, room.TickEvery, b.Catalog.Current) },
		},
		Deliveries: procs.Run,
		Stopping:   rooms.StopWaits,
	}, nil
}

// NewWorker builds the sync worker that writes paid orders through to
// Postgres (b.Pool, which it needs); the caller ensures its groups and
// runs it, or drains on demand.
func NewWorker(b Base, s Settings) *worker.Worker {
	return &worker.Worker{Redis: b.Redis, Space: b.Space, Pool: b.Pool, Logger: b.Logger, ClaimIdle: s.ClaimIdle, Retention: s.Retention,
		Replication: s.Replication}
}

// RoomEvents lists, from the current catalog, the waiting rooms
// (CompiledEvent.Room, a line per showing on a multi-showing event) by
// room id, sorted: those /metrics shows.
func RoomEvents(current func() *catalog.Snapshot) func() []string {
	return func() []string {
		snap := current()
		if snap == nil {
			return nil
		}
		var out []string
		for _, ev := range snap.Events {
			if ev.Room != nil {
				for _, l := range ev.Room.Lines() {
					out = append(out, l.ID)
				}
			}
		}
		slices.Sort(out)
		return out
	}
}

// testSecret is a built-in processor's webhook secret: none without test
// payments, so its webhook is not mounted either.
func testSecret(s Settings, secret string) string {
	if !s.TestPayments {
		return ""
	}
	return secret
}

// loggedRefunds records a refund a payment needs by logging it at Error
// level, on a node without Postgres: the webhook is then answered 200, as
// its payment is handled as far as this node can (a 503 would be retried
// for as long as the processor tries, to the same end). The log names the
// payment, never the buyer.
type loggedRefunds struct{ log *slog.Logger }

func (l loggedRefunds) Refund(_ context.Context, o registrations.Outcome, p registrations.Payment) error {
	reason := o.RefundReason
	if reason == "" {
		reason = o.Reason
	}
	l.log.Error("storefront: refund required: refund this payment through the processor (no Postgres to record it for the host)",
		"registration", o.ID, "processor", p.Processor, "payment", p.PaymentID, "reason", reason,
		"amount", p.Amount.String(), "currency", strings.ToUpper(p.Currency))
	return nil
}
