package redisstate_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func monitor(rc rueidis.Client, space keys.Space) *redisstate.Monitor {
	return &redisstate.Monitor{Redis: rc, Space: space, Logger: quiet()}
}

func expectStatus(t *testing.T, v redisstate.View, want redisstate.Status) {
	t.Helper()
	if v.Status != want {
		t.Fatalf("status %s (%s), want %s", v.Status, v.Reason, want)
	}
}

// A live state sells; a Redis that lost it (restarted empty), or one
// partition's marker, stops sales with a 503 until a new generation is
// published, and recovery is asked for with the generation found bad.
func TestLossStopsSalesUntilANewGenerationIsPublished(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	m := monitor(rc, space)
	var asked atomic.Value
	m.Recover = func(_ context.Context, bad string) error { asked.Store(bad); return nil }

	expectStatus(t, m.Check(ctx), redisstate.Current)
	if e := m.Gate(); e != nil {
		t.Fatalf("gate while current: %v", e)
	}

	if err := rc.Do(ctx, rc.B().Del().Key(space.Live(17)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	v := m.Check(ctx)
	expectStatus(t, v, redisstate.Lost)
	if e := m.Gate(); e == nil || e.Status != 503 || e.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("gate after a lost partition: %v, want 503 SERVICE_UNAVAILABLE", e)
	}
	waitAsked(t, &asked, "test")

	redistest.Flush(t, rc, space) // restarted empty
	expectStatus(t, m.Check(ctx), redisstate.Lost)

	if err := redisstate.Publish(ctx, rc, space, "g2"); err != nil {
		t.Fatal(err)
	}
	v = m.Check(ctx)
	expectStatus(t, v, redisstate.Current)
	if v.Gen != "g2" || m.Gate() != nil {
		t.Fatalf("after publishing g2: %+v, gate %v", v, m.Gate())
	}
}

func waitAsked(t *testing.T, asked *atomic.Value, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, ok := asked.Load().(string); ok {
			if v != want {
				t.Fatalf("recovery asked for generation %q, want %q", v, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("recovery was not asked for")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A Redis that went back to an older snapshot of the same generation
// shows a sequence number no higher than the node saw: stale, and it stays
// stale however far the old snapshot counts on, until a rebuild publishes
// a new generation.
func TestRollbackIsStaleUntilRebuilt(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	m := monitor(rc, space)
	for range 5 {
		expectStatus(t, m.Check(ctx), redisstate.Current)
	}
	if err := rc.Do(ctx, rc.B().Hset().Key(space.State()).FieldValue().FieldValue("seq", "2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for range 10 { // the old snapshot's number passes the node's: still stale
		expectStatus(t, m.Check(ctx), redisstate.Stale)
	}
	if m.Gate() == nil {
		t.Fatal("gate open on a stale state")
	}
	if err := redisstate.MarkRebuilding(ctx, rc, space); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, m.Check(ctx), redisstate.Rebuilding)
	if err := redisstate.Publish(ctx, rc, space, "g2"); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, m.Check(ctx), redisstate.Current)
}

// A node starting cold compares with Postgres' record: a Redis that holds
// another generation, or an older sequence number, is stale.
func TestColdStartComparesWithTheRecord(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rec  redisstate.Mark
		want redisstate.Status
	}{
		{"same generation, behind Redis", redisstate.Mark{Gen: "test", Seq: 0}, redisstate.Current},
		{"another generation", redisstate.Mark{Gen: "newer", Seq: 0}, redisstate.Stale},
		{"Redis behind the record", redisstate.Mark{Gen: "test", Seq: 1000}, redisstate.Stale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, space := redistest.New(t)
			m := monitor(rc, space)
			m.Record = &record{m: tc.rec, ok: true}
			expectStatus(t, m.Check(ctx), tc.want)
		})
	}
}

// A node that adopts a generation (starting cold, or after a rebuild) and
// reads the record just after another node advanced the sequence number
// and recorded it is looking at a healthy Redis: current, not stale (a
// stale verdict would rebuild a healthy Redis, or stop this node for good
// under manual recovery).
func TestAdoptingWhileAnotherNodeRecordsIsCurrent(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	m := monitor(rc, space)
	m.Record = &racingRecord{rc: rc, space: space}
	expectStatus(t, m.Check(ctx), redisstate.Current)
	expectStatus(t, m.Check(ctx), redisstate.Current)
}

// racingRecord is Postgres' record while another node checks the state
// and records its sequence number between this node's check and its read
// of the record.
type racingRecord struct {
	rc    rueidis.Client
	space keys.Space
}

func (r *racingRecord) Load(ctx context.Context) (redisstate.Mark, bool, error) {
	seq, err := r.rc.Do(ctx, r.rc.B().Hincrby().Key(r.space.State()).Field("seq").Increment(1).Build()).AsInt64()
	if err != nil {
		return redisstate.Mark{}, false, err
	}
	gen, err := r.rc.Do(ctx, r.rc.B().Hget().Key(r.space.State()).Field("gen").Build()).ToString()
	return redisstate.Mark{Gen: gen, Seq: seq}, true, err
}

func (r *racingRecord) Save(context.Context, redisstate.Mark) error { return nil }

// record is a Record held in memory, for the monitor's own tests; the
// Postgres one (sync/rebuild.Generations) is tested against Postgres.
type record struct {
	mu sync.Mutex
	m  redisstate.Mark
	ok bool
}

func (r *record) Load(context.Context) (redisstate.Mark, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m, r.ok, nil
}

// Save raises the sequence of the recorded generation, as Postgres' does.
func (r *record) Save(_ context.Context, m redisstate.Mark) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok || (r.m.Gen == m.Gen && m.Seq > r.m.Seq) {
		r.m, r.ok = m, true
	}
	return nil
}

// A Redis that went back to an older snapshot stays stale for every node:
// also for one that starts after the running nodes' checks went on
// counting from the old snapshot's number, past what Postgres recorded.
func TestRollbackIsStaleForANodeStartingLater(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	rec := &record{}
	running := monitor(rc, space)
	running.Record = rec
	for range 5 {
		expectStatus(t, running.Check(ctx), redisstate.Current)
	}
	if err := rec.Save(ctx, redisstate.Mark{Gen: "test", Seq: 5}); err != nil { // its save of the last second
		t.Fatal(err)
	}
	if err := rc.Do(ctx, rc.B().Hset().Key(space.State()).FieldValue().FieldValue("seq", "2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		expectStatus(t, running.Check(ctx), redisstate.Stale)
	}
	starting := monitor(rc, space)
	starting.Record = rec
	expectStatus(t, starting.Check(ctx), redisstate.Stale)
}

// Durability comes from the server's persistence settings.
func TestDurabilityFollowsPersistenceSettings(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, redisstate.LosesEverything},
		{[]string{"--appendonly", "yes", "--appendfsync", "everysec"}, redisstate.LosesSecond},
		{[]string{"--appendonly", "yes", "--appendfsync", "always"}, redisstate.LosesNothing},
		{[]string{"--appendonly", "yes", "--appendfsync", "no"}, redisstate.LosesEverything},
	} {
		srv := redistest.StartServer(t, tc.args...)
		d, err := redisstate.ReadDurability(ctx, srv.Client(t))
		if err != nil || d.Loses != tc.want {
			t.Errorf("%v: %+v, %v; want %s", tc.args, d, err, tc.want)
		}
	}
}

// A Redis that does not answer stops sales at once; one that answers
// again resumes them by itself when its state survived (AOF).
func TestUnreachableAndBack(t *testing.T) {
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	rc := srv.Client(t)
	ctx := context.Background()
	space := keys.Space{Prefix: "t:"}
	if err := redisstate.Publish(ctx, rc, space, "old"); err != nil {
		t.Fatal(err)
	}
	m := monitor(rc, space)
	m.Timeout = 200 * time.Millisecond
	expectStatus(t, m.Check(ctx), redisstate.Current)

	srv.Pause()
	expectStatus(t, m.Check(ctx), redisstate.Unreachable)
	if e := m.Gate(); e == nil || e.Status != 503 {
		t.Fatalf("gate while Redis hangs: %v", e)
	}
	srv.Resume()
	srv.Kill()
	expectStatus(t, m.Check(ctx), redisstate.Unreachable)
	srv.Start() // from its AOF
	deadline := time.Now().Add(10 * time.Second)
	for m.Check(ctx).Status != redisstate.Current {
		if time.Now().After(deadline) {
			t.Fatalf("not current 10s after Redis came back: %+v", m.View())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m.View().Durability.Loses != redisstate.LosesNothing {
		t.Fatalf("durability after the restart: %+v", m.View().Durability)
	}
}

// A node whose state turns current loads that state's catalog before its
// gate opens: no request gets through to an empty catalog (a node that
// started while Redis had lost its state) or an older one, where valid
// credentials would be a 401.
func TestCatalogLoadsBeforeTheGateOpens(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	m := monitor(rc, space)
	var openAtLoad []bool
	m.OnCurrent = func(context.Context, int64) error {
		openAtLoad = append(openAtLoad, m.Gate() == nil)
		return nil
	}
	redistest.Flush(t, rc, space)
	expectStatus(t, m.Check(ctx), redisstate.Lost)
	if err := redisstate.Publish(ctx, rc, space, "g2"); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, m.Check(ctx), redisstate.Current)
	if len(openAtLoad) != 1 || openAtLoad[0] {
		t.Fatalf("gate open when the catalog loaded: %v, want [false]", openAtLoad)
	}
}

// A marker that could not be read (the check timed out halfway through
// its replies, or one node of a cluster is down) is not a lost marker: the
// node stops as for an unreachable Redis and resumes at the next check
// that reads them all, without latching a loss that would rebuild a
// healthy Redis (or, under manual recovery, stop the node for good).
func TestUnreadableMarkerIsNotALoss(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	flaky := &failingMarker{Client: rc}
	m := monitor(flaky, space)
	var asked atomic.Value
	m.Recover = func(_ context.Context, bad string) error { asked.Store(bad); return nil }
	expectStatus(t, m.Check(ctx), redisstate.Current)
	flaky.fail.Store(true)
	expectStatus(t, m.Check(ctx), redisstate.Unreachable)
	flaky.fail.Store(false)
	expectStatus(t, m.Check(ctx), redisstate.Current)
	if v := asked.Load(); v != nil {
		t.Fatalf("recovery asked for generation %q of a healthy Redis", v)
	}
}

// failingMarker is a client whose checks, while fail is set, get partition
// 17's marker back as an error that is not Redis' answer.
type failingMarker struct {
	rueidis.Client
	fail atomic.Bool
}

func (c *failingMarker) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	res := c.Client.DoMulti(ctx, cmds...)
	if c.fail.Load() && len(res) == 1+keys.Partitions {
		res[1+17] = rueidis.NewErrorResult(context.DeadlineExceeded)
	}
	return res
}

// Before the server's settings were ever read (Redis unreachable from the
// start), every reader of the view sees the level "unknown", never none.
func TestDurabilityIsUnknownUntilRead(t *testing.T) {
	srv := redistest.StartServer(t)
	rc := srv.Client(t)
	m := monitor(rc, keys.Space{Prefix: "t:"})
	m.Timeout = 200 * time.Millisecond
	if d := m.View().Durability.Loses; d != redisstate.LosesUnknown {
		t.Fatalf("durability before any check: %q", d)
	}
	srv.Kill()
	v := m.Check(context.Background())
	expectStatus(t, v, redisstate.Unreachable)
	if v.Durability.Loses != redisstate.LosesUnknown {
		t.Fatalf("durability of a Redis never reached: %q, want unknown", v.Durability.Loses)
	}
}

// A check never waits on its catalog refresh (OnCurrent) past its own
// timeout: Run's context has no deadline, and a Redis that hung inside
// the refresh held the check, and the view said current for good.
func TestCheckBoundsItsCatalogRefresh(t *testing.T) {
	rc, space := redistest.New(t)
	m := monitor(rc, space)
	m.Timeout = 200 * time.Millisecond
	m.OnCurrent = func(ctx context.Context, _ int64) error {
		<-ctx.Done() // a refresh whose Redis hangs
		return ctx.Err()
	}
	done := make(chan redisstate.View, 1)
	go func() { done <- m.Check(context.Background()) }()
	select {
	case v := <-done:
		expectStatus(t, v, redisstate.Current)
	case <-time.After(5 * time.Second):
		t.Fatal("a check waited on its catalog refresh past its timeout")
	}
}

// A first start on an empty Redis, with nothing recorded of an earlier
// generation (Postgres records none, there is no Postgres, or the Redis is
// an embedded one), is a new Redis to initialise: New, logged at info as
// such, never as a loss. With a generation recorded the same empty Redis
// lost its state, and says so at warn.
func TestFirstStartOnAnEmptyRedisIsNotALoss(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		record redisstate.Record
		fixed  *redisstate.Durability
		isNew  bool
		want   string
	}{
		{"nothing recorded", &record{}, nil, true, `level=INFO msg="initialising a new Redis`},
		{"no Postgres", nil, nil, true, `level=INFO msg="initialising a new Redis`},
		{"embedded, a generation recorded", &record{m: redisstate.Mark{Gen: "old"}, ok: true},
			&redisstate.Durability{Loses: redisstate.LosesEverything}, true, `level=INFO msg="initialising a new Redis`},
		{"a generation recorded", &record{m: redisstate.Mark{Gen: "old"}, ok: true}, nil, false,
			`level=WARN msg="redis state is not current: sales stop" status=lost reason="Redis holds no generation marker: it lost its state"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, space := redistest.New(t)
			redistest.Flush(t, rc, space)
			// Check logs from its caller's goroutine alone (its
			// background saves log at debug only).
			var log strings.Builder
			m := &redisstate.Monitor{Redis: rc, Space: space, Record: tc.record, FixedDurability: tc.fixed,
				Logger: slog.New(slog.NewTextHandler(&log, nil))}
			v := m.Check(ctx)
			expectStatus(t, v, redisstate.Lost)
			if v.New != tc.isNew || !strings.Contains(log.String(), tc.want) {
				t.Fatalf("new %v, log:\n%s\nwant new %v, a line with %s", v.New, log.String(), tc.isNew, tc.want)
			}
			if tc.isNew && strings.Contains(log.String(), "lost its state") {
				t.Fatalf("a first start logged as a loss:\n%s", log.String())
			}
			// Once this node has seen the state, an empty Redis is a
			// loss whatever is recorded.
			if err := redisstate.Publish(ctx, rc, space, "old"); err != nil {
				t.Fatal(err)
			}
			expectStatus(t, m.Check(ctx), redisstate.Current)
			// the line that says sales run names what was before: a first
			// start's Redis was new, not lost
			was := "was=lost"
			if tc.isNew {
				was = "was=new"
			}
			if !strings.Contains(log.String(), `msg="redis state is current: sales run"`) || !strings.Contains(log.String(), was) {
				t.Fatalf("log:\n%s\nwant the sales-run line with %s", log.String(), was)
			}
			redistest.Flush(t, rc, space)
			if v := m.Check(ctx); v.Status != redisstate.Lost || v.New {
				t.Fatalf("a Redis emptied under a running node: %+v, want lost, not new", v)
			}
		})
	}
}
