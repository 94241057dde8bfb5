package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/cpuprofile"
	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/bench/redisuse"
	"github.com/ticketd/ticketd/bench/scenario"
	"github.com/ticketd/ticketd/inventory/loopback"
)

// Local defaults, as ticketd's own.
const (
	defaultRedisURL    = "redis://127.0.0.1:6379"
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
)

// deployment is what the scenarios run against, and what the bench needs
// to start the comparisons beside it.
type deployment struct {
	describe    string
	api         *api.Client
	addr        string
	redis       rueidis.Client // nil when unknown (-target without -redis-url)
	redisURL    string
	prefix      string // ticketd's key prefix
	prefixKnown bool
	benchPrefix string // keys the bench itself writes (redis-benchmark)
	record      scenario.Record
	recordWhy   string
	root        string   // the module, to build ticketd and the baseline
	tmp         string   // built binaries
	ticketdBin  string   // the built ticketd; empty with -target
	ticketdEnv  []string // -ticketd-env
	ticketdPID  int      // the ticketd the bench started; 0 with -target
	dbServer    string   // where the baseline's database is created
	outDir      string   // logs
	stamp       string
	allow       []string
	drain       time.Duration
	cpu         *cpuuse.Meter // ticketd, its stores and the load generator; nil off Linux
	// cluster is the Redis Cluster the bench started (-redis-cluster), nil
	// otherwise; it is removed whole at the end.
	cluster *procs.Cluster
	// cardSecret is ticketd's TICKETD_CARD_WEBHOOK_SECRET: the storefront
	// scenarios sign the card webhook with it. Empty when unknown.
	cardSecret string
	// use reads ticketd's Redis round trips and its Redis's commands over
	// each timed run.
	use *redisuse.Meter
	// pprofAddr, when set, is the TICKETD_PPROF_ADDR of the ticketd the
	// bench starts (-profile), and prof profiles it.
	pprofAddr string
	prof      *cpuprofile.Profiler
}

// env is a fresh scenario environment: a new run id, so every run
// provisions its own catalog objects.
func (d *deployment) env() *scenario.Env {
	return &scenario.Env{API: d.api, Addr: d.addr, Run: newRunID(), Allow: d.allow, Record: d.record, RecordWhy: d.recordWhy,
		Redis: d.redis, KeyPrefix: d.prefix, PrefixKnown: d.prefixKnown, DrainTimeout: d.drain, CPU: d.cpu,
		CardWebhookSecret: d.cardSecret, Extra: d.use}
}

func newRunID() string { return "b" + randomHex(4) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// deploy starts ticketd (or, with -target, connects to a running one).
func deploy(ctx context.Context, c config, stack *procs.Stack) (*deployment, error) {
	d := &deployment{stamp: time.Now().Format("20060102-150405"), drain: c.DrainTimeout, ticketdEnv: c.TicketdEnv}
	for _, a := range strings.Split(c.Allow, ",") {
		if a = strings.TrimSpace(a); a != "" {
			d.allow = append(d.allow, a)
		}
	}
	root, err := procs.ModuleRoot(ctx)
	if err == nil {
		d.root = root
		d.outDir = filepath.Join(root, "bench", "out")
	} else if c.Target == "" {
		return nil, err
	} else {
		d.outDir = os.TempDir()
	}
	if err := os.MkdirAll(d.outDir, 0o755); err != nil {
		return nil, err
	}
	if d.tmp, err = os.MkdirTemp("", "ticketd-bench-"); err != nil {
		return nil, err
	}
	stack.Push("remove built binaries", func(context.Context) error { return os.RemoveAll(d.tmp) })
	if c.Target != "" {
		return d, d.connectTarget(ctx, c, stack)
	}
	return d, d.startLocal(ctx, c, stack)
}

// connectRedis connects and checks Redis answers.
func connectRedis(ctx context.Context, redisURL string) (rueidis.Client, error) {
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL %q: %w", redisURL, err)
	}
	opt.DisableCache = true
	opt.Dialer.Timeout = 3 * time.Second
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("redis at %s is not reachable (make services): %w", redisURL, err)
	}
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, fmt.Errorf("redis at %s: %w", redisURL, err)
	}
	return rc, nil
}

// startLocal builds ticketd and starts it as its own process on a fresh
// database and key prefix, with a random admin token.
func (d *deployment) startLocal(ctx context.Context, c config, stack *procs.Stack) error {
	d.redisURL = first(c.RedisURL, os.Getenv("REDIS_URL"), defaultRedisURL)
	d.dbServer = first(c.DatabaseURL, os.Getenv("DATABASE_URL"), defaultDatabaseURL)
	ownRedis := c.RedisCluster > 0
	if ownRedis {
		fmt.Fprintf(os.Stderr, "bench: starting a Redis Cluster of %d masters (redis-server --cluster-enabled yes, redis-cli --cluster create)\n", c.RedisCluster)
		cl, err := procs.StartCluster(ctx, c.RedisCluster, filepath.Join(d.outDir, "redis-cluster-"+d.stamp))
		if err != nil {
			return err
		}
		stack.Push("stop the redis cluster", func(context.Context) error { return cl.Stop(10 * time.Second) })
		d.redisURL, d.cluster = cl.URL(), cl
	}
	rc, err := connectRedis(ctx, d.redisURL)
	if err != nil {
		return err
	}
	d.redis = rc
	stack.Push("close redis", func(context.Context) error { rc.Close(); return nil })

	fmt.Fprintln(os.Stderr, "bench: building ticketd (go build ./cmd/ticketd)")
	d.ticketdBin = filepath.Join(d.tmp, "ticketd")
	if err := procs.Build(ctx, d.root, "./cmd/ticketd", d.ticketdBin); err != nil {
		return err
	}
	if c.Profile != "" {
		if d.pprofAddr, err = loopback.FreeAddr(); err != nil {
			return err
		}
	}
	if err := d.startTicketd(ctx, stack, "ticketd", !ownRedis); err != nil {
		return err
	}
	if d.pprofAddr != "" {
		d.prof = cpuprofile.New("http://" + d.pprofAddr)
	}
	d.cpu = d.meter(ctx, d.dbServer, cpuuse.Process("ticketd", d.ticketdPID))
	return nil
}

// startTicketd starts the built ticketd on d's Redis with a fresh key
// prefix, database and admin token; its clean-up goes on stack. sharedRedis
// deletes its keys at the end (a Redis the bench owns is removed whole).
func (d *deployment) startTicketd(ctx context.Context, stack *procs.Stack, name string, sharedRedis bool) error {
	d.prefix, d.prefixKnown = "bench:"+randomHex(6)+":", true
	d.benchPrefix = d.prefix
	if sharedRedis {
		rc, prefix := d.redis, d.prefix
		stack.Push("delete the bench's redis keys", func(ctx context.Context) error {
			n, err := redismem.DeletePrefix(ctx, rc, prefix)
			if err == nil {
				fmt.Fprintf(os.Stderr, "bench: deleted %d redis keys under %s\n", n, prefix)
			}
			return err
		})
	}
	dbURL, drop, err := procs.CreateDatabase(ctx, d.dbServer, "ticketd_bench_")
	if err != nil {
		return err
	}
	stack.Push("drop "+name+"'s database", drop)
	addr, err := loopback.FreeAddr()
	if err != nil {
		return err
	}
	token := randomHex(16)
	d.cardSecret = "whsec_" + randomHex(16)
	env := []string{"TICKETD_ADDR=" + addr, "REDIS_URL=" + d.redisURL, "DATABASE_URL=" + dbURL, "TICKETD_ADMIN_TOKEN=" + token,
		"TICKETD_KEY_PREFIX=" + d.prefix, "TICKETD_SECRETS_KEY=" + randomHex(16), "TICKETD_LOG_FORMAT=text",
		// The bench plays the test card processor: development mode.
		"TICKETD_ENV=development",
		// The storefront scenarios: the bench plays the card processor and
		// signs its webhook; each simulated buyer has its own client
		// address in X-Forwarded-For, believed from loopback only. The
		// mailer sends nothing: the outbox rows are still written (one per
		// order and kind); rendering an e-mail with QR images for each of a
		// flash run's orders is not what the bench measures.
		"TICKETD_CARD_WEBHOOK_SECRET=" + d.cardSecret, "TICKETD_TRUSTED_PROXIES=127.0.0.1/32,::1/128", "TICKETD_MAIL=off"}
	if d.pprofAddr != "" {
		env = append(env, "TICKETD_PPROF_ADDR="+d.pprofAddr)
	}
	env = append(env, d.ticketdEnv...) // later entries win
	for _, kv := range d.ticketdEnv {
		if v, ok := strings.CutPrefix(kv, "TICKETD_CARD_WEBHOOK_SECRET="); ok {
			d.cardSecret = v
		}
	}
	p, err := procs.Start(name, d.ticketdBin, nil, env, filepath.Join(d.outDir, name+"-"+d.stamp+".log"))
	if err != nil {
		return err
	}
	stack.Push("stop "+name, func(context.Context) error { return p.Stop(30 * time.Second) })
	d.addr, d.ticketdPID = addr, p.PID()
	d.api = &api.Client{Base: "http://" + addr, AdminToken: token}
	d.use = redisuse.New(d.redis, d.api.Base)
	if err := waitUp(ctx, d.api, p, "/readyz", time.Minute); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	stack.Push("close "+name+"'s record pool", func(context.Context) error { pool.Close(); return nil })
	d.record = integrity.Postgres{Pool: pool}
	d.describe = fmt.Sprintf("%s started by the bench on %s (own process; Redis %s prefix %s; fresh Postgres database; log %s)",
		name, addr, d.redisURL, d.prefix, p.Log)
	if d.cluster != nil {
		d.describe += "; " + d.cluster.Describe()
	} else if d.redis.Mode() == rueidis.ClientModeCluster {
		d.describe += "; Redis Cluster of " + strconv.Itoa(len(d.redis.Nodes())) + " nodes"
	}
	if len(d.ticketdEnv) > 0 {
		d.describe += "; extra environment " + strings.Join(d.ticketdEnv, " ")
	}
	fmt.Fprintf(os.Stderr, "bench: %s up on %s (log %s)\n", name, addr, p.Log)
	return nil
}

// waitUp waits until GET path answers 200 (ticketd's /readyz: Redis and
// Postgres reachable), failing fast with the log's tail if the process dies.
func waitUp(ctx context.Context, a *api.Client, p *procs.Proc, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := a.Do(ctx, "GET", path, nil, nil, nil, nil)
		if err == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited while starting:\n%s", p.Name, p.Tail(20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not 200 after %s: %v\n%s", p.Name, path, timeout, err, p.Tail(20))
		}
	}
}

// connectTarget measures a running deployment: the bench provisions its
// catalogs there with the admin token; Redis and Postgres are optional.
func (d *deployment) connectTarget(ctx context.Context, c config, stack *procs.Stack) error {
	u, err := url.Parse(c.Target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-target %q is not a base URL such as http://127.0.0.1:8080", c.Target)
	}
	if u.Scheme != "http" {
		return errors.New("-target: the load generator speaks plain HTTP; point it at ticketd's HTTP listener")
	}
	if c.AdminToken == "" {
		return errors.New("-target needs -admin-token (or TICKETD_ADMIN_TOKEN): every scenario provisions its own catalog")
	}
	d.addr = u.Host
	if u.Port() == "" {
		d.addr = net.JoinHostPort(u.Hostname(), "80")
	}
	d.api = &api.Client{Base: strings.TrimSuffix(c.Target, "/"), AdminToken: c.AdminToken}
	if err := d.api.Healthy(ctx, 10*time.Second); err != nil {
		return err
	}
	d.dbServer = first(c.BaselineDBURL, defaultDatabaseURL)
	d.cardSecret = c.CardSecret
	d.describe = c.Target + " (a running deployment: the bench catalogs it provisions stay there)"
	d.benchPrefix = "bench:" + randomHex(6) + ":"
	if c.RedisURL != "" {
		rc, err := connectRedis(ctx, c.RedisURL)
		if err != nil {
			return err
		}
		stack.Push("close redis", func(context.Context) error { rc.Close(); return nil })
		d.redis, d.redisURL = rc, c.RedisURL
		d.prefix, d.prefixKnown = c.KeyPrefix, c.prefixSet
	}
	// Every API node's /metrics: behind a load balancer -target reaches one.
	nodes := []string{d.api.Base}
	if c.MetricsURLs != "" {
		nodes = nil
		for _, n := range strings.Split(c.MetricsURLs, ",") {
			if n = strings.TrimSpace(n); n != "" {
				nodes = append(nodes, strings.TrimSuffix(n, "/"))
			}
		}
	}
	d.use = redisuse.New(d.redis, nodes...)
	d.cpu = d.meter(ctx, c.DatabaseURL) // ticketd is not the bench's child: its pid is unknown
	if c.DatabaseURL == "" {
		d.recordWhy = "no -database-url: Postgres not checked"
		return nil
	}
	pool, err := pgxpool.New(ctx, c.DatabaseURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("-database-url: %w", err)
	}
	stack.Push("close the record's pool", func(context.Context) error { pool.Close(); return nil })
	d.record = integrity.Postgres{Pool: pool}
	return nil
}
