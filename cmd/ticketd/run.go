package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/cmd/internal/connurl"
	"github.com/ticketd/ticketd/handlers/app"
	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/roundtrips"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/catalogdb"
	"github.com/ticketd/ticketd/sync/mailer"
	"github.com/ticketd/ticketd/sync/schema"
)

//go:embed demo.json
var demoCatalog []byte

type options struct {
	API, Worker, Demo bool
	// DemoSite serves the demo shop (handlers/demosite) on cfg.DemoAddr
	// beside the API; DemoReady, when not nil, receives its address.
	DemoSite  bool
	DemoReady chan<- string
	// MemoryLimit keeps the Go soft memory limit following the open
	// connections (connlimit.GovernMemory): the process's own, so only
	// main sets it, and only without GOMEMLIMIT.
	MemoryLimit bool
	// wrap, when set, wraps the node's handler: the tests' check of every
	// answer against the OpenAPI document (servertest.Validating).
	wrap func(fasthttp.RequestHandler) fasthttp.RequestHandler
}

// run starts what opts asks for and blocks until ctx ends, then shuts down
// gracefully: in-flight requests and the current sync batch finish. ready,
// when not nil, receives the listening address.
func run(ctx context.Context, cfg config, opts options, log *slog.Logger, ready chan<- string) error {
	if err := cfg.checkMode(); err != nil {
		return err
	}
	if opts.Demo && !cfg.Development {
		return errDemoInProduction
	}
	rc, closeRedis, embedded, err := connectRedis(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeRedis()
	// Every script's library loaded now rather than at its first call
	// (docs/decisions.md, Scripts as Redis functions); a failure only
	// defers the loads to the first calls.
	if err := eval.Install(ctx, rc); err != nil {
		log.Warn("redis: the scripts' libraries are not all installed; each loads at its first call", "err", err)
	}
	trips := &roundtrips.Counter{} // ticketd_redis_round_trips_total: the bench's round trips per unit
	rc = roundtrips.Wrap(rc, trips)
	pool, err := connectPostgres(ctx, cfg, log)
	if err != nil {
		return err
	}
	if pool != nil {
		defer pool.Close()
	}
	space := keys.Space{Prefix: cfg.KeyPrefix}
	logMode(cfg, log)

	secretsKey := cfg.SecretsKey
	if secretsKey == "" {
		log.Warn("TICKETD_SECRETS_KEY is not set: signing keys are sealed at rest with a development key; set it in production")
		secretsKey = tickets.DevelopmentSecretsKey
	}
	store := &catalogstore.Store{Redis: rc, Space: space, Sealer: catalog.NewSealer(secretsKey), Logger: log}
	if pool != nil {
		store.Record = &catalogdb.Store{Pool: pool}
	}
	m := metrics.New()
	m.CountRedisRoundTrips(trips)
	base := app.Base{Redis: rc, Space: space, Pool: pool, Catalog: store, Metrics: m, Logger: log}
	var fixed *redisstate.Durability
	if embedded {
		fixed = &redisstate.Durability{Loses: redisstate.LosesEverything, Settings: "embedded in-process Redis"}
	}
	// Sold marks and held events (docs/decisions.md, Durability and recovery).
	state := app.NewState(base, fixed)
	mon, rebuilder, guard := state.Monitor, state.Rebuilder, state.Guard
	repl := &redisstate.Replication{Replicas: cfg.RedisWaitReplicas, Timeout: cfg.RedisWaitTimeout}
	mon.Replication = repl
	m.WatchReplication(mon, repl)
	if err := startState(ctx, cfg, mon, rebuilder, m, log); err != nil {
		return err
	}
	if rebuilder != nil && cfg.Recovery == recoveryAuto {
		mon.Recover = rebuilder.Recoverer(m.RebuildDone)
	}
	if err := store.Refresh(ctx); err != nil {
		return err
	}
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBg()
	go mon.Run(bgCtx, 250*time.Millisecond)
	if opts.Demo {
		if err := applyDemo(ctx, store, cfg, opts.DemoSite, log); err != nil {
			return err
		}
	}

	// The sync worker, the mailer and the storefront's loops run under
	// loopsCtx and wg. Every way out, a failed start included, stops them
	// and waits (the worker's batch, a sweep, a webhook delivery) before
	// the pool and the Redis client close.
	var wg sync.WaitGroup
	loopsCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopLoops(); wg.Wait() }()
	startLoops(loopsCtx, &wg, []func(context.Context){guard.Book.Run})
	var nudge func(partition int) // the worker's, for the API's sales
	if opts.Worker && pool != nil {
		ws := appSettings(cfg, secretsKey)
		ws.Replication = repl
		w := app.NewWorker(base, ws)
		if err := w.EnsureGroups(ctx); err != nil {
			return err
		}
		nudge = w.Nudge
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(loopsCtx); err != nil {
				log.Error("sync worker stopped", "err", err)
			}
		}()
		log.Info("sync worker running")
		// The mailer sends what the worker queues (outbox), beside it.
		mcfg, err := mailer.ConfigFromEnv(os.Getenv, cfg.AppURL)
		if err != nil {
			return err
		}
		mcfg.TestMode = cfg.testMode()
		ml, err := mailer.New(mcfg, pool, tickets.NewKeys(secretsKey), cfg.AppURL, log)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ml.Run(loopsCtx); err != nil {
				log.Error("mailer stopped", "err", err)
			}
		}()
	}

	if !opts.API {
		<-ctx.Done()
		return nil
	}

	trusted, err := clientip.ParsePrefixes(cfg.TrustedProxies)
	if err != nil {
		return fmt.Errorf("TICKETD_TRUSTED_PROXIES: %w", err)
	}
	settings := appSettings(cfg, secretsKey)
	settings.Trusted, settings.Replication, settings.Paid = trusted, repl, nudge
	node, err := app.New(base, state, settings)
	if err != nil {
		return err
	}
	startLoops(loopsCtx, &wg, nodeLoops(node))
	conns := newConnGuard(cfg.Conn, trusted, m, log)
	handler := node.Handler
	if opts.wrap != nil {
		handler = opts.wrap(handler)
	}
	srv := server.New(handler, server.AdminToken(cfg.AdminToken), server.Logger(log), server.BodyBudget(conns.bodies))

	// Both listeners first: ready means the API and the shop both answer,
	// and a busy TICKETD_DEMO_ADDR fails the start rather than a running
	// node without its shop.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	ln = conns.wrap(ln, opts.MemoryLimit)
	var shop *fasthttp.Server
	var shopLn net.Listener
	if opts.DemoSite {
		shop, shopLn, err = demoShop(cfg, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
	}
	log.Info("ticketd listening", "addr", ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	if opts.DemoReady != nil && shopLn != nil {
		opts.DemoReady <- shopLn.Addr().String()
	}
	serveErr := make(chan error, 2)
	serve := func(name string, s *fasthttp.Server, l net.Listener) {
		err := s.Serve(l)
		if err == nil {
			err = errors.New("stopped")
		}
		serveErr <- fmt.Errorf("%s: serve: %w", name, err)
	}
	go serve("api", srv, ln)
	if shop != nil {
		go serve("demo shop", shop, shopLn)
	}
	// Either server failing stops the node: the other is shut down too.
	var failed error
	select {
	case failed = <-serveErr:
		log.Error("a server stopped: shutting down", "err", failed)
	case <-ctx.Done():
		log.Info("shutting down: finishing in-flight requests and the current sync batch")
	}
	node.Stopping()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var down sync.WaitGroup
	shutdown := func(name string, s *fasthttp.Server) {
		down.Add(1)
		go func() {
			defer down.Done()
			if err := s.ShutdownWithContext(sctx); err != nil {
				log.Warn(name+" shutdown", "err", err)
			}
		}()
	}
	shutdown("api", srv)
	if shop != nil {
		shutdown("demo shop", shop)
	}
	down.Wait()
	// The server drained: no request needs the loops any more.
	stopLoops()
	wg.Wait()
	if failed != nil {
		return failed
	}
	log.Info("ticketd stopped")
	return nil
}

// startLoops runs each loop in a goroutine of its own, counted in wg,
// until ctx ends.
func startLoops(ctx context.Context, wg *sync.WaitGroup, loops []func(context.Context)) {
	for _, loop := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
}

// connectRedis connects to REDIS_URL. When Redis is not reachable and
// REDIS_URL was not set, it starts an embedded in-process Redis (miniredis)
// that runs the same Lua scripts, so a first `make run` works anywhere.
func connectRedis(ctx context.Context, cfg config, log *slog.Logger) (c rueidis.Client, closer func(), embedded bool, err error) {
	opt, err := rueidis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, false, fmt.Errorf("REDIS_URL: %w", connurl.RedisError(err))
	}
	opt.DisableCache = true
	opt.Dialer.Timeout = 2 * time.Second
	// Under load, wait up to this long after each write so that concurrent
	// requests' commands leave in one syscall: far fewer writes for a few
	// microseconds of latency (the profile showed write syscalls dominate).
	opt.MaxFlushDelay = cfg.RedisFlushDelay
	c, err = newRedisClient(ctx, opt, cfg.RedisConnections, log)
	if err == nil {
		return c, c.Close, false, nil
	}
	if cfg.RedisURLSet {
		return nil, nil, false, fmt.Errorf("redis at %s: %w", urlHost(cfg.RedisURL, "REDIS_URL"), err)
	}
	if !cfg.Development {
		// An embedded Redis loses every sale when the process stops: never
		// in production.
		return nil, nil, false, fmt.Errorf("redis at %s (REDIS_URL unset): %w; production never falls back to an embedded Redis: "+
			"start Redis or set REDIS_URL", urlHost(cfg.RedisURL, "REDIS_URL"), err)
	}
	if cfg.RedisWaitReplicas > 0 {
		// Every sale would wait for replicas an embedded Redis never has.
		return nil, nil, false, fmt.Errorf("redis at %s (REDIS_URL unset): %w; TICKETD_REDIS_WAIT_REPLICAS=%d needs a Redis with replicas, "+
			"and the embedded one has none: start Redis or set REDIS_URL", urlHost(cfg.RedisURL, "REDIS_URL"), err, cfg.RedisWaitReplicas)
	}
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		return nil, nil, false, fmt.Errorf("embedded redis: %w", err)
	}
	log.Warn("!!! Redis is not reachable at " + urlHost(cfg.RedisURL, "REDIS_URL") + ": running on an EMBEDDED IN-PROCESS Redis (miniredis). " +
		"State is lost when ticketd stops and only this process can see it. Set REDIS_URL for a real deployment. !!!")
	c, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		m.Close()
		return nil, nil, false, fmt.Errorf("embedded redis: %w", err)
	}
	return c, func() { c.Close(); m.Close() }, true, nil
}

// connectPostgres connects to DATABASE_URL and migrates it. When Postgres is
// not reachable and DATABASE_URL was not set, ticketd runs without
// write-through: nothing is durable, and it says so.
func connectPostgres(ctx context.Context, cfg config, log *slog.Logger) (*pgxpool.Pool, error) {
	err := ensureDefaultDatabase(ctx, cfg)
	var pool *pgxpool.Pool
	if err == nil {
		pool, err = pgxpool.New(ctx, cfg.DatabaseURL)
		err = connurl.PostgresError(err)
	}
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		if cfg.DatabaseURLSet {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if !cfg.Development {
			// Without write-through no paid order is durable: never in
			// production.
			return nil, fmt.Errorf("postgres (DATABASE_URL unset): %w; production never runs without write-through: "+
				"start PostgreSQL or set DATABASE_URL", err)
		}
		log.Warn("!!! PostgreSQL is not reachable at " + urlHost(cfg.DatabaseURL, "DATABASE_URL") + ": write-through is OFF. Paid orders stay only in Redis; NOTHING IS DURABLE. " +
			"Set DATABASE_URL for a real deployment. !!!")
		return nil, nil
	}
	if err := schema.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return pool, nil
}

func applyDemo(ctx context.Context, store *catalogstore.Store, cfg config, shop bool, log *slog.Logger) error {
	doc, err := catalog.Decode(demoCatalog)
	if err == nil {
		demoRoomTimes(doc, time.Now(), cfg.demoRoomT0, cfg.demoRoomWork)
		err = catalog.Validate(doc)
	}
	if err != nil {
		return fmt.Errorf("demo catalog: %w", err)
	}
	for {
		_, err = store.Apply(ctx, doc)
		if !errors.Is(err, catalogstore.ErrBusy) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("demo catalog: %w", err)
	}
	log.Info("demo catalog applied", "tenant", "t_demo", "channel", "ch_demo", "events", strings.Join(demoEvents, ", "))
	printDemo(os.Stdout, cfg, shop)
	return nil
}

// ensureDefaultDatabase creates the default database (DATABASE_URL unset)
// when the local server does not have it yet, so a first `make run` works
// without filling the server's shared "postgres" database with tables. An
// explicit DATABASE_URL is the operator's: it must exist.
func ensureDefaultDatabase(ctx context.Context, cfg config) error {
	if cfg.DatabaseURLSet {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	pcfg, err := pgx.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return connurl.PostgresError(err)
	}
	name := pcfg.Database
	pcfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(cctx, pcfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(cctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(cctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P04" { // created meanwhile by another node
		return nil
	}
	return err
}

// durableConnections is how many connections ticketd opens to a Redis
// that fsyncs every write when TICKETD_REDIS_CONNECTIONS is unset.
const durableConnections = 4

// newRedisClient connects with conns pipelined connections per Redis node
// (rueidis sends each command down one of them at random). With conns 0
// it chooses: one connection (every command of every request shares its
// writes and reads: the least CPU), or durableConnections to a Redis with
// appendfsync always. Such a Redis fsyncs once per event loop before it
// answers, and reads at most 16 KB from each connection per loop, so over
// one connection a loop carries a few pairs' commands and its fsync; over
// four it carries four times as many for the same fsync (bench
// flash-durable: 69-72% of the throughput without persistence over one
// connection, 76-84% over four).
func newRedisClient(ctx context.Context, opt rueidis.ClientOption, conns int, log *slog.Logger) (rueidis.Client, error) {
	multiplex := func(n int) int {
		if n <= 1 {
			return -1 // rueidis takes the log2 of the count, and 0 as its own default
		}
		return bits.Len(uint(n)) - 1
	}
	opt.PipelineMultiplex = multiplex(conns)
	c, err := rueidis.NewClient(opt)
	if err != nil || conns != 0 {
		return c, err
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	d, err := redisstate.ReadDurability(dctx, c)
	cancel()
	if err != nil || d.Loses != redisstate.LosesNothing {
		return c, nil
	}
	c.Close()
	log.Info("Redis fsyncs every write (appendfsync always): using more connections to it, so each fsync covers more commands",
		"connections", durableConnections)
	opt.PipelineMultiplex = multiplex(durableConnections)
	return rueidis.NewClient(opt)
}
