package scenario

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/handlers/servertest"
)

// ticketd starts the whole ticketd stack in process (real Redis and
// Postgres, its own key space and database) with the sync worker running,
// and returns the environment a scenario runs in.
func ticketd(t *testing.T) (*servertest.Server, *Env) {
	t.Helper()
	return ticketdWith(t, servertest.Options{})
}

// storefrontTicketd is ticketd as the bench starts it for the storefront
// scenarios: X-Forwarded-For believed from loopback, the card webhook
// secret known to the bench.
func storefrontTicketd(t *testing.T) (*servertest.Server, *Env) {
	t.Helper()
	s, env := ticketdWith(t, servertest.Options{Trusted: "127.0.0.1/32,::1/128"})
	env.CardWebhookSecret = servertest.CardWebhookSecret
	return s, env
}

func ticketdWith(t *testing.T, opt servertest.Options) (*servertest.Server, *Env) {
	t.Helper()
	s := servertest.Start(t, opt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Worker.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done }) // before the stack's own clean-up
	env := &Env{
		API: &api.Client{Base: s.URL, AdminToken: servertest.AdminToken}, Addr: strings.TrimPrefix(s.URL, "http://"),
		Run: "t" + rand.Text()[:10], Allow: []string{"127.0.0.1/32", "::1/128"},
		Record: integrity.Postgres{Pool: s.Pool}, Redis: s.Redis, KeyPrefix: s.Space.Prefix, PrefixKnown: true,
		DrainTimeout: 30 * time.Second,
	}
	return s, env
}

func failedChecks(cs integrity.Checks) []string {
	var out []string
	for _, c := range cs {
		if c.Status == integrity.Fail {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

// TestFlashSellsOutExactlyAgainstTicketd runs the flash scenario with 400
// buyers for 150 tickets against a real ticketd (a couple of seconds): it
// sells out, and every integrity check passes, the Postgres record included.
func TestFlashSellsOutExactlyAgainstTicketd(t *testing.T) {
	t.Parallel()
	_, env := ticketd(t)
	env.CPU = cpuuse.New(cpuuse.Self("bench and ticketd"))
	out, err := Flash.Run(context.Background(), env, Options{Duration: time.Minute, Arrivals: 400, Workers: 16, Capacity: 150})
	if err != nil {
		t.Fatal(err)
	}
	// ticketd runs in this process: the timed run cost it CPU, and the
	// meter saw it (only over the run: it is read at the load's ends).
	if cpuuse.Supported() && (len(out.CPU) != 3 || out.CPU[0].Cores <= 0 || out.CPU[2].Process != cpuuse.Machine) {
		t.Errorf("CPU over the run: %+v, want this process busy, the interrupts and the machine", out.CPU)
	}
	if f := failedChecks(out.Checks); len(f) > 0 || !out.Checks.OK() {
		t.Fatalf("integrity failed:\n%s", strings.Join(f, "\n"))
	}
	res := out.Result
	if res.Units != 150 {
		t.Fatalf("%d pairs paid, want exactly the capacity 150", res.Units)
	}
	if res.Rejections["EVENT_SOLD_OUT"]+res.Rejections["TICKET_SOLD_OUT"] == 0 {
		t.Fatalf("no sold-out answers after the sell-out: rejections %v", res.Rejections)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors %v", res.Errors)
	}
	for _, c := range out.Checks {
		if strings.Contains(c.Name, "record holds") && c.Status != integrity.Pass {
			t.Fatalf("the Postgres record was not checked: %+v", c)
		}
	}
}

// TestIntegrityCatchesATamperedSale sells against ticketd, then makes the
// numbers disagree behind the buyers' backs (a ticket sold that nobody was
// told about, a paid order missing from Postgres): the checks must fail.
func TestIntegrityCatchesATamperedSale(t *testing.T) {
	t.Parallel()
	s, env := ticketd(t)
	f := &flash{capacity: 1000}
	ctx := context.Background()
	out, err := runParts(ctx, env, "flash", "pairs", "pair", Options{Duration: time.Minute, Arrivals: 50, Workers: 8}, []weighted{{p: f, weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Checks.OK() || out.Result.Units == 0 {
		t.Fatalf("the honest run failed: %v", failedChecks(out.Checks))
	}
	// An extra sale in Redis, as an oversell would leave it.
	if err := s.Redis.Do(ctx, s.Redis.B().Hincrby().Key(s.Space.Sold(f.event)).Field("t:"+f.ticket).Increment(1).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// A paid order lost on the way to Postgres (its lines and tickets go
	// with its row).
	if _, err := s.Pool.Exec(ctx, `WITH o AS (SELECT id FROM orders WHERE event_id = $1 LIMIT 1),
		x AS (DELETE FROM outbox WHERE order_id IN (SELECT id FROM o))
		DELETE FROM orders WHERE id IN (SELECT id FROM o)`, f.event); err != nil {
		t.Fatal(err)
	}
	env.DrainTimeout = time.Second
	checks, _ := f.check(ctx, env)
	failed := strings.Join(failedChecks(checks), "\n")
	for _, want := range []string{"sold counts (as the server reports them) == tickets confirmed to buyers", "record holds exactly the paid orders"} {
		if !strings.Contains(failed, want) {
			t.Errorf("check %q did not fail; failed:\n%s", want, failed)
		}
	}
}

// TestSeatRushSellsNoSeatTwice races 200 buyers for 40 seats; the seat
// checks must pass against ticketd and Postgres.
func TestSeatRushSellsNoSeatTwice(t *testing.T) {
	t.Parallel()
	_, env := ticketd(t)
	p := &seatRush{rows: 4, seats: 10}
	out, err := runParts(context.Background(), env, "seat-rush", "buyers", "buyer", Options{Duration: time.Minute, Arrivals: 200, Workers: 16},
		[]weighted{{p: p, weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if f := failedChecks(out.Checks); len(f) > 0 {
		t.Fatalf("integrity failed:\n%s", strings.Join(f, "\n"))
	}
	if out.Result.Units == 0 || out.Result.Rejections["SEAT_CONFLICT"] == 0 {
		t.Fatalf("no race: %d buyers paid, rejections %v, errors %v", out.Result.Units, out.Result.Rejections, out.Result.Errors)
	}
	seatChecks := 0
	for _, c := range out.Checks {
		if strings.Contains(c.Name, "seat") && c.Status == integrity.Pass {
			seatChecks++
		}
	}
	if seatChecks < 3 {
		t.Fatalf("seat checks not all made: %+v", out.Checks)
	}
}

// TestSelloutReportsTheRateOfTheSale sells 100 tickets to 300 buyers
// arriving at 600 a second against ticketd: it sells out exactly, and its
// sale rate is the tickets over the sell-out time, faster than over the
// whole run, whose tail only answers sold out. The progress line carries
// the label it was given.
func TestSelloutReportsTheRateOfTheSale(t *testing.T) {
	t.Parallel()
	_, env := ticketd(t)
	var progress bytes.Buffer
	out, err := Sellout.Run(context.Background(), env, Options{Rate: 600, Arrivals: 300, Capacity: 100, Workers: 64,
		Progress: &load.Progress{W: &progress, Every: 1}, Label: "sellout-small"})
	if err != nil {
		t.Fatal(err)
	}
	if f := failedChecks(out.Checks); len(f) > 0 {
		t.Fatalf("integrity failed:\n%s", strings.Join(f, "\n"))
	}
	sold, _ := out.Figure(FigSold)
	took, ok := out.Figure(FigSelloutTime)
	rate, rateOK := out.Figure(FigSaleRate)
	if sold != 100 || !ok || !rateOK {
		t.Fatalf("sold %.0f, sell-out time %v, sale rate %v: want 100 sold and both reported", sold, ok, rateOK)
	}
	if diff := rate - sold/took; diff > 0.01 || diff < -0.01 {
		t.Fatalf("sale rate %.2f, want tickets / sell-out time = %.2f", rate, sold/took)
	}
	if whole := out.Result.UnitsPerSec(); rate <= whole {
		t.Fatalf("sale rate %.1f/s not above the whole run's %.1f/s", rate, whole)
	}
	if !strings.Contains(progress.String(), "sellout-small") {
		t.Fatalf("progress lines do not name the run: %q", progress.String())
	}
}

// TestAlternateMeasuresTwoDeploymentsInTurns runs the flash loop against
// two ticketd stacks in turns (A B B A): each side's slices are merged into
// one result whose sale checks pass, and the progress lines show the turns.
func TestAlternateMeasuresTwoDeploymentsInTurns(t *testing.T) {
	t.Parallel()
	_, a := ticketd(t)
	_, b := ticketd(t)
	var progress bytes.Buffer
	outs, err := alternate(context.Background(), [2]*Env{a, b}, [2]string{"side-a", "side-b"},
		Options{Duration: 800 * time.Millisecond, Workers: 8, Progress: &load.Progress{W: &progress, Every: 1}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, out := range outs {
		if f := failedChecks(out.Checks); len(f) > 0 || !out.Checks.OK() {
			t.Fatalf("side %d: integrity failed:\n%s", i, strings.Join(f, "\n"))
		}
		if out.Result.Units == 0 || out.Result.Elapsed < 800*time.Millisecond {
			t.Fatalf("side %d: %d pairs in %s: want both slices of 400ms merged", i, out.Result.Units, out.Result.Elapsed)
		}
	}
	var turns []string
	for _, l := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		name := strings.Fields(l)[0]
		if len(turns) == 0 || turns[len(turns)-1] != name {
			turns = append(turns, name)
		}
	}
	if strings.Join(turns, " ") != "side-a side-b side-a" { // A B B A: the two B slices run back to back
		t.Fatalf("turns %v, want side-a, side-b (twice), side-a", turns)
	}
}

// TestStorefrontFlashSellsOutExactlyAgainstTicketd runs storefront-flash
// with 200 buyers for 80 tickets against a real ticketd: it sells out,
// every registration is confirmed by the signed webhook (every tenth
// delivered twice), and every check passes, Redis and Postgres included.
func TestStorefrontFlashSellsOutExactlyAgainstTicketd(t *testing.T) {
	t.Parallel()
	_, env := storefrontTicketd(t)
	out, err := StorefrontFlash.Run(context.Background(), env, Options{Duration: time.Minute, Arrivals: 200, Workers: 16, Capacity: 80})
	if err != nil {
		t.Fatal(err)
	}
	if f := failedChecks(out.Checks); len(f) > 0 || !out.Checks.OK() {
		t.Fatalf("integrity failed:\n%s", strings.Join(f, "\n"))
	}
	res := out.Result
	if res.Units != 80 || len(res.Errors) > 0 || res.Rejections["EVENT_SOLD_OUT"]+res.Rejections["TICKET_SOLD_OUT"] != 120 {
		t.Fatalf("%d confirmed (want 80), errors %v, rejections %v", res.Units, res.Errors, res.Rejections)
	}
	if n := res.Op("webhook_redelivered").Count; n == 0 {
		t.Fatal("no webhook was delivered twice")
	}
	checked := 0
	for _, c := range out.Checks {
		if c.Status == integrity.Pass {
			checked++
		}
	}
	if checked != len(out.Checks) {
		t.Fatalf("not every check was made: %+v", out.Checks)
	}
}

// TestStorefrontSeatsBooksNoSeatTwiceAgainstTicketd races 150 buyers for
// 40 seats through storefront holds: some pay, the others meet
// SEAT_CONFLICT, and every seat check passes against Redis and Postgres.
func TestStorefrontSeatsBooksNoSeatTwiceAgainstTicketd(t *testing.T) {
	t.Parallel()
	_, env := storefrontTicketd(t)
	p := &storefrontSeats{rows: 4, seats: 10}
	out, err := runParts(context.Background(), env, "storefront-seats", "buyers", "buyer", Options{Duration: time.Minute, Arrivals: 150, Workers: 16},
		[]weighted{{p: p, weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if f := failedChecks(out.Checks); len(f) > 0 {
		t.Fatalf("integrity failed:\n%s", strings.Join(f, "\n"))
	}
	res := out.Result
	if res.Units == 0 || len(res.Errors) > 0 || res.Rejections["SEAT_CONFLICT"] == 0 {
		t.Fatalf("%d buyers confirmed, errors %v, rejections %v", res.Units, res.Errors, res.Rejections)
	}
	for _, c := range out.Checks {
		if c.Status != integrity.Pass {
			t.Fatalf("a check was not made: %+v", c)
		}
	}
}

// TestStorefrontIntegrityCatchesASeatBookedTwice sells seats, then books
// one of them to another order behind the buyers' backs, and loses a
// buyer e-mail: the checks must fail.
func TestStorefrontIntegrityCatchesASeatBookedTwice(t *testing.T) {
	t.Parallel()
	s, env := storefrontTicketd(t)
	p := &storefrontSeats{rows: 2, seats: 10}
	ctx := context.Background()
	out, err := runParts(ctx, env, "storefront-seats", "buyers", "buyer", Options{Duration: time.Minute, Arrivals: 20, Workers: 4},
		[]weighted{{p: p, weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Checks.OK() || out.Result.Units == 0 {
		t.Fatalf("the honest run failed: %v", failedChecks(out.Checks))
	}
	booked, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Booked(p.event)).Build()).AsStrMap()
	if err != nil || len(booked) == 0 {
		t.Fatalf("booked %v: %v", booked, err)
	}
	for label := range booked {
		if err := s.Redis.Do(ctx, s.Redis.B().Hset().Key(s.Space.Booked(p.event)).FieldValue().FieldValue(label, "oxyz."+p.event).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		break
	}
	if _, err := s.Pool.Exec(ctx, `DELETE FROM outbox WHERE id = (SELECT min(x.id) FROM outbox x JOIN orders o ON o.id = x.order_id
		WHERE o.event_id = $1 AND x.kind = 'buyer_tickets')`, p.event); err != nil {
		t.Fatal(err)
	}
	checks, _ := p.check(ctx, env)
	failed := strings.Join(failedChecks(checks), "\n")
	for _, want := range []string{"belongs to exactly one confirmed registration", "in the order Redis booked it to", "exactly one buyer e-mail"} {
		if !strings.Contains(failed, want) {
			t.Errorf("check %q did not fail; failed:\n%s", want, failed)
		}
	}
}

// TestQueueSelloutSellsThroughTheRoomAgainstTicketd runs queue-sellout
// with 150 arrivals for 30 tickets against a real ticketd, its clock
// shortened (a 1 s pre-queue, polls every 200 ms, nobody vanishing, every
// buyer paying within 100 ms) so that it takes a few seconds: the room
// admits exactly the tickets, every replayed pass and every bot is
// refused, a second join finds the same place, the admission order keeps
// the committed one (the room's audit's order and the passes' times), and
// every check passes, Redis and Postgres included.
func TestQueueSelloutSellsThroughTheRoomAgainstTicketd(t *testing.T) {
	t.Parallel()
	_, env := storefrontTicketd(t)
	ctx := context.Background()
	o := Options{Arrivals: 150, Capacity: 30, Duration: time.Second, Rate: 300}
	sh := qsShape{passTTL: 10 * time.Second, poll: 200 * time.Millisecond, spread: 100 * time.Millisecond,
		gap: 300 * time.Millisecond, lead: 300 * time.Millisecond, slowPct: 25,
		fast: [2]time.Duration{0, 50 * time.Millisecond}, slow: [2]time.Duration{50 * time.Millisecond, 100 * time.Millisecond}}
	out, err := runQueueSellout(ctx, env, "queue-sellout", o, newQueueSelloutPart(ctx, o, sh))
	if err != nil {
		t.Fatal(err)
	}
	if f := failedChecks(out.Checks); len(f) > 0 || !out.Checks.OK() {
		t.Fatalf("integrity failed:\n%s", strings.Join(f, "\n"))
	}
	for _, c := range out.Checks {
		if c.Status != integrity.Pass {
			t.Errorf("not every check was made: %+v", c)
		}
	}
	res := out.Result
	if res.Units != 30 || len(res.Errors) > 0 {
		t.Fatalf("%d buyers paid (want 30), errors %v, rejections %v", res.Units, res.Errors, res.Rejections)
	}
	if res.Rejections["QUEUE_PASS_USED"] != 30 || res.Rejections["QUEUE_REQUIRED"] != 1 {
		t.Fatalf("rejections %v, want 30 replayed passes refused QUEUE_PASS_USED and 1 bot QUEUE_REQUIRED", res.Rejections)
	}
	for name, want := range map[string]float64{FigSold: 30, FigQueueAdmitted: 30, FigQueueDiscordant: 0, FigQueueSpearmanUntied: 1,
		FigQueueSpearman: 1, FigQueueAuditAgainstTimes: 0} {
		if got, ok := out.Figure(name); !ok || got != want {
			t.Errorf("%s: %v (reported %v), want %v", name, got, ok, want)
		}
	}
	// half the waiters long-poll, half poll: both hear the sell-out
	for _, fig := range []string{FigQueueToldLongPolled, FigQueueToldPolled} {
		if n, _ := out.Figure(fig); n == 0 {
			t.Errorf("%s: none", fig)
		}
	}
	for _, fig := range []string{FigQueueSoldOutP99, FigQueueSoldOutMax, FigQueueToldLate} {
		if _, ok := out.Figure(fig); !ok {
			t.Errorf("no figure %q", fig)
		}
	}
}
