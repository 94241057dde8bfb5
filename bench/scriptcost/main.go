// Command scriptcost measures what a sale's scripts cost Redis, without
// HTTP, ticketd's handlers or a load generator in the way. It runs a
// partner pair, reserve (with its idempotency claim) and then confirm
// through orders.Service, and then a storefront sale step by step through
// registrations.Service (storefront.go: register, checkout session,
// payment, read), each pipelined from many goroutines as ticketd's API
// nodes send them, and reads the Redis server's CPU from /proc around each
// phase.
//
// The bench's flash scenario gives the whole pair's Redis CPU on a busy
// machine, within about 10% from run to run; this gives each script's alone
// within about a microsecond on a quiet machine, which is what a change to
// one script needs. On a noisy one count instructions instead: run the
// Redis under callgrind and dump its counts after each phase with -after
// (docs/decisions.md, One sale core, has the recipe).
//
//	go run ./bench/scriptcost                 # starts its own redis-server
//	go run ./bench/scriptcost -redis-url redis://127.0.0.1:16500
//
// A Redis given by URL must run on this machine (its process_id is read
// from INFO); its other clients' CPU counts too, so give it a quiet one.
// Every key is under its own prefix and deleted at the end.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
)

func main() {
	url := flag.String("redis-url", "", "a Redis on this machine to measure (default: start a redis-server of its own, without persistence)")
	n := flag.Int("n", 40000, "orders reserved and then confirmed, and storefront registrations made and paid")
	c := flag.Int("concurrency", 64, "goroutines sending at once (rueidis pipelines what they send)")
	flag.StringVar(&afterPhase, "after", "", "a shell command run once the libraries are loaded and the event set up ($1 setup), and after each phase with its name as $1 (callgrind_control --dump counts Redis' instructions per phase)")
	flag.Parse()
	if err := run(*url, *n, *c); err != nil {
		fmt.Fprintln(os.Stderr, "scriptcost:", err)
		os.Exit(1)
	}
}

func run(url string, n, c int) error {
	ctx := context.Background()
	if url == "" {
		dir, err := os.MkdirTemp("", "scriptcost-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		r, err := procs.StartRedis(ctx, "", filepath.Join(dir, "redis.log"), "--save", "", "--appendonly", "no")
		if err != nil {
			return err
		}
		defer func() { _ = r.Stop(5 * time.Second) }()
		url = r.URL()
	}
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return err
	}
	opt.DisableCache = true
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return err
	}
	defer rc.Close()
	res, err := measure(ctx, rc, n, c)
	if err != nil {
		return err
	}
	fmt.Printf("Redis CPU per call, %d orders, %d goroutines (%s):\n", res.Orders, c, url)
	fmt.Printf("  reserve (order_reserve and the idempotency SET, pipelined)  %6.2f us\n", res.ReserveUS)
	fmt.Printf("  confirm (order_confirm)                                     %6.2f us\n", res.ConfirmUS)
	fmt.Printf("  the pair                                                    %6.2f us\n", res.ReserveUS+res.ConfirmUS)
	res.Storefront.print()
	return nil
}

// result is what measure found: Redis CPU (us) per reserve and per
// confirm, and per step of a storefront sale.
type result struct {
	Orders               int
	ReserveUS, ConfirmUS float64
	Storefront           storefrontResult
}

// measure sells n GA orders of one event, each reserved and then confirmed
// as the bench's flash scenario does, c at a time, and divides the Redis
// server's CPU over each phase by n. Every order must be paid: anything
// else is an error, not a figure.
func measure(ctx context.Context, rc rueidis.Client, n, c int) (result, error) {
	pid, err := serverPID(ctx, rc)
	if err != nil {
		return result{}, err
	}
	tag := make([]byte, 6)
	_, _ = rand.Read(tag)
	space := keys.Space{Prefix: "scriptcost:" + hex.EncodeToString(tag) + ":"}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := redismem.DeletePrefix(ctx, rc, space.Prefix); err != nil {
			fmt.Fprintln(os.Stderr, "scriptcost: clean up:", err)
		}
	}()
	s := &orders.Service{Redis: rc, Space: space, OrderTTL: 30 * time.Minute, IDKey: tag}
	const ev, ch = "ev_scriptcost", "ch_scriptcost"
	// The claims of one GA ticket sold by a channel, none of them ever short.
	claims := map[string]int64{capacity.Event: 1, capacity.TicketField("tk_ga"): 1, capacity.ChannelField(ch): 1}
	for event, cl := range map[string]map[string]int64{ev: claims, storefrontEvent: storefrontClaims} {
		if err := onSale(ctx, rc, space, event, cl); err != nil {
			return result{}, err
		}
	}
	// Every library loaded before the first phase, so that no phase counts
	// a load (-after's counts start here).
	if err := eval.Install(ctx, rc); err != nil {
		return result{}, err
	}
	if err := after("setup"); err != nil {
		return result{}, err
	}
	// The record a flash buyer of the bench makes (bench/scenario/flash.go).
	rec := orders.Record{TenantID: "t_scriptcost", ChannelID: ch, Source: orders.SourceChannel,
		BuyerName: "Bench Buyer", BuyerEmail: "buyer@bench.example.com", Currency: "USD", Subtotal: 2500, Fee: 150, Total: 2650,
		Lines:   []orders.Line{{Kind: orders.LineTicket, RefID: "tk_ga", Quantity: 1, UnitPrice: 2500, Amount: 2500}},
		Tickets: []orders.Ticket{{Label: "General", Kind: orders.LineTicket, RefID: "tk_ga"}}}
	ids := make([]string, n)
	reserve := func(i int) error {
		rec := rec
		rec.Tickets = slices.Clone(rec.Tickets) // reserve numbers each request's own
		r, err := s.Reserve(ctx, orders.ReserveRequest{EventID: ev, Caller: "ch:" + ch, ChannelID: ch,
			IdempotencyKey: ch + "-" + strconv.Itoa(i), Fingerprint: "45a36956f3fdc7a1420a8a213a1cc4be", Total: 2650,
			Claims: claims, Record: rec})
		ids[i] = r.OrderID
		return err
	}
	confirm := func(i int) error {
		_, err := s.Confirm(ctx, orders.ConfirmRequest{ChannelID: ch, OrderID: ids[i], Amount: 2650, Reference: "scriptcost-" + strconv.Itoa(i)})
		return err
	}
	res := result{Orders: n}
	if res.ReserveUS, err = phase("reserve", pid, n, c, reserve); err != nil {
		return result{}, fmt.Errorf("reserve: %w", err)
	}
	if res.ConfirmUS, err = phase("confirm", pid, n, c, confirm); err != nil {
		return result{}, fmt.Errorf("confirm: %w", err)
	}
	paid, err := rc.Do(ctx, rc.B().Hget().Key(space.Sold(ev)).Field("paid").Build()).AsInt64()
	if err != nil || paid != int64(n) {
		return result{}, fmt.Errorf("the event's paid units are %d (%v), want %d", paid, err, n)
	}
	if res.Storefront, err = measureStorefront(ctx, rc, space, pid, n, c); err != nil {
		return result{}, fmt.Errorf("storefront: %w", err)
	}
	return res, nil
}

// afterPhase is the -after command, "" for none.
var afterPhase string

// after runs the -after command, if any, with name as $1.
func after(name string) error {
	if afterPhase == "" {
		return nil
	}
	if out, err := exec.Command("sh", "-c", afterPhase, "sh", name).CombinedOutput(); err != nil {
		return fmt.Errorf("-after %q: %w: %s", afterPhase, err, out)
	}
	return nil
}

// onSale puts event ev on sale in space: a capacity no sale here reaches
// for each of the claims' fields, and its partition's marker.
func onSale(ctx context.Context, rc rueidis.Client, space keys.Space, ev string, claims map[string]int64) error {
	caps := rc.B().Hset().Key(space.Caps(ev)).FieldValue()
	for f := range claims {
		caps = caps.FieldValue(f, "1000000000")
	}
	for _, r := range rc.DoMulti(ctx, caps.Build(), rc.B().Set().Key(space.Live(keys.Partition(ev))).Value("scriptcost").Build()) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// phase runs f(0) … f(n-1) from c goroutines and returns the Redis
// server's CPU (us) over it divided by n; the first error stops it. Then
// it runs the -after command, if any, with the phase's name.
func phase(name string, pid, n, c int, f func(i int) error) (float64, error) {
	m := cpuuse.New(cpuuse.Process("redis", pid))
	start := time.Now()
	m.Begin()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for failed.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	m.End()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		return 0, *err
	}
	if err := after(name); err != nil {
		return 0, err
	}
	shares := m.Shares()
	if len(shares) == 0 {
		return 0, errors.New("no CPU reading (/proc is Linux only)")
	}
	return shares[0].Cores * elapsed.Seconds() * 1e6 / float64(n), nil
}

// serverPID is the Redis server's process id, which must be one of this
// machine's.
func serverPID(ctx context.Context, rc rueidis.Client) (int, error) {
	info, err := rc.Do(ctx, rc.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("INFO process_id %q", v)
			}
			if _, err := os.Stat("/proc/" + v + "/stat"); err != nil {
				return 0, fmt.Errorf("the Redis server (pid %d) is not a process of this machine: %w", pid, err)
			}
			return pid, nil
		}
	}
	return 0, errors.New("INFO server names no process_id")
}
